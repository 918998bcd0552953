import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// A job's defaults are written once for Swift (`JobDefaults`) and stated again by every
/// SQL door: `courier.enqueue`, `courier.enqueue_job` and the `courier.jobs` columns.
/// Each value is read back from the catalog and compared, so the two cannot drift apart.
@Suite struct JobDefaultsAgreementTests {
    /// `name type DEFAULT value` of every parameter of a function, from the catalog.
    func parameterDefaults(_ function: String, on db: PostgresConnection) throws -> [String: String] {
        let text = try db.query("""
            select pg_get_function_arguments(p.oid) from pg_proc p
            where p.pronamespace = 'courier'::regnamespace and p.proname = \(function)
            """).rows[0].decode(0, as: String.self)
        var result: [String: String] = [:]
        for part in text.components(separatedBy: ", ") {
            let words = part.components(separatedBy: " DEFAULT ")
            guard words.count == 2, let name = words[0].split(separator: " ").first else { continue }
            result[String(name)] = words[1]
        }
        return result
    }

    func columnDefault(_ column: String, on db: PostgresConnection) throws -> String? {
        try db.query("""
            select column_default from information_schema.columns
            where table_schema = 'courier' and table_name = 'jobs' and column_name = \(column)
            """).rows[0].decode(0, as: String?.self)
    }

    @Test func sqlAndSwiftStateTheSameDefaults() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for function in ["enqueue", "enqueue_job"] {
                let defaults = try parameterDefaults(function, on: db)
                #expect(defaults["max_attempts"] == String(JobDefaults.maxAttempts), "courier.\(function): \(defaults)")
                #expect(defaults["timeout_ms"] == String(JobDefaults.timeoutMilliseconds), "courier.\(function): \(defaults)")
                #expect(defaults["priority"] == String(JobDefaults.priority), "courier.\(function)")
                #expect(defaults["queue"] == "'\(JobDefaults.queue)'::text", "courier.\(function)")
                #expect(defaults["deadline"] == "NULL::timestamp with time zone", "no default deadline: \(defaults)")
            }
            #expect(try parameterDefaults("enqueue", on: db)["method"] == "'\(JobDefaults.method)'::text")
            #expect(try columnDefault("max_attempts", on: db) == String(JobDefaults.maxAttempts))
            #expect(try columnDefault("timeout_ms", on: db) == String(JobDefaults.timeoutMilliseconds))
            // And what a job enqueued with nothing but a URL gets, through SQL and through Swift.
            let bySQL = try db.query("select courier.enqueue('https://e.com/a')").rows[0].decode(0, as: Int64.self)
            let bySwift = try JobsTable.enqueue(EnqueueRequest(url: "https://e.com/b"), on: db)
            let rows = try db.query("""
                select max_attempts, timeout_ms, priority, queue, method, deadline is null from courier.jobs
                where id in (\(bySQL), \(bySwift)) order by id
                """).rows
            for row in rows {
                #expect(try row.decode(0, as: Int.self) == JobDefaults.maxAttempts)
                #expect(try row.decode(1, as: Int.self) == JobDefaults.timeoutMilliseconds)
                #expect(try row.decode(2, as: Int.self) == JobDefaults.priority)
                #expect(try row.decode(3, as: String.self) == JobDefaults.queue)
                #expect(try row.decode(4, as: String.self) == JobDefaults.method)
                #expect(try row.decode(5, as: Bool.self))
            }
        }
    }

    /// 0015 changed only the default: the functions still run as their owner with the
    /// fixed search_path, and their grants are as before.
    @Test func theRewrittenFunctionsKeepTheirSecurity() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let rows = try db.query("""
                select proname, prosecdef, array_to_string(proconfig, ','),
                       has_function_privilege('courier_enqueue', oid, 'execute'), has_function_privilege('public', oid, 'execute')
                from pg_proc where pronamespace = 'courier'::regnamespace and proname in ('enqueue', 'enqueue_job')
                """).rows
            #expect(rows.count == 2)
            for row in rows {
                #expect(try row.decode(1, as: Bool.self))
                #expect(try row.decode(2, as: String?.self) == "search_path=pg_catalog, pg_temp")
                #expect(try row.decode(3, as: Bool.self))
                #expect(try !row.decode(4, as: Bool.self))
            }
        }
    }
}
