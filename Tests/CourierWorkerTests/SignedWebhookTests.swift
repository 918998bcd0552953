import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// The receiver in Receivers/signed_receiver.py: a loopback HTTP server that verifies
/// every delivery with the official `standardwebhooks` package, run with the test
/// command's Python (`COURIER_TEST_PYTHON`).
final class SignedReceiver: @unchecked Sendable {
    let process = Process()
    let logPath: String
    let errorPath: String
    let port: Int

    init(secrets: [String]) throws {
        guard let python = ProcessInfo.processInfo.environment["COURIER_TEST_PYTHON"], !python.isEmpty else {
            throw ReceiverError(message: "COURIER_TEST_PYTHON is not set: run the suite with scripts/test.sh, which installs standardwebhooks into .venv")
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Receivers/signed_receiver.py").path
        let temporary = FileManager.default.temporaryDirectory
        logPath = temporary.appendingPathComponent("courier-receiver-\(UUID().uuidString).ndjson").path
        errorPath = temporary.appendingPathComponent("courier-receiver-\(UUID().uuidString).err").path
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, logPath] + secrets
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        try process.run()
        // The first line is the port.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let text = String(data: line, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            let stderr = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            kill(process.processIdentifier, SIGKILL)
            throw ReceiverError(message: "the signed receiver did not start: \(stderr)")
        }
        self.port = port
    }

    /// Every delivery so far, oldest first.
    func deliveries() throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: a worker in this process ignores SIGTERM, and the child inherits that.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: logPath)
        try? FileManager.default.removeItem(atPath: errorPath)
    }
}

struct ReceiverError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

@Suite(.serialized) struct SignedWebhookTests {
    static let keyA = "whsec_" + Data((0..<32).map { UInt8(($0 * 3 + 1) % 256) }).base64EncodedString()
    static let keyB = "whsec_" + Data((0..<32).map { UInt8(255 - $0) }).base64EncodedString()
    static let brokenValue = "Bearer hunter2-not-a-webhook-secret"

    @Test func aRealReceiverVerifiesEveryDeliveryAndNoSecretLeaks() async throws {
        let receiver = try SignedReceiver(secrets: [Self.keyA, Self.keyB])
        defer { receiver.stop() }
        let h = try WorkerHarness()
        let base = "http://127.0.0.1:\(receiver.port)"
        // Each secret bound to the receiver (secrets are sent only where they are bound).
        h.secretEnvironment = [
            "COURIER_SECRET_HOOKS_A": Self.keyA, "COURIER_SECRET_HOOKS_B": Self.keyB,
            "COURIER_SECRET_HOOKS_ROTATING": Self.keyA + " " + Self.keyB,
            "COURIER_SECRET_BROKEN": Self.brokenValue,
        ]
        for name in ["HOOKS_A", "HOOKS_B", "HOOKS_ROTATING", "BROKEN"] {
            h.secretEnvironment["COURIER_SECRET_\(name)_DESTINATIONS"] = base
        }
        func enqueue(_ path: String, _ configure: (inout EnqueueRequest) -> Void) throws -> Int64 {
            try TestRows(h.db).job(url: base + path) { request in
                request.body = #"{"event": "test"}"#
                configure(&request)
            }
        }
        // A destination whose jobs are signed by default.
        try h.db.query("select * from courier.destination_set(destination => 'partner-b', signing_secret => 'HOOKS_B')")
        let plain = try enqueue("/ok") { $0.signingSecret = "HOOKS_A" }
        let retried = try enqueue("/fail-1/retried") { $0.signingSecret = "HOOKS_A" }
        let unicodeBody = "Grüße aus Zürich — 世界 ✓ 🚀 \"quoted\" \\ back"
        let nonASCII = try enqueue("/unicode") { $0.signingSecret = "HOOKS_A"; $0.body = unicodeBody }
        let rotated = try enqueue("/rotated") { $0.signingSecret = "HOOKS_ROTATING" }
        let byDestination = try enqueue("/by-destination") { $0.destination = "partner-b" }
        let ownWins = try enqueue("/own-wins") { $0.destination = "partner-b"; $0.signingSecret = "HOOKS_A" }
        let noKey = try enqueue("/no-key") { $0.signingSecret = "HOOKS_A"; $0.idempotencyKey = .none; $0.method = "PUT" }
        let unsigned = try enqueue("/unsigned") { _ in }
        let toReplay = try enqueue("/fail-2/replayed") { $0.signingSecret = "HOOKS_A"; $0.maxAttempts = 2 }
        // Refused by this worker's configuration: handed back, and dead once the deadline
        // would pass before the next try.
        let missing = try enqueue("/missing") { $0.signingSecret = "NOT_SET_ANYWHERE"; $0.deadline = Date().addingTimeInterval(20) }
        let malformed = try enqueue("/malformed") { $0.signingSecret = "BROKEN"; $0.deadline = Date().addingTimeInterval(20) }
        let started = Date()
        try h.start()

        for id in [plain, retried, nonASCII, rotated, byDestination, ownWins, noKey, unsigned] {
            _ = try await h.waitFor(id, .succeeded)
        }
        for id in [toReplay, missing, malformed] { _ = try await h.waitFor(id, .dead) }
        let replayedID = try #require(try h.db.query("""
            select new_job_id from courier.replay_dead_letters(
                ids => (select array_agg(id) from courier.dead_letters where job_id = \(toReplay)))
            """).rows.first?.decode(0, as: Int64.self))
        _ = try await h.waitFor(replayedID, .succeeded)
        let finished = Date()
        await h.stop()

        let deliveries = try receiver.deliveries()
        func of(_ path: String) -> [[String: Any]] { deliveries.filter { $0["path"] as? String == path } }
        func verified(_ d: [String: Any]) -> [Bool] { d["verified"] as? [Bool] ?? [] }
        func header(_ d: [String: Any], _ name: String) -> String? { (d["webhook_headers"] as? [String: String])?[name] }
        func statuses(_ path: String) -> [Int] { of(path).compactMap { $0["status"] as? Int } }
        func key(_ id: Int64) throws -> String? { try h.job(id)?.idempotencyKey }

        // Signed with HOOKS_A: the first secret alone verifies, the second does not.
        for path in ["/ok", "/fail-1/retried", "/unicode", "/own-wins", "/no-key", "/fail-2/replayed"] {
            #expect(!of(path).isEmpty, "no delivery to \(path)")
            for d in of(path) { #expect(verified(d) == [true, false], "\(path): \(d)") }
        }
        #expect(statuses("/fail-1/retried") == [500, 200])
        #expect(Set(of("/fail-1/retried").map { header($0, "webhook-id") }) == [try key(retried)])
        #expect(of("/unicode").first?["body"] as? String == unicodeBody)
        // The rotated value signs with both: each secret verifies on its own.
        #expect(of("/rotated").count == 1)
        for d in of("/rotated") {
            #expect(verified(d) == [true, true])
            #expect(header(d, "webhook-signature")?.split(separator: " ").count == 2)
        }
        // The destination's default signs a job that names none; a job's own wins.
        #expect(of("/by-destination").map(verified) == [[false, true]])
        #expect(of("/own-wins").map(verified) == [[true, false]])
        // No idempotency key: webhook-id derived from the job id.
        #expect(of("/no-key").map { header($0, "webhook-id") } == ["courier-job-\(noKey)"])
        // A replayed dead letter: the same webhook-id on every delivery, before and after the replay.
        #expect(statuses("/fail-2/replayed") == [500, 500, 200])
        #expect(Set(of("/fail-2/replayed").map { header($0, "webhook-id") }) == [try key(toReplay)])
        #expect(try key(replayedID) == (try key(toReplay)))
        // Unsigned: no webhook headers at all.
        #expect(of("/unsigned").count == 1)
        #expect((of("/unsigned").first?["webhook_headers"] as? [String: String]) == [:])
        // Timestamps are the attempt's unix seconds.
        for d in deliveries where header(d, "webhook-timestamp") != nil {
            let stamp = try #require(Int64(header(d, "webhook-timestamp") ?? ""))
            #expect(stamp >= Int64(started.timeIntervalSince1970) - 1 && stamp <= Int64(finished.timeIntervalSince1970) + 1)
        }

        // A secret that is not set, or is malformed: nothing sent, handed back as a missing
        // header secret is, and dead-lettered as permanent when no worker can send it in time.
        #expect(of("/missing").isEmpty && of("/malformed").isEmpty)
        #expect(h.worker.metrics.snapshot().refusedByConfiguration >= 2)
        for (id, name) in [(missing, "NOT_SET_ANYWHERE"), (malformed, "BROKEN")] {
            let record = try #require(try h.job(id))
            #expect(record.deadReason == "permanent")
            #expect(record.errors.last?.message.contains("signing secret") == true, "\(record.errors)")
            #expect(record.errors.last?.message.contains(name) == true, "\(record.errors)")
            #expect(record.signingSecret == name && record.signingSecretFrom == .job)
        }

        // jobctl show names the secret and where it came from.
        let url = h.database.url
        func jobctl(_ arguments: [String]) throws -> String {
            let run = try SpawnedProcess.run("jobctl", ["--database-url", url] + arguments)
            #expect(run.status == 0, "jobctl \(arguments): \(run.output)")
            return run.output
        }
        #expect(try jobctl(["show", String(byDestination)]).contains("signed with:     secret HOOKS_B (the destination's default)"))
        #expect(try jobctl(["show", String(ownWins)]).contains("signed with:     secret HOOKS_A (the job's own)"))
        #expect(!(try jobctl(["show", String(unsigned)])).contains("signed with"))
        let shownJSON = try jobctl(["show", String(byDestination), "--json"])
        #expect(shownJSON.contains(#""signing_secret":"HOOKS_B""#) || shownJSON.contains(#""signing_secret" : "HOOKS_B""#))

        // Nothing leaks: no secret value, and no signature, in any output.
        var outputs = h.logLines.all
        let allJobs = [plain, retried, nonASCII, rotated, byDestination, ownWins, noKey, unsigned, toReplay, missing, malformed, replayedID]
        for id in allJobs {
            outputs.append(try jobctl(["show", String(id)]))
            outputs.append(try jobctl(["show", String(id), "--json"]))
        }
        let deadIDs = try h.db.query("select id from courier.dead_letters order by id").rows.map { try $0.decode(0, as: Int64.self) }
        #expect(deadIDs.count == 3)
        outputs.append(try jobctl(["dead", "list"]))
        outputs.append(try jobctl(["dead", "list", "--json"]))
        for id in deadIDs {
            outputs.append(try jobctl(["dead", "show", String(id)]))
            outputs.append(try jobctl(["dead", "show", String(id), "--json"]))
        }
        outputs += try h.db.query("select errors::text from courier.dead_letters").rows.map { try $0.decode(0, as: String.self) }
        outputs += try h.db.query("select errors::text from courier.completed_jobs").rows.map { try $0.decode(0, as: String.self) }
        var forbidden = [Self.keyA, Self.keyB, String(Self.keyA.dropFirst(6)), String(Self.keyB.dropFirst(6)),
                         Self.brokenValue, "hunter2-not-a-webhook-secret"]
        for d in deliveries {
            for signature in (header(d, "webhook-signature") ?? "").split(separator: " ") {
                forbidden.append(String(signature))
                forbidden.append(String(signature.dropFirst(3)))
            }
        }
        let text = outputs.joined(separator: "\n")
        #expect(text.contains("HOOKS_A"))   // the names are shown...
        for value in forbidden where !value.isEmpty {
            #expect(!text.contains(value), "a secret value or signature appears in the output")   // ...never the values
        }
        await h.close()
    }
}

/// A half-open probe whose job cannot be signed sends nothing: that is no verdict, so the
/// breaker is not closed by it (the probe is abandoned and may run again).
@Suite(.serialized) struct UnsignableProbeTests {
    @Test func aProbeRefusedForItsSigningSecretIsNoVerdict() async throws {
        let h = try WorkerHarness()
        let destination = "http://127.0.0.1:\(h.server.port)"
        // An open breaker whose cooldown is over: the next worker may probe it.
        try h.db.query("""
            insert into courier.breakers (destination, state, open_until, cooldown_ms, generation)
            values (\(destination), 'open', now() - interval '1 second', 60000, 1)
            """)
        let id = try h.enqueue("/probe") { $0.signingSecret = "NOT_SET_ANYWHERE"; $0.deadline = Date().addingTimeInterval(20) }
        try h.start()
        let record = try await h.waitFor(id, .dead)
        #expect(record.deadReason == "permanent")
        #expect(h.server.requestCount(path: "/probe") == 0)
        let events = try h.db.query("""
            select to_state, reason from courier.breaker_events where destination = \(destination) order by id
            """).rows.map { "\(try $0.decode(0, as: String.self)):\(try $0.decode(1, as: String.self))" }
        await h.close()
        #expect(events.first?.hasPrefix("half_open") == true, "\(events)")
        #expect(events.contains("open:probe_abandoned"), "\(events)")
        #expect(!events.contains { $0.hasPrefix("closed") }, "a refused probe must not close the breaker: \(events)")
    }
}
