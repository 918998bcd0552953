import Foundation

/// A fixed number of threads that run submitted work in order of arrival: the
/// server's blocking routes run here, so a slow database answer holds one of these
/// threads and never the server thread.
final class HandlerPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var work: [@Sendable () -> Void] = []
    private var stopping = false

    init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in runLoop() }
            thread.name = "courier-http-handler-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Queues `job` for the next free thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.withLock {
            work.append(job)
            condition.signal()
        }
    }

    /// Lets the threads finish what they run and exit; queued work not yet started is dropped.
    func stop() {
        condition.withLock {
            stopping = true
            work.removeAll()
            condition.broadcast()
        }
    }

    private func runLoop() {
        while true {
            condition.lock()
            while work.isEmpty && !stopping { condition.wait() }
            if stopping {
                condition.unlock()
                return
            }
            let job = work.removeFirst()
            condition.unlock()
            job()
        }
    }
}
