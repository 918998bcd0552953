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
        var key = sql
        key.reserveCapacity(sql.utf8.count + 1 + types.count * 5)
        key.append("\u{1}")
        for (index, type) in types.enumerated() {
            if index > 0 { key.append(",") }
            key.append(String(type))
        }
        return key
    }

    /// The statement name for `key`, marking it used. One hash of the key: a claim's SQL is
    /// over a kilobyte, and every statement a worker sends comes through here.
    mutating func lookup(_ key: String) -> String? {
        guard let index = entries.index(forKey: key) else { return nil }
        useCounter += 1
        entries.values[index].lastUse = useCounter
        return entries.values[index].name
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
