import Dispatch
import Foundation

/// Turns SIGTERM and SIGINT into a graceful shutdown. A second signal while
/// shutting down is ignored: the grace period bounds the wait.
///
/// SIGPIPE is ignored too: a worker whose stderr pipe closed (`jobworker 2>&1 | tee log`,
/// then Ctrl-C kills tee) would otherwise die on its next log line, leaving its jobs to
/// wait for lease expiry. Log writes then fail quietly and the shutdown goes on.
public final class ShutdownSignals: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []

    public init(onSignal: @escaping @Sendable (Int32) -> Void) {
        signal(SIGPIPE, SIG_IGN)
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { onSignal(signalNumber) }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        sources.forEach { $0.cancel() }
    }
}
