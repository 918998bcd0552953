import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Signing secret NAMES: stored with the job, carried wherever it goes, and defaulted per destination.
@Suite struct SigningSecretStoreTests {
    func signingSecret(of id: Int64, in table: String = "courier.jobs", column: String = "id", _ db: PostgresConnection) throws -> String? {
        try db.query(PostgresQuery(unsafeSQL: "select signing_secret from \(table) where \(column) = $1", binds: [id]))
            .rows.first?.decode(0, as: String?.self)
    }

    @Test func everyWayInStoresTheName() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let sql = try db.query("select courier.enqueue(url => 'https://e.com/a', signing_secret => 'PARTNER.hooks-1')")
                .rows[0].decode(0, as: Int64.self)
            #expect(try signingSecret(of: sql, db) == "PARTNER.hooks-1")
            var request = EnqueueRequest(url: "https://e.com/b")
            request.signingSecret = "SWIFT"
            let swift = try JobsTable.enqueue(request, on: db)
            #expect(try signingSecret(of: swift, db) == "SWIFT")
            request.idempotencyKey = .none
            #expect(try signingSecret(of: try JobsTable.enqueue(request, on: db), db) == "SWIFT")
            #expect(try signingSecret(of: try JobsTable.enqueue(EnqueueRequest(url: "https://e.com/c"), on: db), db) == nil)

            // Bulk: the direct COPY path and the staging path (unique keys).
            let lines = [#"{"url": "https://e.com/d", "signing_secret": "BULK"}"#, #"{"url": "https://e.com/e", "signing_secret": null}"#]
            let bulk = try lines.map { try EnqueueRequest(jsonLine: $0) }
            #expect(bulk.map(\.signingSecret) == ["BULK", nil])
            _ = try JobsTable.enqueueMany(bulk, on: db)
            var staged = bulk
            staged[0].uniqueKey = "u1"
            staged[1].uniqueKey = "u2"
            _ = try JobsTable.enqueueMany(staged, on: db)
            let stored = try db.query("select url, signing_secret from courier.jobs where url in ('https://e.com/d', 'https://e.com/e') order by id")
                .rows.map { [try $0.decode(0, as: String.self), try $0.decode(1, as: String?.self) ?? "-"] }
            #expect(stored == [["https://e.com/d", "BULK"], ["https://e.com/e", "-"], ["https://e.com/d", "BULK"], ["https://e.com/e", "-"]])
        }
    }

    @Test(arguments: ["", "has space", "semi;colon", "slash/name", String(repeating: "x", count: 129), "ünïcode"])
    func aBadNameIsRefusedEverywhereNamingTheField(name: String) throws {
        var request = EnqueueRequest(url: "https://e.com/a")
        request.signingSecret = name
        #expect(throws: ValidationError(field: "signing_secret", message: EnqueueRequest.secretNameRule)) { try request.validate() }
        try CourierTestDatabase.with(label: "bad_signing_secret") { (_, db) throws in
            do {
                try db.query("select courier.enqueue(url => 'https://e.com/a', signing_secret => \(name))")
                Issue.record("courier.enqueue accepted signing_secret \(name)")
            } catch let error as PostgresError {
                #expect(error.sqlState == "22023")
                #expect(error.message.contains("signing_secret"))
            }
            do {
                try db.query("insert into courier.jobs (destination, url, signing_secret) values ('x', 'https://e.com', \(name))")
                Issue.record("the column accepted \(name)")
            } catch let error as PostgresError {
                #expect(error.constraintName == "jobs_signing_secret_check")
            }
            #expect(try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func aNonStringInNDJSONNamesTheField() {
        #expect(throws: ValidationError(field: "signing_secret", message: "must be a string")) {
            try EnqueueRequest(jsonLine: #"{"url": "https://e.com", "signing_secret": 5}"#)
        }
    }

    @Test func destinationPoliciesAreNormalisedMergedAndReset() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let set = try DestinationsTable.merge(.init(destination: "HTTPS://Partner.Example.com/hooks?x=1", signingSecret: "P1"), on: db)
            #expect(set.destination == "https://partner.example.com:443")
            #expect(set.signingSecret == "P1")
            // A label that is not a URL is kept as written.
            _ = try DestinationsTable.merge(.init(destination: "job:report", signingSecret: "R"), on: db)
            // Not given: kept.
            let kept = try DestinationsTable.merge(.init(destination: "https://partner.example.com:443"), on: db)
            #expect(kept.signingSecret == "P1")
            #expect(try DestinationsTable.all(on: db).map(\.destination) == ["https://partner.example.com:443", "job:report"])
            do {
                _ = try db.query("select * from courier.destination_set('https://e.com', 'bad name')")
                Issue.record("accepted a bad secret name")
            } catch let error as PostgresError {
                #expect(error.sqlState == "22023")
                #expect(error.message.contains("signing_secret"))
            }
            #expect(try DestinationsTable.remove(destination: "https://PARTNER.example.com", on: db))
            #expect(!(try DestinationsTable.remove(destination: "https://partner.example.com:443", on: db)))
            #expect(try DestinationsTable.all(on: db).map(\.destination) == ["job:report"])
        }
    }

    @Test func claimsReadTheDestinationDefaultEachTimeAndTheJobsOwnWins() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let worker = UUID()
            var own = EnqueueRequest(url: "https://partner.example.com/own")
            own.signingSecret = "OWN"
            _ = try JobsTable.enqueue(own, on: db)
            _ = try JobsTable.enqueue(EnqueueRequest(url: "https://partner.example.com/default"), on: db)
            func claim() throws -> [ClaimedJob] {
                let jobs = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 30_000, on: db)
                try JobsTable.handBack(ids: jobs.map(\.id), leases: jobs.map(\.lease), worker: worker, on: db)
                return jobs.sorted { $0.id < $1.id }
            }
            #expect(try claim().map(\.effectiveSigningSecret) == ["OWN", nil])
            _ = try DestinationsTable.merge(.init(destination: "https://partner.example.com", signingSecret: "DEST"), on: db)
            let jobs = try claim()
            #expect(jobs.map(\.effectiveSigningSecret) == ["OWN", "DEST"])
            #expect(jobs.map(\.signingSecret) == ["OWN", nil])
            _ = try DestinationsTable.merge(.init(destination: "https://partner.example.com", signingSecret: "ROTATED"), on: db)
            #expect(try claim().map(\.effectiveSigningSecret) == ["OWN", "ROTATED"])
            #expect(try DestinationsTable.remove(destination: "https://partner.example.com", on: db))
            #expect(try claim().map(\.effectiveSigningSecret) == ["OWN", nil])
        }
    }

    /// The claims look each job's destination default up by the job's own destination: one
    /// claim of jobs for three destinations (two with a default, one without) gives each job
    /// its own, through the plain claim and the spread claim alike.
    @Test func aClaimOfManyDestinationsGivesEachJobItsOwnDestinationsDefault() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let worker = UUID()
            _ = try DestinationsTable.merge(.init(destination: "https://a.example.com", signingSecret: "A"), on: db)
            _ = try DestinationsTable.merge(.init(destination: "https://b.example.com", signingSecret: "B"), on: db)
            for host in ["a", "b", "c", "a", "c", "b"] {
                _ = try JobsTable.enqueue(EnqueueRequest(url: "https://\(host).example.com/hook"), on: db)
            }
            func secrets(_ jobs: [ClaimedJob]) -> [String: Set<String?>] {
                Dictionary(grouping: jobs, by: \.destination).mapValues { Set($0.map(\.destinationSigningSecret)) }
            }
            let expected: [String: Set<String?>] = [
                "https://a.example.com:443": ["A"], "https://b.example.com:443": ["B"], "https://c.example.com:443": [nil],
            ]
            let plain = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 30_000, on: db)
            #expect(plain.count == 6)
            #expect(secrets(plain) == expected)
            try JobsTable.handBack(ids: plain.map(\.id), leases: plain.map(\.lease), worker: worker, on: db)
            let spread = try JobsTable.claimSpread(queue: "default", limit: 10, perDestination: 2, after: nil, excluding: [],
                                                   visit: 16, worker: worker, leaseMilliseconds: 30_000, on: db).jobs
            #expect(spread.count == 6)
            #expect(secrets(spread) == expected)
        }
    }

    @Test func theNameTravelsToDeadLettersTheArchiveAndReplays() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let worker = UUID()
            var request = EnqueueRequest(url: "https://e.com/a")
            request.signingSecret = "TRAVELS"
            let dead = try JobsTable.enqueue(request, on: db)
            let done = try JobsTable.enqueue(request, on: db)
            let cancelled = try JobsTable.enqueue(request, on: db)
            _ = try JobsTable.cancel(ids: [cancelled], on: db)
            let jobs = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 30_000, on: db)
            #expect(jobs.count == 2)
            try JobsTable.deadLetter([.init(id: dead, attempt: 1, lease: 1, reason: .permanent, errorJSON: nil, lastClass: .client, lastStatus: 400)],
                                     worker: worker, on: db)
            try JobsTable.complete([.init(id: done, attempt: 1, lease: 1, status: 200, durationMilliseconds: 3)], worker: worker, on: db)
            #expect(try signingSecret(of: dead, in: "courier.dead_letters", column: "job_id", db) == "TRAVELS")
            #expect(try signingSecret(of: cancelled, in: "courier.dead_letters", column: "job_id", db) == "TRAVELS")
            #expect(try signingSecret(of: done, in: "courier.completed_jobs", db) == "TRAVELS")
            #expect(try JobsTable.get(id: done, on: db)?.signingSecret == "TRAVELS")
            #expect(try JobsTable.get(id: dead, on: db)?.signingSecretFrom == .job)
            let replayed = try db.query("""
                select new_job_id from courier.replay_dead_letters(
                    ids => (select array_agg(id) from courier.dead_letters where job_id = \(dead)))
                """).rows[0].decode(0, as: Int64.self)
            #expect(try signingSecret(of: replayed, db) == "TRAVELS")

            // Lease expiry that dead-letters keeps it too.
            var once = EnqueueRequest(url: "https://e.com/once")
            once.signingSecret = "RESCUED"
            once.idempotencyKey = .none
            let rescued = try JobsTable.enqueue(once, on: db)
            _ = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 1, on: db)
            try TestRows(db).expireLeases(.id(rescued))
            #expect(try JobsTable.rescueExpired(on: db).deadLettered == 1)
            #expect(try signingSecret(of: rescued, in: "courier.dead_letters", column: "job_id", db) == "RESCUED")
        }
    }

    @Test func showSaysWhetherTheNameIsTheJobsOrTheDestinations() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let plain = try JobsTable.enqueue(EnqueueRequest(url: "https://partner.example.com/x"), on: db)
            #expect(try JobsTable.get(id: plain, on: db)?.signingSecret == nil)
            _ = try DestinationsTable.merge(.init(destination: "https://partner.example.com", signingSecret: "DEST"), on: db)
            let record = try #require(try JobsTable.get(id: plain, on: db))
            #expect(record.signingSecret == "DEST" && record.signingSecretFrom == .destination)
        }
    }
}
