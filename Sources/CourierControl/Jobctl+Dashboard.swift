import CourierCLI
import CourierCore
import CourierDashboard
import CourierHTTPServer
import CourierStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Jobctl {
    /// `jobctl dashboard`: serves until SIGINT or SIGTERM.
    static func dashboard(_ command: ParsedCommand, io: ControlIO) throws {
        let address: HTTPServerAddress
        do {
            address = try HTTPServerAddress(parsing: command.value("listen") ?? "127.0.0.1:8377", field: "--listen")
        } catch {
            throw ControlError.badInput("error: \(error.description)")
        }
        var token = io.environment["COURIER_DASHBOARD_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        if let file = command.value("token-file") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ControlError.badInput("error: --token-file: cannot read '\(file)'")
            }
            let line = text.split(whereSeparator: \.isNewline).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
            guard line.count >= 16 else { throw ControlError.badInput("error: --token-file: the token must be at least 16 characters") }
            token = line
        }
        let resolved = DatabaseConfiguration.resolve(flag: command.value("database-url"), environment: io.environment)
        if let problem = ControlStore.connectionStringProblem(resolved.connectionString) {
            throw ControlError.badInput("error: --database-url (or DATABASE_URL): \(problem)")
        }
        let store = DashboardStore(.init(database: DatabaseConfiguration(connectionString: resolved.connectionString,
                                                                         applicationName: "jobctl dashboard")))
        do {
            try store.check()
        } catch {
            throw ControlError.runtime("error: cannot reach the database: \(error)")
        }
        var configuration = Dashboard.Configuration(listen: address)
        configuration.readOnly = command.flag("read-only")
        configuration.token = token
        let dashboard = Dashboard(configuration: configuration, store: store, log: { line in io.printError(line + "\n") })
        let server = dashboard.server()
        do {
            try server.start()
        } catch {
            throw ControlError.runtime("error: \(error)")
        }
        let shown = HTTPServerAddress(host: address.host ?? "127.0.0.1", port: server.port)
        io.printError("dashboard: serving http://\(shown)/\(configuration.readOnly ? " (read-only)" : "")\(token == nil ? "" : " (token required)")\n")
        let stop = DispatchSemaphore(value: 0)
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        stop.wait()
        sources.forEach { $0.cancel() }
        server.stop()
        store.close()
        io.printError("dashboard: stopped\n")
    }
}
