import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// courier.jobs as a ring of slots and a parked partition (sql/0048): a slot whose jobs have all
/// left is truncated, whatever snapshot is held; what still waits in the next slot is moved to
/// jobs_parked unchanged; unique keys hold across partitions; a populated database upgrades in
/// place.
@Suite struct JobsRingTests {
    let worker = UUID()
    let lease = 60_000

    /// The slot courier.job_slot_of gives `at` seconds from the database's now.
    func slot(inSeconds at: Int = 0, on db: PostgresConnection) throws -> Int {
        try db.query("select courier.job_slot_of(now() + \(at)::int * interval '1 second')::int").rows[0].decode(0, as: Int.self)
    }

    /// A time in the middle of the current slot's turn, and that slot: a reclaim at
    /// `at + k * 15 s` sees slot (slot + k) % 4 as current, whatever the clock does meanwhile
    /// (the tests name the slot of every job they insert).
    func anchor(on db: PostgresConnection) throws -> (at: Date, slot: Int) {
        let row = try db.query("""
            select t, courier.job_slot_of(t)::int from (select to_timestamp((floor(date_part('epoch', now()) / 15) + 0.5) * 15) t) s
            """).rows[0]
        return (try row.decode(0, as: Date.self), try row.decode(1, as: Int.self))
    }

    func drain(on db: PostgresConnection) throws -> Int {
        var done = 0
        while true {
            let jobs = try JobsTable.claim(queue: "default", limit: 500, worker: worker, leaseMilliseconds: lease, on: db)
            if jobs.isEmpty { return done }
            done += try JobsTable.complete(jobs.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                                           worker: worker, archive: false, on: db).count
        }
    }

    @Test func theRingHasOnePartitionPerSlotAndTheDefaultIsTheCurrentSlot() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let partitions = try db.query("""
                select c.relname::text from pg_partition_tree('courier.jobs') t join pg_class c on c.oid = t.relid
                where t.isleaf order by 1
                """).rows.map { try $0.decode(0, as: String.self) }
            let count = try db.query("select courier.job_slot_count()").rows[0].decode(0, as: Int.self)
            #expect(partitions == (0..<count).map { "jobs_\($0)" } + ["jobs_parked"])
            let id = try JobsTable.enqueue(EnqueueRequest(url: "http://ring.test/x"), on: db)
            let row = try db.query("select j.slot::int, courier.job_slot_of(now())::int, (select c.relname::text from pg_class c where c.oid = j.tableoid) from courier.jobs j where j.id = \(id)").rows[0]
            let stored = try row.decode(0, as: Int.self)
            let current = try row.decode(1, as: Int.self), justBefore = try slot(inSeconds: -1, on: db)
            #expect(stored == current || stored == justBefore)
            #expect(try row.decode(2, as: String.self) == "jobs_\(stored)")
        }
    }

    /// Create, fill, drain, reclaim: a drained slot's files are truncated while a snapshot that
    /// could still see every deleted row is held; a slot with one job left, or the current one,
    /// is not.
    @Test func aDrainedSlotIsTruncatedWhileASnapshotIsHeld() throws {
        try CourierTestDatabase.with { (database, db) throws in
            let (at, current) = try anchor(on: db)
            let (old, kept) = ((current + 2) % 4, (current + 3) % 4)
            _ = try JobsPartitions.insert(3000, slot: old, on: db)
            _ = try JobsPartitions.insert(10, slot: kept, on: db)
            _ = try JobsPartitions.insert(10, slot: current, on: db)
            let holder = try SnapshotHolder(url: database.url)
            // Everything but one job of `kept` done.
            #expect(try drain(on: db) == 3020)
            let last = try JobsPartitions.insert(1, slot: kept, on: db)
            #expect(try JobsPartitions.heapBytes(slot: old, on: db) > 100_000, "the drained slot still holds its dead rows")

            let result = try JobsTable.reclaim(now: at, on: db)
            #expect(result.truncated == ["courier.jobs_\(old)"])
            #expect(try JobsPartitions.heapBytes(slot: old, on: db) == 0)
            #expect(try JobsPartitions.heapBytes(slot: kept, on: db) > 0)
            #expect(try JobsPartitions.heapBytes(slot: current, on: db) > 0, "the current slot is never truncated")
            #expect(try db.query("select count(*)::int from courier.jobs where id = \(last[0])").rows[0].decode(0, as: Int.self) == 1)
            // Nothing left to do: a second call truncates nothing.
            #expect(try JobsTable.reclaim(now: at, on: db).truncated.isEmpty)
            try holder.release()
        }
    }

    /// What waits in the next slot (scheduled ahead, held back, or a backlog) is moved to
    /// jobs_parked with every column as it was; a running job stays.
    @Test func theNextSlotsWaitingJobsMoveToParkedUnchanged() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let (at, current) = try anchor(on: db)
            let next = (current + 1) % 4
            let ahead = try JobsPartitions.insert(3, slot: next, runInSeconds: 3600, on: db)
            let due = try JobsPartitions.insert(2, slot: next, on: db)
            try db.execute("update courier.jobs set held_since = now(), unique_key = 'k-' || id, unique_scope = 'r' where id = \(ahead[0])")
            try db.execute("insert into courier.job_unique_keys values ('r', 'k-' || \(ahead[0])::bigint, \(ahead[0])::bigint)")
            let running = try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: lease, on: db)
            #expect(running.map(\.id) == [due[0]])
            let before = try db.query("""
                select id, (to_jsonb(j) - 'slot')::text from courier.jobs j where slot = \(next)::smallint order by id
                """).rows.map { (try $0.decode(0, as: Int64.self), try $0.decode(1, as: String.self)) }

            let result = try JobsTable.reclaim(now: at, on: db)
            #expect(result.moved == 4)
            let after = try db.query("""
                select id, (to_jsonb(j) - 'slot')::text, slot::int from courier.jobs j where id = any(\(before.map(\.0))) order by id
                """).rows
            #expect(after.count == 5)
            for (row, old) in zip(after, before) {
                #expect(try row.decode(0, as: Int64.self) == old.0)
                #expect(try row.decode(1, as: String.self) == old.1, "job \(old.0) changed in the move")
                #expect(try row.decode(2, as: Int.self) == (old.0 == due[0] ? next : -1))
            }
            // The moved job keeps its unique key; the running job's lease still holds.
            #expect(try db.query("select job_id from courier.job_unique_keys where unique_key = 'k-' || \(ahead[0])::bigint")
                .rows.map { try $0.decode(0, as: Int64.self) } == [ahead[0]])
            #expect(try JobsTable.complete([.init(id: running[0].id, attempt: running[0].attempt, lease: running[0].lease, status: 200,
                                                  durationMilliseconds: 1)], worker: worker, on: db) == [running[0].id])
            #expect(try JobsTable.reclaim(now: at, on: db).moved == 0)
        }
    }

    /// A role's unique key holds across partitions and is given back when its job leaves.
    @Test func aUniqueKeyHoldsAcrossSlotsAndIsFreedWhenItsJobLeaves() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var request = EnqueueRequest(url: "http://ring.test/x")
            request.uniqueKey = "order-7"
            let first = try JobsTable.enqueue(request, on: db)
            #expect(try JobsTable.enqueue(request, on: db) == first)
            // The bulk path skips it too, and counts it.
            let bulk = try JobsTable.enqueueMany([request, EnqueueRequest(url: "http://ring.test/y")], on: db)
            #expect(bulk.inserted == 1 && bulk.skippedByUniqueKey == 1)
            // In another slot (a plain insert naming its slot): skipped by the trigger.
            let other = (try slot(on: db) + 2) % 4
            let inserted = try db.query(PostgresQuery(unsafeSQL: """
                insert into courier.jobs (destination, url, unique_key, unique_scope, slot)
                values ('http://ring.test:80', 'http://ring.test/x', 'order-7', session_user, $1::smallint) returning id
                """, binds: [other])).rows
            #expect(inserted.isEmpty)
            #expect(try db.query("select count(*)::int from courier.job_unique_keys").rows[0].decode(0, as: Int.self) == 1)
            #expect(try drain(on: db) == 2)
            #expect(try db.query("select count(*)::int from courier.job_unique_keys").rows[0].decode(0, as: Int.self) == 0)
            #expect(try JobsTable.enqueue(request, on: db) != first)
        }
    }

    /// Enqueuers filling the slots in turn, claimers draining them and the reclaimer truncating
    /// and moving as the ring turns (its clock stepped a slot a call): no job is lost or
    /// claimed twice, and the jobs scheduled ahead end up parked.
    @Test func theRingTurnsUnderConcurrentEnqueuesAndClaims() throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let url = database.url
        @Sendable func connect() throws -> PostgresConnection { try PostgresConnection.connect(PostgresConfiguration(connectionString: url)) }
        let setup = try connect()
        defer { setup.close() }
        let at = try anchor(on: setup).at
        let rounds = 40
        let perRound = 100
        let enqueued = Locked<[Int64]>([])
        let ahead = Locked<[Int64]>([])
        let claimed = Locked<[Int64]>([])
        let enqueuing = Locked(true)
        let reclaiming = Locked(true)
        let truncations = Locked(0)
        let moves = Locked(0)
        let failures = Locked<[String]>([])
        let done = DispatchGroup()
        // Blocking database calls, each on a thread of its own.
        func run(_ name: String, _ body: @escaping @Sendable (PostgresConnection) throws -> Void, finally: @escaping @Sendable () -> Void = {}) {
            done.enter()
            Thread {
                defer { finally(); done.leave() }
                do {
                    let db = try connect()
                    defer { db.close() }
                    try body(db)
                } catch {
                    failures.mutate { $0.append("\(name): \(error)") }
                }
            }.start()
        }
        run("enqueuer", { db in
            for round in 0..<rounds {
                let slot = round % 4
                let ids = try JobsPartitions.insert(perRound, slot: slot, on: db)
                let later = try JobsPartitions.insert(2, slot: slot, runInSeconds: 3600, on: db)
                enqueued.mutate { $0 += ids }
                ahead.mutate { $0 += later }
            }
        }, finally: { enqueuing.mutate { $0 = false } })
        for _ in 0..<2 {
            run("claimer", { db in
                let me = UUID()
                while true {
                    // Done once nothing is claimable after the enqueuer and the reclaimer stopped (a
                    // claim may pass over rows a move holds).
                    let stillRunning = enqueuing.value || reclaiming.value
                    let jobs = try JobsTable.claim(queue: "default", limit: 50, worker: me, leaseMilliseconds: lease, on: db)
                    claimed.mutate { $0 += jobs.map(\.id) }
                    _ = try JobsTable.complete(jobs.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                                               worker: me, archive: false, on: db)
                    if jobs.isEmpty && !stillRunning { return }
                }
            })
        }
        run("reclaimer", { db in
            var step = 0
            func turn(_ limit: Int) throws {
                let result = try JobsTable.reclaim(moveLimit: limit, now: at.addingTimeInterval(Double(step) * 15), on: db)
                truncations.mutate { $0 += result.truncated.count }
                moves.mutate { $0 += result.moved }
                step += 1
            }
            repeat { try turn(50) } while enqueuing.value
            // Two more turns of the ring, so every slot has been the next one once more.
            for _ in 0..<8 { try turn(1000) }
        }, finally: { reclaiming.mutate { $0 = false } })
        done.wait()
        #expect(failures.value.isEmpty, "\(failures.value)")
        let all = enqueued.value, taken = claimed.value
        #expect(all.count == rounds * perRound)
        #expect(taken.count == all.count, "every due job claimed once (\(taken.count) claims of \(all.count) jobs)")
        #expect(Set(taken) == Set(all))
        #expect(truncations.value > 0)
        let later = ahead.value
        let parked = try setup.query("select count(*)::int from courier.jobs where id = any(\(later)) and slot = -1").rows[0].decode(0, as: Int.self)
        #expect(parked == later.count, "\(parked) of \(later.count) jobs scheduled ahead parked")
        #expect(moves.value >= later.count)
    }

    /// The upgrade: a database at 0047 with waiting, running, scheduled and uniquely keyed jobs
    /// migrates in place. Its table becomes jobs_parked without being rewritten (same file, same
    /// index files), no job changes, ids go on, keys still hold and leases still fence.
    @Test func aPopulatedDatabaseUpgradesInPlace() throws {
        let database = try TestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        try Migrator.migrate(db, migrations: Migration.all.filter { $0.version < 48 })
        try db.execute("""
            insert into courier.jobs (destination, url, run_at, unique_key, unique_scope)
            select 'http://old.test:80', 'http://old.test/' || g, now() + (g % 3 - 1) * interval '1 hour',
                   case when g % 100 = 0 then 'key-' || g end, case when g % 100 = 0 then session_user end
            from generate_series(1, 20000) g
            """)
        let running = try JobsTable.claim(queue: "default", limit: 5, worker: worker, leaseMilliseconds: lease, on: db)
        #expect(running.count == 5)
        let before = try db.query("select md5(string_agg((to_jsonb(j))::text, ',' order by id)), max(id) from courier.jobs j").rows[0]
        let files = try db.query("""
            select c.relname::text, pg_relation_filenode(c.oid)::bigint from pg_class c
            where c.oid = 'courier.jobs'::regclass or c.oid in (select indexrelid from pg_index where indrelid = 'courier.jobs'::regclass)
            """).rows.map { (try $0.decode(0, as: String.self), try $0.decode(1, as: Int64.self)) }

        let applied = try Migrator.migrate(db)
        #expect(applied.map(\.version) == Migration.all.filter { $0.version >= 48 }.map(\.version))
        let after = try db.query("select md5(string_agg((to_jsonb(j) - 'slot')::text, ',' order by id)) from courier.jobs j").rows[0]
        #expect(try after.decode(0, as: String.self) == (try before.decode(0, as: String.self)), "every job as it was")
        #expect(try db.query("select count(*)::int from courier.jobs where slot <> -1").rows[0].decode(0, as: Int.self) == 0)
        let parkedFile = try db.query("select pg_relation_filenode('courier.jobs_parked')::bigint").rows[0].decode(0, as: Int64.self)
        #expect(parkedFile == files.first { $0.0 == "jobs" }?.1, "the table was renamed, not copied")
        for (name, file) in files where name != "jobs" {
            let now = try db.query(PostgresQuery(unsafeSQL: "select pg_relation_filenode($1::regclass)::bigint",
                                                 binds: ["courier." + name.replacingOccurrences(of: "jobs_", with: "jobs_parked_")])).rows[0]
            #expect(try now.decode(0, as: Int64.self) == file, "index \(name) was rebuilt")
        }
        // Ids go on from where they were; a key held before the upgrade still holds.
        let id = try JobsTable.enqueue(EnqueueRequest(url: "http://new.test/x"), on: db)
        #expect(id > (try before.decode(1, as: Int64.self)))
        var keyed = EnqueueRequest(url: "http://new.test/x")
        keyed.uniqueKey = "key-100"
        #expect(try JobsTable.enqueue(keyed, on: db) == 100)
        // The leases taken before the upgrade fence as before.
        let done = try JobsTable.complete(running.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                                          worker: worker, on: db)
        #expect(Set(done) == Set(running.map(\.id)))
        #expect(try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: lease, on: db).count == 10)
    }
}
