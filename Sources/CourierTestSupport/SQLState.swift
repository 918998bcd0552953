import Postgres

/// Runs `body` and returns the SQLSTATE it failed with: nil when it succeeded, a
/// description when it failed with something other than a PostgreSQL error.
public func sqlState(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let error as PostgresError {
        return error.sqlState ?? "no SQLSTATE: \(error)"
    } catch {
        return "not a PostgresError: \(error)"
    }
}
