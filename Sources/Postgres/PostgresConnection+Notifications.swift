import CLibPQ
import Foundation

extension PostgresConnection {
    /// `LISTEN` on `channel` (quoted with `PQescapeIdentifier`, so any name is safe).
    /// Remembered for ``reconnect()``. Inside a transaction it takes effect at COMMIT.
    public func listen(_ channel: String) throws {
        try simpleQuery("LISTEN " + quotedIdentifier(channel))
        listenedChannels.insert(channel)
    }

    /// `UNLISTEN` `channel`.
    public func unlisten(_ channel: String) throws {
        try simpleQuery("UNLISTEN " + quotedIdentifier(channel))
        listenedChannels.remove(channel)
    }

    /// `UNLISTEN *`.
    public func unlistenAll() throws {
        try simpleQuery("UNLISTEN *")
        listenedChannels.removeAll()
    }

    /// Sends a notification (`select pg_notify($1, $2)`); inside a transaction it is
    /// delivered when the transaction commits.
    public func notify(_ channel: String, payload: String) throws {
        try query("select pg_notify(\(channel), \(payload))")
    }

    /// Waits up to `timeout` for notifications and returns all that arrived (already
    /// buffered ones first, without waiting). Returns `[]` on timeout.
    ///
    /// Throws `.connection` with `isConnectionLoss` when the server went away; call
    /// ``reconnect()`` (which LISTENs again) and carry on.
    public func waitForNotifications(timeout: Duration) throws -> [PostgresNotification] {
        let handle = try liveHandle()
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: max(timeout, .zero))
        try consumeInput(handle)
        var notifications = PostgresConnection.takeNotifications(handle)
        while notifications.isEmpty {
            let remaining = clock.now.duration(to: deadline)
            if remaining <= .zero { break }
            let socket = PQsocket(handle)
            guard socket >= 0 else { throw connectionError(handle) }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, PostgresConnection.milliseconds(remaining))
            if ready < 0 {
                if errno == EINTR { continue }
                throw PostgresError(kind: .connection, message: "poll failed: errno \(errno)", isConnectionLoss: true)
            }
            if ready == 0 { continue }
            try consumeInput(handle)
            notifications = PostgresConnection.takeNotifications(handle)
        }
        return notifications
    }

    private func consumeInput(_ handle: OpaquePointer) throws {
        guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(
                kind: .connection,
                message: PostgresConnection.libpqMessage(handle) ?? "connection lost",
                isConnectionLoss: true
            )
        }
    }

    static func takeNotifications(_ handle: OpaquePointer) -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            let item = notify.pointee
            notifications.append(PostgresNotification(
                channel: item.relname.map { String(cString: $0) } ?? "",
                payload: item.extra.map { String(cString: $0) } ?? "",
                backendPID: item.be_pid
            ))
            PQfreemem(notify)
        }
        return notifications
    }

    /// Rounds up to whole milliseconds, capped to what `poll` accepts.
    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(0, millis))
    }
}
