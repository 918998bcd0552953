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
    /// The environment variable a dashboard token may come from (`--token-file` wins).
    static let dashboardTokenVariable = "COURIER_DASHBOARD_TOKEN"

    /// `jobctl dashboard`: serves until SIGINT or SIGTERM.
    static func dashboard(_ command: ParsedCommand, io: ControlIO) throws {
        let address: HTTPServerAddress
        var allowedHosts: [String] = []
        do {
            address = try HTTPServerAddress(parsing: command.value("listen") ?? Dashboard.defaultListen.description, field: "--listen")
            allowedHosts = try command.values("allowed-host").map { text throws(ValidationError) in
                try AllowedHosts.validated(text, field: "--allowed-host")
            }
        } catch {
            throw ControlError.badInput("error: \(error.description)")
        }
        let token = try dashboardToken(command, io: io)
        let insecure = command.flag("insecure-no-token")
        if let refusal = dashboardListenRefusal(host: address.host, hasToken: token != nil, insecureNoToken: insecure) {
            throw ControlError.badInput("error: \(refusal)")
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
        configuration.allowedHosts = allowedHosts
        let dashboard = Dashboard(configuration: configuration, store: store, log: { line in io.printError(line + "\n") })
        let server = dashboard.server()
        do {
            try server.start()
        } catch {
            store.close()
            throw ControlError.runtime("error: \(error)")
        }
        let bound = server.boundAddress ?? address
        // The host was a loopback name, but what it resolved to is what counts.
        if let refusal = dashboardListenRefusal(host: bound.host, hasToken: token != nil, insecureNoToken: insecure) {
            server.stop()
            store.close()
            throw ControlError.badInput("error: \(refusal) (--listen \(address) bound \(bound))")
        }
        io.printError(dashboardBanner(bound: bound, readOnly: configuration.readOnly, tokenRequired: token != nil) + "\n")
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

    /// The token from `--token-file` (its first line), else from
    /// `COURIER_DASHBOARD_TOKEN` (empty counts as unset); nil when neither gives one.
    /// Both go through ``DashboardAuth/validatedToken(_:source:)``.
    static func dashboardToken(_ command: ParsedCommand, io: ControlIO) throws -> String? {
        let text: String
        let source: String
        if let file = command.value("token-file") {
            guard let contents = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ControlError.badInput("error: --token-file: cannot read '\(file)'")
            }
            text = contents.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            source = "--token-file"
        } else if let variable = io.environment[dashboardTokenVariable], !variable.isEmpty {
            text = variable
            source = dashboardTokenVariable
        } else {
            return nil
        }
        do {
            return try DashboardAuth.validatedToken(text, source: source)
        } catch {
            throw ControlError.badInput("error: \(error.description)")
        }
    }

    /// Why the dashboard must not listen on `host` (nil: every IPv4 address), or nil
    /// when it may: without a token only a loopback name or address is allowed, unless
    /// `--insecure-no-token` says to serve everyone who reaches it. Pure.
    static func dashboardListenRefusal(host: String?, hasToken: Bool, insecureNoToken: Bool) -> String? {
        if hasToken || insecureNoToken { return nil }
        if let host, AllowedHosts.isLoopback(AllowedHosts.name(of: host) ?? host) { return nil }
        let shown = host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "every IPv4 address"
        return "--listen: \(shown) is beyond loopback and no token is set, so anyone who reaches it could use the "
            + "dashboard; give a token with --token-file FILE or \(dashboardTokenVariable) (at least "
            + "\(DashboardAuth.minimumTokenLength) characters), listen on 127.0.0.1, or pass --insecure-no-token to serve it "
            + "without one"
    }

    /// The line that says where the dashboard is, from the address actually bound. Pure.
    static func dashboardBanner(bound: HTTPServerAddress, readOnly: Bool, tokenRequired: Bool) -> String {
        let name = bound.host.flatMap(AllowedHosts.name(of:)) ?? "0.0.0.0"
        let every = name == "0.0.0.0" ? " (every IPv4 address of this machine)" : name == "::" ? " (every address of this machine)" : ""
        let access = tokenRequired ? " (token required)"
            : AllowedHosts.isLoopback(name) ? "" : " (no token: open to anyone who reaches it, --insecure-no-token)"
        return "dashboard: serving http://\(HTTPServerAddress(host: name, port: bound.port))/\(every)\(readOnly ? " (read-only)" : "")\(access)"
    }
}
