import CourierCLI
import CourierCore
import CourierHTTP
import CourierHTTPServer
import CourierWorker
import Foundation

// jobworker: parse, configure, run. Exit 0 after a graceful shutdown, 2 for bad usage, 1 otherwise
// (including a shutdown the worker began itself because its database setup cannot work).
let environment = ProcessInfo.processInfo.environment
let command = CommandLineParser.parseOrExit(root: JobworkerCommand.spec, environment: environment)

let configuration: WorkerConfiguration
let metricsAddress: HTTPServerAddress?
do {
    configuration = try WorkerConfiguration(command: command, environment: environment)
    try configuration.validate()
    metricsAddress = try configuration.metricsAddress.map { text throws(ValidationError) in try HTTPServerAddress(parsing: text, field: "--metrics-addr") }
} catch let error as UsageError {
    CommandLineParser.exitWithUsageError(error)
} catch let error as ValidationError {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(2)
}

let logger = Logger(
    format: (try? command.enumValue("log-format", as: Logger.Format.self)) ?? .logfmt,
    level: command.value("log-level").flatMap(Logger.Level.init(name:)) ?? .info)

let transport: CurlTransport
do {
    var httpConfiguration = CurlTransport.Configuration()
    httpConfiguration.allowPrivateNetworks = configuration.allowPrivateNetworks
    httpConfiguration.addressGuard = HostAddresses.defaultGuard
    httpConfiguration.maxResponseBodyBytes = configuration.maxResponseBytes
    transport = try CurlTransport(configuration: httpConfiguration)
} catch {
    logger.error("cannot start the HTTP transport", [("error", "\(error)")])
    exit(1)
}

// Bindings that cannot be read, and ambiguous names, stop the worker before it claims a job.
let secrets = SecretResolver(environment: environment, directory: configuration.secretsDirectory)
let secretProblems = secrets.startupProblems()
if !secretProblems.isEmpty {
    for problem in secretProblems { FileHandle.standardError.write(Data("error: secrets: \(problem)\n".utf8)) }
    transport.shutdown()
    exit(2)
}

let worker = Worker(
    configuration: configuration,
    httpHandler: HTTPJobHandler(transport: transport, secrets: secrets),
    logger: logger)

// The endpoint is bound before the worker starts: a taken port stops the process at once.
var metricsServer: WorkerEndpoint?
if let metricsAddress {
    do {
        let server = try WorkerEndpoint.start(for: worker, address: metricsAddress, logger: logger)
        logger.info("metrics endpoint listening", [("addr", HTTPServerAddress(host: metricsAddress.host, port: server.port).description)])
        metricsServer = server
    } catch {
        logger.error("cannot start the metrics endpoint", [("addr", metricsAddress.description), ("error", error.description)])
        transport.shutdown()
        exit(1)
    }
}

let signals = ShutdownSignals { _ in worker.shutdown() }
await worker.run()
metricsServer?.stop()
transport.shutdown()
withExtendedLifetime(signals) {}
exit(worker.fatalError == nil ? 0 : 1)
