/// The per-connection prepared statement cache: SQL text + parameter types -> statement
/// name, least recently used evicted beyond `capacity`. A pure value; the connection
/// does the PREPARE / DEALLOCATE I/O.
struct PostgresStatementCache {
    let capacity: Int
    private var entries: [String: (name: String, lastUse: UInt64)] = [:]
    private var useCounter: UInt64 = 0
    private var nameCounter: UInt64 = 0

    init(capacity: Int) { self.capacity = max(0, capacity) }

    var count: Int { entries.count }

    static func key(sql: String, types: [UInt32]) -> String {
        sql + "\u{1}" + types.map(String.init).joined(separator: ",")
    }

    /// The statement name for `key`, marking it used.
    mutating func lookup(_ key: String) -> String? {
        guard let entry = entries[key] else { return nil }
        useCounter += 1
        entries[key] = (entry.name, useCounter)
        return entry.name
    }

    /// A fresh statement name, never handed out before on this connection.
    mutating func nextName() -> String {
        nameCounter += 1
        return "courier_stmt_\(nameCounter)"
    }

    /// Records a prepared statement; returns the name of the statement evicted to make room.
    mutating func insert(_ key: String, name: String) -> String? {
        var evicted: String?
        if entries[key] == nil, entries.count >= capacity,
           let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            evicted = oldest.value.name
            entries[oldest.key] = nil
        }
        useCounter += 1
        entries[key] = (name, useCounter)
        return evicted
    }

    mutating func remove(_ key: String) -> String? {
        entries.removeValue(forKey: key)?.name
    }

    mutating func removeAll() { entries.removeAll() }
}
