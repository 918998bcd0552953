import CourierCLI
import CourierDashboard

/// The `dashboard` command: the web dashboard (see `CourierDashboard`).
extension JobctlCommands {
    static let dashboard = CommandSpec(
        name: "dashboard",
        abstract: "Serve the web dashboard: queues, jobs, dead letters, breakers, destinations, workers and schedules.",
        discussion: """
            Pages at /, /queues, /jobs, /jobs/ID, /dead, /dead/ID, /breakers, \
            /destinations, /workers and /schedules; a JSON API under /api/ (GET \
            /api/stats, /api/jobs, /api/dead, /api/breakers, /api/workers, ...; POST \
            /api/jobs/ID/cancel, /api/jobs/ID/retry, /api/dead/replay, \
            /api/dead/purge, /api/breakers/open|close|reset). Everything is served by \
            this process; nothing is loaded from elsewhere.

            The token (at least \(DashboardAuth.minimumTokenLength) characters) comes \
            from --token-file or COURIER_DASHBOARD_TOKEN. With one, every request \
            needs it: 'Authorization: Bearer TOKEN', or the session cookie the login \
            form sets. Failed tries are logged and throttled per client address and \
            overall (429 with Retry-After). Without a token the dashboard listens on \
            loopback only, unless --insecure-no-token is given. Whatever the mode, \
            only requests whose Host is a loopback name, the --listen address or an \
            --allowed-host name are served. Actions are POSTs checked for their \
            origin and a CSRF token (a cross-site POST gets 403); each is logged on \
            stderr with who and what.
            """,
        arguments: [
            .option("listen", value: "HOST:PORT", help: "Where to listen.", defaultValue: Dashboard.defaultListen.description),
            .flag("read-only", help: "Refuse every action (403): pages and the API only show."),
            .option("token-file", value: "FILE", help: "Read the token every request needs from FILE (its first line)."),
            .option("allowed-host", value: "NAME",
                    help: "Also serve requests whose Host is NAME (the name browsers use to reach this dashboard).",
                    repeatable: true),
            .flag("insecure-no-token",
                  help: "Allow listening beyond loopback without a token: anyone who reaches the address can use it."),
        ]
    )
}
