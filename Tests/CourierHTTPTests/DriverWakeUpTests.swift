import CourierCore
import CourierTestSupport
import Foundation
import Testing
@testable import CourierHTTP

/// The driver's thread is woken once per batch of submissions and cancels, not once per
/// request. These transports wait ten minutes in `curl_multi_poll` when nothing wakes
/// them, so that the default one-second safety net cannot pick up a request or cancel
/// whose wake-up was lost. A watchdog shuts the transport down after a minute instead
/// (`stop` always wakes the driver): a lost wake-up then fails the test as cancelled
/// outcomes rather than hanging the suite.
@Suite("CurlTransport wake-ups")
struct DriverWakeUpTests {
    private static let tenMinutes: Int32 = 600_000

    /// A transport that never wakes by itself, shut down by a watchdog if `body` takes a minute.
    private func withSleepyTransport(_ body: (CurlTransport) async throws -> Void) async throws {
        let transport = try makeTransport(idleWaitMilliseconds: Self.tenMinutes)
        // The watchdog waits for the body to end (a semaphore, on a thread of its own), and
        // shuts the transport down only when a minute passes first.
        let bodyEnded = DispatchSemaphore(value: 0)
        let fired = Locked(false)
        Thread.detachNewThread {
            guard bodyEnded.wait(timeout: .now() + 60) == .timedOut else { return }
            fired.withLock { $0 = true }
            transport.shutdown()
        }
        defer {
            bodyEnded.signal()
            transport.shutdown()
        }
        try await body(transport)
        #expect(!fired.withLock { $0 }, "the watchdog shut the transport down: a wake-up was lost")
    }

    @Test func eachOfManySequentialRequestsWakesTheDriver() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        try await withSleepyTransport { transport in
            for i in 0..<50 {
                let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/s/\(i)"))
                #expect(outcome.response?.status == 200, "request \(i): \(outcome)")
            }
        }
        #expect(server.requestCount() == 50)
    }

    @Test func aBurstOfRequestsIsAllAnswered() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        try await withSleepyTransport { transport in
            for round in 0..<5 {
                let statuses = await withTaskGroup(of: Int.self) { group in
                    for i in 0..<100 {
                        group.addTask {
                            await transport.send(HTTPRequest(url: server.baseURL + "/b/\(round)/\(i)")).response?.status ?? -1
                        }
                    }
                    return await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(statuses.count == 100)
                #expect(statuses.allSatisfy { $0 == 200 }, "round \(round): \(statuses.filter { $0 != 200 })")
            }
        }
        #expect(server.requestCount() == 500)
    }

    @Test func aBurstOfCancelsIsAllAnswered() async throws {
        let server = try FaultServer(defaultBehavior: .slow(delay: .seconds(600), then: .json200))
        defer { server.stop() }
        try await withSleepyTransport { transport in
            let tasks = (0..<40).map { i in
                Task { await transport.send(HTTPRequest(url: server.baseURL + "/c/\(i)", timeout: .seconds(900))) }
            }
            #expect(await eventually { server.requestCount() == 40 })
            // Not coordination: libcurl's connect-phase timers (Happy Eyeballs fires after
            // 200 ms) would wake the driver by themselves and hide a lost wake-up. After
            // this second the driver sleeps until something wakes it.
            try await Task.sleep(for: .seconds(1))   // a measured window: the connect-phase timers run out (see above)
            for task in tasks { task.cancel() }
            var outcomes: [TransportOutcome] = []
            for task in tasks { outcomes.append(await task.value) }
            #expect(outcomes.allSatisfy { $0 == .cancelled(maybeSent: true) }, "\(outcomes)")
        }
    }
}
