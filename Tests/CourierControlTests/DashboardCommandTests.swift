@testable import CourierControl
import CourierHTTPServer
import CourierTestSupport
import Foundation
import Testing

/// `jobctl dashboard`'s bad usage: each mistake names its flag, exits 2, and serves nothing.
@Suite struct DashboardCommandTests {
    /// Nothing listens here: a run that gets past its checks fails at once with exit 1.
    static let noDatabase = "postgresql:///x?host=/nonexistent&port=1"

    @Test func badFlagsNameThemselvesAndExit2() throws {
        let listen = jobctl(["dashboard", "--listen", "nowhere"], databaseURL: "postgresql:///x")
        #expect(listen.status == 2 && listen.err.contains("--listen"), "\(listen)")
        let missing = jobctl(["dashboard", "--token-file", "/nonexistent/token"], databaseURL: "postgresql:///x")
        #expect(missing.status == 2 && missing.err.contains("--token-file"), "\(missing)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("short-token-\(UUID().uuidString)")
        try "short\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let short = jobctl(["dashboard", "--token-file", file.path], databaseURL: "postgresql:///x")
        #expect(short.status == 2 && short.err.contains("--token-file: the token must be at least 16 characters"), "\(short)")
        for host in ["https://dash.example.com", "dash.example.com:8377", ""] {
            let bad = jobctl(["dashboard", "--allowed-host", host], databaseURL: Self.noDatabase)
            #expect(bad.status == 2 && bad.err.contains("--allowed-host"), "\(host): \(bad)")
        }
    }

    @Test func anUnreachableDatabaseIsARuntimeFailure() {
        let outcome = jobctl(["dashboard", "--listen", "127.0.0.1:0"], databaseURL: Self.noDatabase)
        #expect(outcome.status == 1 && outcome.err.contains("cannot reach the database"), "\(outcome)")
    }

    /// Issue 43: `COURIER_DASHBOARD_TOKEN` took a one-character token while the token
    /// file needed 16. Both now go through the same check.
    @Test func aShortEnvironmentTokenIsRefusedLikeAShortFile() {
        for token in ["x", "0123456789abcde", "   short-padded   "] {
            let outcome = jobctl(["dashboard"], databaseURL: Self.noDatabase, environment: ["COURIER_DASHBOARD_TOKEN": token])
            #expect(outcome.status == 2, "\(outcome)")
            #expect(outcome.err.contains("COURIER_DASHBOARD_TOKEN: the token must be at least 16 characters"), "\(outcome)")
            if token.count > 1 { #expect(!outcome.err.contains(token.trimmingCharacters(in: .whitespaces)), "not echoed: \(outcome)") }
        }
        let long = jobctl(["dashboard"], databaseURL: Self.noDatabase, environment: ["COURIER_DASHBOARD_TOKEN": "0123456789abcdef"])
        #expect(long.status == 1 && long.err.contains("cannot reach the database"), "sixteen characters pass: \(long)")
    }

    /// Issue 43: without a token, `--listen :PORT` served everyone who reached the
    /// machine (a `Host: localhost` header passed the only check), so anyone on the
    /// network could read the CSRF token and pause a queue. It is now refused before
    /// anything is served, unless a token or --insecure-no-token is given.
    @Test func withoutATokenListeningBeyondLoopbackIsRefused() throws {
        for listen in [":0", "0.0.0.0:0", "[::]:0", "192.0.2.10:0", "dash.example.com:0"] {
            let outcome = jobctl(["dashboard", "--listen", listen], databaseURL: Self.noDatabase)
            #expect(outcome.status == 2, "\(listen): \(outcome)")
            for name in ["--listen", "--token-file", "COURIER_DASHBOARD_TOKEN", "--insecure-no-token"] {
                #expect(outcome.err.contains(name), "\(listen): the error names \(name): \(outcome.err)")
            }
        }
        for listen in ["127.0.0.1:0", "127.0.0.5:0", "localhost:0", "[::1]:0"] {
            let outcome = jobctl(["dashboard", "--listen", listen], databaseURL: Self.noDatabase)
            #expect(outcome.status == 1 && outcome.err.contains("cannot reach the database"), "loopback \(listen) is fine: \(outcome)")
        }
        let insecure = jobctl(["dashboard", "--listen", ":0", "--insecure-no-token"], databaseURL: Self.noDatabase)
        #expect(insecure.status == 1 && insecure.err.contains("cannot reach the database"), "\(insecure)")
        let token = try TemporaryFile("0123456789abcdef-token\n")
        let withToken = jobctl(["dashboard", "--listen", ":0", "--token-file", token.path], databaseURL: Self.noDatabase)
        #expect(withToken.status == 1 && withToken.err.contains("cannot reach the database"), "\(withToken)")
    }

    @Test func theListenRuleAndTheBannerArePure() {
        #expect(Jobctl.dashboardListenRefusal(host: "127.0.0.1", hasToken: false, insecureNoToken: false) == nil)
        #expect(Jobctl.dashboardListenRefusal(host: "::ffff:127.0.0.1", hasToken: false, insecureNoToken: false) == nil)
        #expect(Jobctl.dashboardListenRefusal(host: nil, hasToken: false, insecureNoToken: false)?.contains("every IPv4 address") == true)
        #expect(Jobctl.dashboardListenRefusal(host: "0.0.0.0", hasToken: true, insecureNoToken: false) == nil)
        #expect(Jobctl.dashboardListenRefusal(host: "0.0.0.0", hasToken: false, insecureNoToken: true) == nil)
        let local = HTTPServerAddress(host: "127.0.0.1", port: 8377)
        #expect(Jobctl.dashboardBanner(bound: local, readOnly: false, tokenRequired: false) == "dashboard: serving http://127.0.0.1:8377/")
        #expect(Jobctl.dashboardBanner(bound: HTTPServerAddress(host: "0.0.0.0", port: 8377), readOnly: true, tokenRequired: true)
                == "dashboard: serving http://0.0.0.0:8377/ (every IPv4 address of this machine) (read-only) (token required)")
        #expect(Jobctl.dashboardBanner(bound: HTTPServerAddress(host: "::", port: 1), readOnly: false, tokenRequired: false)
                == "dashboard: serving http://[::]:1/ (every address of this machine) (no token: open to anyone who reaches it, --insecure-no-token)")
    }

    /// Issue 43: `--listen :PORT` bound every address while the banner said
    /// `http://127.0.0.1:PORT/`. The real executable now prints what it bound.
    @Test func theBannerShowsTheAddressActuallyBound() throws {
        try ControlFixture.with { fixture in
            let process = try SpawnedProcess("jobctl", ["dashboard", "--listen", ":0", "--insecure-no-token",
                                                        "--database-url", fixture.database.url])
            defer { process.cleanUp() }
            _ = eventuallyBlocking(timeout: .seconds(60)) { process.output.contains("dashboard: serving") || !process.isRunning }
            let banner = try #require(process.output.split(separator: "\n").first { $0.hasPrefix("dashboard: serving") },
                                      "no banner: \(process.output)")
            #expect(banner.hasPrefix("dashboard: serving http://0.0.0.0:") && banner.contains("(every IPv4 address of this machine)"),
                    "\(banner)")
            #expect(banner.contains("--insecure-no-token") && !banner.contains("127.0.0.1"), "\(banner)")
            let port = try #require(Int(banner.dropFirst("dashboard: serving http://0.0.0.0:".count).prefix { $0.isNumber }))
            #expect(try LoopbackHTTP.request(port: port, "GET", "/api/stats", timeout: .seconds(30)).status == 200)
            process.signal(SIGTERM)
            #expect(process.wait(timeout: .seconds(30)) == 0, "\(process.output)")
        }
    }
}
