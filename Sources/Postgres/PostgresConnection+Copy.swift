import CLibPQ

extension PostgresConnection {
    /// Bulk-loads rows with `COPY … FROM STDIN` in text format and returns the number
    /// of rows the server copied.
    ///
    ///     try connection.copyFrom("COPY t (a, b) FROM STDIN", rows: [["1", "x"], ["2", nil]])
    ///
    /// Each row's fields are escaped (`\\`, tab, newline, carriage return); `nil` is NULL
    /// (`\N`). Data is sent in batches of about 64 KiB. `copySQL` must be a
    /// `COPY … FROM STDIN` statement in the default text format.
    ///
    /// - Warning: `copySQL` is sent as is: never build it from untrusted input.
    public func copyFrom(_ copySQL: String, rows: some Sequence<[String?]>) throws -> Int {
        let handle = try liveHandle()
        guard let started = PQexec(handle, copySQL) else { throw connectionError(handle) }
        let startStatus = PQresultStatus(started)
        guard startStatus == PGRES_COPY_IN else {
            defer { PQclear(started) }
            try check(started, handle: handle, secrets: [])
            throw PostgresError(kind: .protocolViolation, message: "copyFrom needs a COPY ... FROM STDIN statement")
        }
        PQclear(started)

        let batchSize = 64 * 1024
        var buffer = [UInt8]()
        buffer.reserveCapacity(batchSize + 4096)
        var sendFailed = false
        func flush() {
            guard !buffer.isEmpty, !sendFailed else { return }
            let sent = buffer.withUnsafeBufferPointer { bytes in
                bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { pointer in
                    PQputCopyData(handle, pointer, Int32(bytes.count))
                }
            }
            if sent != 1 { sendFailed = true }
            buffer.removeAll(keepingCapacity: true)
        }
        var nulInField = false
        for row in rows {
            for (index, field) in row.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: "\t")) }
                guard let field else {
                    buffer.append(UInt8(ascii: "\\"))
                    buffer.append(UInt8(ascii: "N"))
                    continue
                }
                PostgresConnection.appendCopyEscaped(field, to: &buffer, nulFound: &nulInField)
            }
            buffer.append(UInt8(ascii: "\n"))
            if nulInField { break }
            if buffer.count >= batchSize {
                flush()
                if sendFailed { break }
            }
        }
        if !nulInField { flush() }

        // Ending with an error message makes the server abort the COPY.
        _ = PQputCopyEnd(handle, nulInField ? "a field contains a NUL character" : nil)
        var copied = 0
        var failure: PostgresError?
        var stillCopying = 0
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            if status == PGRES_COMMAND_OK {
                copied = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if failure == nil, status != PGRES_COPY_IN {
                failure = error(from: result, handle: handle, secrets: [])
            }
            PQclear(result)
            if status == PGRES_COPY_IN {
                // Still in COPY (the end message could not be sent): try once more, then give up.
                stillCopying += 1
                if stillCopying > 1 {
                    failure = failure ?? PostgresError(kind: .copy, message: "COPY could not be ended", isConnectionLoss: true)
                    break
                }
                _ = PQputCopyEnd(handle, "copy aborted")
            }
        }
        if nulInField {
            throw PostgresError(kind: .invalidArgument, message: "copyFrom: a field contains a NUL character, which PostgreSQL text cannot hold; nothing was copied")
        }
        if let failure { throw failure }
        if sendFailed { throw connectionError(handle) }
        return copied
    }

    /// COPY text format: backslash, tab, newline and carriage return are backslash-escaped.
    static func appendCopyEscaped(_ field: String, to buffer: inout [UInt8], nulFound: inout Bool) {
        for byte in field.utf8 {
            switch byte {
            case UInt8(ascii: "\\"):
                buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "\t"):
                buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "t"))
            case UInt8(ascii: "\n"):
                buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"):
                buffer.append(UInt8(ascii: "\\")); buffer.append(UInt8(ascii: "r"))
            case 0:
                nulFound = true
            default:
                buffer.append(byte)
            }
        }
    }
}
