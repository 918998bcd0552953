import CourierCore
import Foundation

/// Polls `condition` every `interval` until it holds or `timeout` passes, then says
/// whether it held. The timeout only keeps a broken test from hanging: it never
/// decides a test by itself. Sleeps with `Task.sleep`, so an in-process worker's
/// jobs keep the cooperative threads while a test waits.
public func eventually(timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
                       _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try condition()
}

/// The same for synchronous tests that drive other processes (no in-process worker
/// needs the cooperative pool there).
public func eventuallyBlocking(timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(50),
                               _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: interval.timeInterval)
    }
    return try condition()
}
