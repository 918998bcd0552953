import CLibPQ

/// Turning libpq results into values and errors.
extension PostgresConnection {
    private enum DiagnosticField {
        static let sqlState = Int32(UInt8(ascii: "C"))
        static let messagePrimary = Int32(UInt8(ascii: "M"))
        static let detail = Int32(UInt8(ascii: "D"))
        static let hint = Int32(UInt8(ascii: "H"))
        static let schemaName = Int32(UInt8(ascii: "s"))
        static let tableName = Int32(UInt8(ascii: "t"))
        static let columnName = Int32(UInt8(ascii: "c"))
        static let constraintName = Int32(UInt8(ascii: "n"))
    }

    /// Converts a result (taking ownership: it is cleared) into a ``PostgresResult``.
    func consume(_ result: OpaquePointer?, handle: OpaquePointer, secrets: [String]) throws -> PostgresResult {
        guard let result else { throw connectionError(handle) }
        defer { PQclear(result) }
        try check(result, handle: handle, secrets: secrets)
        return PostgresConnection.makeResult(result)
    }

    /// Throws unless `result` succeeded. A result that started a COPY is ended first,
    /// so the connection stays usable.
    func check(_ result: OpaquePointer, handle: OpaquePointer, secrets: [String]) throws {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            abandonCopy(handle, status: PQresultStatus(result))
            throw PostgresError(kind: .protocolViolation, message: "COPY is only supported through copyFrom(_:rows:)")
        default:
            throw error(from: result, handle: handle, secrets: secrets)
        }
    }

    /// Leaves a COPY state the caller did not ask for, then drains pending results.
    func abandonCopy(_ handle: OpaquePointer, status: ExecStatusType) {
        if status == PGRES_COPY_IN {
            _ = PQputCopyEnd(handle, "COPY is not supported here")
        } else if status == PGRES_COPY_OUT {
            var buffer: UnsafeMutablePointer<CChar>?
            while PQgetCopyData(handle, &buffer, 0) > 0 {
                if let chunk = buffer { PQfreemem(chunk) }
                buffer = nil
            }
        }
        drainResults(handle)
    }

    /// Reads and discards results until libpq reports none (the command is finished).
    func drainResults(_ handle: OpaquePointer) {
        while let pending = PQgetResult(handle) {
            let status = PQresultStatus(pending)
            PQclear(pending)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                // A further COPY in a multi-statement string: end it too.
                guard PQstatus(handle) == CONNECTION_OK else { return }
                abandonCopy(handle, status: status)
                return
            }
        }
    }

    /// An error built from a failed result's diagnostic fields, with bound values redacted.
    func error(from result: OpaquePointer, handle: OpaquePointer, secrets: [String]) -> PostgresError {
        func field(_ code: Int32) -> String? {
            guard let value = PQresultErrorField(result, code) else { return nil }
            return String(cString: value)
        }
        let sqlState = field(DiagnosticField.sqlState)
        var message = field(DiagnosticField.messagePrimary)
        if message == nil, let raw = PQresultErrorMessage(result) {
            let text = String(cString: raw).trimmingSpaces()
            message = text.isEmpty ? nil : text
        }
        let connectionBad = PQstatus(handle) != CONNECTION_OK
        let lost = connectionBad || PostgresError.sqlStateMeansConnectionLoss(sqlState)
        return PostgresError(
            kind: lost ? .connection : .query,
            sqlState: sqlState,
            message: PostgresError.redact(message ?? PostgresConnection.libpqMessage(handle) ?? "unknown error", secrets: secrets) ?? "",
            detail: PostgresError.withholdingRow(PostgresError.redact(field(DiagnosticField.detail), secrets: secrets)),
            hint: PostgresError.redact(field(DiagnosticField.hint), secrets: secrets),
            constraintName: field(DiagnosticField.constraintName),
            columnName: field(DiagnosticField.columnName),
            tableName: field(DiagnosticField.tableName),
            schemaName: field(DiagnosticField.schemaName),
            isConnectionLoss: lost
        )
    }

    /// The error for a call that produced no result at all (connection gone, out of memory).
    func connectionError(_ handle: OpaquePointer) -> PostgresError {
        let lost = PQstatus(handle) != CONNECTION_OK
        return PostgresError(
            kind: .connection,
            message: PostgresConnection.libpqMessage(handle) ?? "no result from server",
            isConnectionLoss: lost
        )
    }

    static func makeResult(_ result: OpaquePointer) -> PostgresResult {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        let names = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        let index = PostgresColumnIndex(names: names)
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<Int32(columnCount) {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(nil)
                } else {
                    let length = Int(PQgetlength(result, row, column))
                    let bytes = UnsafeRawPointer(PQgetvalue(result, row, column)!).assumingMemoryBound(to: UInt8.self)
                    values.append(String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self))
                }
            }
            rows.append(PostgresRow(values: values, columnIndex: index))
        }
        let affected = PQcmdTuples(result).map { Int(String(cString: $0)) ?? 0 } ?? 0
        return PostgresResult(rows: rows, columns: names, affectedRows: affected)
    }
}
