import CourierCore
import CourierStore
import CourierTestSupport
import CourierWorker
import Foundation
import Postgres
import Testing

/// Issue 18: attacks on a running worker, each performed for real against a worker, the
/// test database and a loopback server, and each now failing to do harm.
@Suite struct SecurityAttackTests {
    /// Item 1: NOTIFY needs no privilege. A role with no Courier grant at all notifies
    /// `courier_cancel` with a running job's id; the worker reads cancel_requested_at
    /// instead of trusting the payload, so the job runs on and succeeds.
    @Test func aForgedCancelNotificationDoesNotAbortARunningJob() async throws {
        let h = try WorkerHarness()
        h.server.setBehavior(.slow(delay: .seconds(2), then: .json200), forPath: "/long")
        try h.start()
        let id = try h.enqueue("/long")
        #expect(try await h.waitForRequests(1, path: "/long"))

        let nobody = "ct_nobody_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        try h.db.simpleQuery("create role \(nobody) nologin")
        defer { try? h.db.simpleQuery("reset role; drop role if exists \(nobody)") }
        try h.db.simpleQuery("set role \(nobody)")
        try h.db.simpleQuery("notify courier_cancel, '\(id)'")
        try h.db.simpleQuery("notify courier_cancel, '\(id),\(id + 1),1'")
        try h.db.simpleQuery("reset role")

        let record = try await h.waitFor(id, .succeeded)
        #expect(record.errors.allSatisfy { $0.errorClass != "cancelled" })
        // A real cancellation, by a role allowed to cancel, still works.
        h.server.setBehavior(.slow(delay: .seconds(20), then: .json200), forPath: "/long2")
        let second = try h.enqueue("/long2")
        #expect(try await h.waitForRequests(1, path: "/long2"))
        #expect(try JobsTable.cancel(ids: [second], on: h.db).first?.outcome == .cancelRequested)
        #expect(try await h.waitFor(second, .dead).deadReason == "cancelled")
        await h.close()
    }

    /// Item 2: a 2xx HTML page echoes the credential across the 64-byte excerpt cut, with
    /// a quote, a backslash and non-ASCII bytes in it. Nothing of it reaches the dead
    /// letter or the logs.
    @Test func anEchoedSecretNeverReachesExcerptsOrLogs() async throws {
        let h = try WorkerHarness()
        let secret = #"Bearer tok"en\ü-9f8e7d6c5b4a"#
        h.secretEnvironment["COURIER_SECRET_ECHO"] = secret
        h.secretEnvironment["COURIER_SECRET_ECHO_DESTINATIONS"] = h.server.baseURL
        // The secret starts at byte 50, so a 64-byte cut falls inside it.
        let page = String(repeating: "x", count: 50) + secret + " and the literal Cookie: sid=cookie-value-12345"
        h.server.setBehavior(.respond(status: 200, headers: [("Content-Type", "text/html")], body: page), forPath: "/echo")
        try h.start()
        let id = try h.enqueue("/echo") {
            $0.headers = [("Authorization", .secret(name: "echo")), ("Cookie", .literal("sid=cookie-value-12345"))]
            $0.expectContentType = "application/json"
        }
        let dead = try await h.waitFor(id, .dead)
        #expect(dead.deadReason == "invalid_response")
        #expect(h.server.requests.first?.header("Authorization") == secret, "the secret was sent")
        let message = try #require(dead.errors.last?.message)
        #expect(message.contains(Redaction.placeholder), "\(message)")
        let stored = try h.db.query("select errors::text from courier.dead_letters where job_id = \(id)").rows[0].decode(0, as: String.self)
        for text in [message, stored, h.logLines.all.joined(separator: "\n")] {
            for fragment in ["tok", "9f8e7d6c", "cookie-value", #"tok\"en"#, #"\xC3\xBC-9f"#] {
                #expect(!text.contains(fragment), "\(fragment) leaked into: \(text)")
            }
        }
        await h.close()
    }

    /// Item 3: an enqueuer points a job that references PARTNER_TOKEN at a server of their
    /// own. The secret is bound to the partner only: the job fails clearly and sends nothing.
    @Test func aSecretIsNeverSentToADestinationItIsNotBoundTo() async throws {
        let h = try WorkerHarness()
        let attacker = try FaultServer()
        defer { attacker.stop() }
        // Bound to the harness's server only; a second secret with no binding at all.
        h.secretEnvironment["COURIER_SECRET_UNBOUND"] = "unbound-value-123"
        try h.start()
        let stolen = try JobsTable.enqueue({
            var request = EnqueueRequest(url: attacker.baseURL + "/steal")
            request.headers = [("Authorization", .secret(name: "PARTNER_TOKEN"))]
            return request
        }(), on: h.db)
        let unbound = try h.enqueue("/unbound") { $0.headers = [("Authorization", .secret(name: "unbound"))] }
        let good = try h.enqueue("/partner") { $0.headers = [("Authorization", .secret(name: "PARTNER_TOKEN"))] }

        let deadStolen = try await h.waitFor(stolen, .dead)
        #expect(deadStolen.deadReason == "permanent")
        let message = try #require(deadStolen.errors.last?.message)
        #expect(message.contains("may not be sent to \(attacker.baseURL)"), "\(message)")
        #expect(message.contains("COURIER_SECRET_PARTNER_TOKEN_DESTINATIONS"), "\(message)")
        #expect(attacker.requestCount() == 0 && attacker.connectionCount == 0, "nothing was sent to the attacker")

        #expect(try await h.waitFor(unbound, .dead).deadReason == "permanent", "a secret with no binding goes nowhere")
        #expect(h.server.requestCount(path: "/unbound") == 0)

        _ = try await h.waitFor(good, .succeeded)
        #expect(h.server.requests.first { $0.path == "/partner" }?.header("Authorization") == "s3cr3t")
        await h.close()
    }

    /// Items 4 and 6: headers that passed no door (written straight into the table by a
    /// privileged role, before 0010 existed) are still bounded at send time once secrets
    /// are resolved: the job is refused without a request and the breaker hears nothing.
    @Test func aResolvedSecretThatBreaksTheHeaderLimitIsNotSent() async throws {
        let h = try WorkerHarness()
        h.secretEnvironment["COURIER_SECRET_HUGE"] = String(repeating: "h", count: HeaderRules.maximumTotalBytes + 1)
        h.secretEnvironment["COURIER_SECRET_HUGE_DESTINATIONS"] = h.server.baseURL
        try h.start()
        let id = try h.enqueue("/huge") {
            $0.headers = [("X-Huge", .secret(name: "huge"))]
            $0.idempotencyKey = .none
        }
        let dead = try await h.waitFor(id, .dead)
        #expect(dead.deadReason == "permanent", "not ambiguous: nothing was sent")
        #expect(dead.errors.last?.message.contains("once secrets are resolved") == true, "\(dead.errors.map(\.message))")
        #expect(h.server.requestCount(path: "/huge") == 0)
        #expect(try h.db.query("select count(*)::bigint from courier.breakers where state <> 'closed'").rows[0].decode(0, as: Int.self) == 0)
        await h.close()
    }

    /// A fresh secrets directory holding `files` (name to text), removed after `body`.
    static func withSecretsDirectory<T>(_ files: [String: String], _ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-attack-secrets-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (name, text) in files { try text.write(toFile: path + "/" + name, atomically: true, encoding: .utf8) }
        return try await body(path)
    }

    /// Issue 43 item 6: the file secret `api.token` is bound by its own file to the partner
    /// (the harness's server); `COURIER_SECRET_API_TOKEN_DESTINATIONS`, set for the
    /// environment secret `api-token`, lists the attacker's server, and the environment
    /// spells both names alike. An enqueuer points a job naming `api.token` at that server.
    /// It used to be sent there; now nothing is, and the job is handed back with an error
    /// naming both places.
    @Test func anotherNamesEnvironmentBindingNeverSendsAFileSecretElsewhere() async throws {
        let attacker = try FaultServer()
        defer { attacker.stop() }
        try await WorkerHarness.with { h in
            try await Self.withSecretsDirectory(["api.token": "file-secret-0123456789\n", "api.token.destinations": h.server.baseURL]) { directory in
                h.secretsDirectory = directory
                h.secretEnvironment["COURIER_SECRET_API_TOKEN_DESTINATIONS"] = attacker.baseURL
                try h.start()
                let stolen = try TestRows(h.db).job(url: attacker.baseURL + "/steal") {
                    $0.headers = [("Authorization", .secret(name: "api.token"))]
                }
                #expect(try await h.eventually { try h.isHandedBack(stolen) }, "\(String(describing: try? h.job(stolen)))")
                #expect(attacker.requestCount() == 0 && attacker.connectionCount == 0, "nothing was sent to the attacker")
                let logs = h.logLines.all.joined(separator: "\n")
                #expect(logs.contains("ambiguous") && logs.contains("COURIER_SECRET_API_TOKEN_DESTINATIONS"), "\(logs)")
                #expect(!logs.contains("file-secret-0123456789"))
            }
        }
    }

    /// Issue 43 item 7: the secret HOOK is bound to `/hooks` of the harness's server. An
    /// enqueuer points a job naming it at `/admin` of the same host. The entry used to be
    /// widened to the whole host, and the secret went to `/admin`; now the binding is
    /// refused as written (a path in a binding is a configuration error), nothing is sent
    /// anywhere, and the error says which origin to write.
    @Test func aBindingWithAPathIsRefusedInsteadOfWidenedToItsHost() async throws {
        try await WorkerHarness.with { h in
            h.secretEnvironment["COURIER_SECRET_HOOK"] = "hook-secret-0123456789"
            h.secretEnvironment["COURIER_SECRET_HOOK_DESTINATIONS"] = h.server.baseURL + "/hooks"
            try h.start()
            let widened = try h.enqueue("/admin") { $0.headers = [("Authorization", .secret(name: "HOOK"))] }
            #expect(try await h.eventually { try h.isHandedBack(widened) }, "\(String(describing: try? h.job(widened)))")
            #expect(h.server.requestCount() == 0, "the secret was sent nowhere")
            let logs = h.logLines.all.joined(separator: "\n")
            #expect(logs.contains("has a path") && logs.contains("write \(h.server.baseURL)"), "\(logs)")
            #expect(!logs.contains("hook-secret-0123456789"))
        }
    }

    /// Issue 43 item 12: receivers echo the credential back transformed, one upper-cased
    /// (`BEARER SK_LIVE_…`), one as UTF-8 read as Latin-1 and encoded again in UTF-8. The
    /// scrub matched exact bytes and let both through (45 bytes of the 60-byte secret reached
    /// a dead letter). Now the excerpt stored is only the placeholder, and no part of the
    /// secret, in any of its forms, is in the dead letter or the logs.
    @Test func aTransformedEchoNeverReachesDeadLettersOrLogs() async throws {
        let secret = "Bearer sk_live_Ünïcödé-9f8e7d6c5b4a3928-ñandú-Z0Y9X8W7"
        #expect(secret.utf8.count == 60)
        let latin1: @Sendable (String) -> String = { String(data: Data($0.utf8), encoding: .isoLatin1) ?? "" }
        let echoes: [(path: String, transform: @Sendable (String) -> String)] = [
            ("/upper", { $0.uppercased() }),
            ("/latin1", latin1),
            ("/latin1-upper", { latin1($0).uppercased() }),
        ]
        try await WorkerHarness.with { h in
            h.secretEnvironment["COURIER_SECRET_ECHO"] = secret
            h.secretEnvironment["COURIER_SECRET_ECHO_DESTINATIONS"] = h.server.baseURL
            for (path, transform) in echoes {
                h.server.setBehavior(.reply { request in
                    .respond(status: 200, headers: [("Content-Type", "text/html")], body: transform(request.header("Authorization") ?? "-"))
                }, forPath: path)
            }
            try h.start()
            var ids: [Int64] = []
            for (path, _) in echoes {
                ids.append(try h.enqueue(path) {
                    $0.headers = [("Authorization", .secret(name: "echo"))]
                    $0.expectContentType = "application/json"
                })
            }
            // What may not appear, in any case: the ASCII runs of the secret (6 bytes or
            // more) and the escaped bytes of its non-ASCII letters, re-encoded or not.
            let ascii = secret.split(whereSeparator: { !$0.isASCII || $0 == " " }).filter { $0.count >= 6 }.map { $0.lowercased() }
            let fragments = ascii.flatMap { run in stride(from: 0, through: run.count - 6, by: 1).map { String(Array(run)[$0..<($0 + 6)]) } }
                + [#"\xc3\x83"#, #"\xc3\x9c"#, #"\xc3\xbc"#, #"\xc3\xb1"#, "ünïc", "ÜNÏC", "Ã"]
            for (id, (path, _)) in zip(ids, echoes) {
                let dead = try await h.waitFor(id, .dead)
                #expect(dead.deadReason == "invalid_response", "\(path)")
                #expect(h.server.requests.first { $0.path == path }?.header("Authorization") == secret, "\(path): the secret was sent")
                let message = try #require(dead.errors.last?.message)
                #expect(message.hasSuffix(#"body starts "[REDACTED]""#), "\(path): \(message)")
                let stored = try h.db.query("select errors::text from courier.dead_letters where job_id = \(id)").rows[0].decode(0, as: String.self)
                for text in [message, stored] {
                    for fragment in fragments { #expect(!text.lowercased().contains(fragment.lowercased()), "\(path): \(fragment) leaked into \(text)") }
                }
            }
            let logs = h.logLines.all.joined(separator: "\n").lowercased()
            for fragment in fragments { #expect(!logs.contains(fragment.lowercased()), "\(fragment) leaked into the logs") }
        }
    }
}
