import Foundation
import Postgres

/// Statements about `courier.breakers`: one row per destination that has needed one.
public enum BreakersTable {
    /// Holds a destination back until now + `milliseconds` (Retry-After). Its waiting
    /// jobs are not claimed meanwhile and so use no attempts. Never shortens a pause.
    public static func pause(destination: String, milliseconds: Int64, on connection: PostgresConnection) throws {
        try connection.query("""
            insert into courier.breakers (destination, not_before)
            values (\(destination), now() + \(milliseconds) * interval '1 millisecond')
            on conflict (destination) do update
            set not_before = greatest(courier.breakers.not_before, excluded.not_before)
            """)
    }
}
