import Foundation

extension MetricsServer {
    /// Binds `address` and serves a worker's endpoints, sampling the database every
    /// `sampleInterval` on a connection of its own:
    /// - `GET /metrics`: Prometheus text format 0.0.4;
    /// - `GET /healthz`: 200 `ok` while the process runs;
    /// - `GET /readyz`: 200 when the database is reachable, has every migration the
    ///   worker needs, and the worker is not shutting down, else 503.
    ///
    /// Other paths get 404, other methods than GET and HEAD 405. Throws (and starts
    /// nothing) when the address cannot be bound. `stop()` also stops the sampler.
    public static func start(for worker: Worker, address: MetricsServerAddress, logger: Logger,
                             limits: Limits = Limits(), sampleInterval: Duration = .seconds(5)) throws(MetricsServerError) -> MetricsServer {
        let sampler = MetricsServerSampler(database: worker.configuration.database, interval: sampleInterval, logger: logger)
        let server = MetricsServer(address: address, limits: limits) { request in
            route(request, state: { worker.metricsState }, page: {
                PrometheusText.workerPage(metrics: worker.metrics.snapshot(), state: worker.metricsState, sampling: sampler.status)
            })
        }
        server.sampler = sampler
        try server.start()
        sampler.start()
        server.onStop { sampler.stop() }
        return server
    }

    /// Answers one request from the worker's state; `page` renders `/metrics` only when asked for.
    static func route(_ request: Request, state: () -> PrometheusText.WorkerState, page: () -> String) -> Response {
        let known = ["/metrics", "/healthz", "/readyz"]
        guard known.contains(request.path) else {
            return Response(status: 404, text: "not found; try /metrics, /healthz or /readyz\n")
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            return Response(status: 405, text: "method not allowed\n", headers: [.init("Allow", "GET, HEAD")])
        }
        switch request.path {
        case "/metrics":
            return Response(status: 200, contentType: PrometheusText.contentType, body: Array(page().utf8))
        case "/healthz":
            return Response(status: 200, text: "ok\n")
        default:
            let current = state()
            if current.stopping { return Response(status: 503, text: "not ready: shutting down\n") }
            if !current.databaseReachable { return Response(status: 503, text: "not ready: the database is unreachable\n") }
            if !current.missingMigrations.isEmpty {
                return Response(status: 503, text: "not ready: the database lacks migrations \(current.missingMigrations.joined(separator: ", ")); run 'jobctl migrate'\n")
            }
            if let reason = current.degradedReason {
                return Response(status: 503, text: "degraded: this worker's configuration cannot run some jobs (\(reason)); they are handed back for other workers\n")
            }
            return Response(status: 200, text: "ready\n")
        }
    }
}

extension Worker {
    /// The worker's state as `/metrics` and `/readyz` report it.
    var metricsState: PrometheusText.WorkerState {
        PrometheusText.WorkerState(workerID: id.uuidString.lowercased(), version: CourierVersion.current,
                                   concurrency: configuration.concurrency, inFlight: inFlightCount,
                                   stopping: isStopping, databaseReachable: isDatabaseReachable,
                                   missingMigrations: missingMigrations, degradedReason: degradedReason)
    }
}
