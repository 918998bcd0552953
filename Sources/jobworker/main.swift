import CourierCLI
import CourierCore
import CourierHTTP
import CourierWorker
import Foundation

// jobworker: parse, configure, run. Exit 0 after a graceful shutdown, 2 for bad usage, 1 otherwise.
let environment = ProcessInfo.processInfo.environment
let command = CommandLineParser.parseOrExit(root: JobworkerCommand.spec, environment: environment)

let configuration: WorkerConfiguration
do {
    configuration = try WorkerOptions.configuration(from: command, environment: environment)
    try configuration.validate()
} catch let error as UsageError {
    CommandLineParser.exitWithUsageError(error)
} catch let error as ValidationError {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(2)
}

let logger = Logger(
    format: Logger.Format(rawValue: command.value("log-format") ?? "logfmt") ?? .logfmt,
    level: Logger.Level(name: command.value("log-level") ?? "info") ?? .info)

let transport: CurlTransport
do {
    var httpConfiguration = CurlTransport.Configuration()
    httpConfiguration.allowPrivateNetworks = configuration.allowPrivateNetworks
    httpConfiguration.addressGuard = { AddressPolicy.refusalCategory(ip: $0) }
    httpConfiguration.maxResponseBodyBytes = configuration.maxResponseBytes
    transport = try CurlTransport(configuration: httpConfiguration)
} catch {
    logger.error("cannot start the HTTP transport", [("error", "\(error)")])
    exit(1)
}

let worker = Worker(
    configuration: configuration,
    httpHandler: HTTPJobHandler(transport: transport,
                                secrets: SecretResolver(environment: environment, directory: configuration.secretsDirectory)),
    logger: logger)
let signals = ShutdownSignals { _ in worker.shutdown() }
await worker.run()
transport.shutdown()
withExtendedLifetime(signals) {}
exit(0)
