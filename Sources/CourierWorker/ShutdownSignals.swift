import Dispatch
import Foundation

/// Turns SIGTERM and SIGINT into a graceful shutdown. A second signal while
/// shutting down is ignored: the grace period bounds the wait.
public final class ShutdownSignals: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []

    public init(onSignal: @escaping @Sendable (Int32) -> Void) {
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
