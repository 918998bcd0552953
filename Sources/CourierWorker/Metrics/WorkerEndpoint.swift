import CourierHTTPServer
import Foundation

/// The worker's HTTP endpoint (`--metrics-addr`): an ``HTTPServer`` with the worker's
/// routes, and the sampler that reads fleet-wide figures from the database for it.
public final class WorkerEndpoint: Sendable {
    public let server: HTTPServer
    public let sampler: MetricsServerSampler

    /// The port actually bound.
    public var port: Int { server.port }

    private init(server: HTTPServer, sampler: MetricsServerSampler) {
        self.server = server
        self.sampler = sampler
    }

    /// Binds `address` and serves a worker's endpoints, sampling the database every
    /// `sampleInterval` on a connection of its own:
    /// - `GET /metrics`: Prometheus text format 0.0.4;
    /// - `GET /healthz`: 200 `ok` while the process runs (a probe route);
    /// - `GET /readyz`: 200 when the database is reachable, has every migration the
    ///   worker needs, and the worker is not shutting down, else 503 (a probe route).
    ///
    /// Other paths get 404, other methods than GET and HEAD 405. Throws (and starts
    /// nothing) when the address cannot be bound.
    public static func start(for worker: Worker, address: HTTPServerAddress, logger: Logger,
                             limits: HTTPServer.Limits = HTTPServer.Limits(),
                             sampleInterval: Duration = .seconds(5)) throws(HTTPServerError) -> WorkerEndpoint {
        let sampler = MetricsServerSampler(database: worker.configuration.database, interval: sampleInterval, logger: logger,
                                           servedQueues: worker.configuration.queues, workerID: worker.id)
        let server = HTTPServer(address: address, limits: limits, router: router(state: { worker.metricsState }, page: {
            PrometheusText.workerPage(metrics: worker.metrics.snapshot(), state: worker.metricsState, sampling: sampler.status)
                + PrometheusText.trafficPage(worker.traffic.destinations)
        }))
        try server.start()
        sampler.start()
        server.onStop { sampler.stop() }
        return WorkerEndpoint(server: server, sampler: sampler)
    }

    /// Stops the server and the sampler.
    public func stop() { server.stop() }

    /// The worker's routes, answering from `state`; `page` renders `/metrics` only when asked for.
    public static func router(state: @escaping @Sendable () -> PrometheusText.WorkerState,
                              page: @escaping @Sendable () -> String) -> HTTPRouter {
        HTTPRouter([
            HTTPRoute(.exact("/metrics")) { _ in
                HTTPServer.Response(status: 200, contentType: PrometheusText.contentType, body: Array(page().utf8))
            },
            HTTPRoute(.exact("/healthz"), isProbe: true) { _ in HTTPServer.Response(status: 200, text: "ok\n") },
            HTTPRoute(.exact("/readyz"), isProbe: true) { _ in readiness(state()) },
        ])
    }

    static func readiness(_ current: PrometheusText.WorkerState) -> HTTPServer.Response {
        if current.stopping { return HTTPServer.Response(status: 503, text: "not ready: shutting down\n") }
        if !current.databaseReachable { return HTTPServer.Response(status: 503, text: "not ready: the database is unreachable\n") }
        if !current.missingMigrations.isEmpty {
            return HTTPServer.Response(status: 503, text: "not ready: the database lacks migrations \(current.missingMigrations.joined(separator: ", ")); run 'jobctl migrate'\n")
        }
        // Degraded is not unready: the worker serves every job it can run, and one job's
        // refusals must not take a worker out of its rollout or drain (issue 43).
        if let reason = current.degradedReason {
            return HTTPServer.Response(status: 200, text: "ready, degraded: this worker's configuration cannot run some jobs (\(reason)); they are handed back for other workers\n")
        }
        return HTTPServer.Response(status: 200, text: "ready\n")
    }
}

extension Worker {
    /// The worker's state as `/metrics` and `/readyz` report it.
    var metricsState: PrometheusText.WorkerState {
        PrometheusText.WorkerState(workerID: id.uuidString.lowercased(), version: CourierVersion.current,
                                   concurrency: configuration.concurrency, inFlight: inFlightCount,
                                   stopping: isStopping, databaseReachable: isDatabaseReachable,
                                   missingMigrations: missingMigrations, degradedReason: degradedReason,
                                   queues: configuration.queues)
    }
}
