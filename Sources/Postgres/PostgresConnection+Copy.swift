import Foundation
import CLibPQ

/// Rows in COPY's text format, encoded straight into bytes: fields separated by tabs,
/// rows ended by newlines, `\N` for NULL, and backslash, tab, newline and carriage
/// return escaped. A NUL byte, which PostgreSQL text cannot hold, is remembered so the
/// COPY can be refused instead of sending it.
public struct CopyRowEncoder: Sendable {
    /// The encoded rows so far.
    public private(set) var bytes: [UInt8] = []
    /// How many rows were ended since the encoder was made or emptied.
    public private(set) var rowCount = 0
    /// Whether some field held a NUL byte.
    public private(set) var containsNUL = false
    private var atRowStart = true

    public init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    /// Appends a text field, or NULL for nil.
    public mutating func append(_ field: String?) {
        separate()
        guard var field else {
            bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "N"))
            return
        }
        field.withUTF8 { appendEscaped($0) }
    }

    /// Appends an integer field.
    public mutating func append(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)   // a small string: no allocation
    }

    /// Appends bytes that are already valid field text (no tab, newline, backslash or NUL).
    public mutating func appendVerbatim(_ field: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: field)
    }

    /// Ends the current row.
    public mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        atRowStart = true
        rowCount += 1
    }

    /// Forgets the encoded bytes (after they were sent), keeping the buffer's capacity.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        atRowStart = true
        rowCount = 0
    }

    private mutating func separate() {
        if !atRowStart { bytes.append(UInt8(ascii: "\t")) }
        atRowStart = false
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        for (index, byte) in utf8.enumerated() {
            let escaped: UInt8
            switch byte {
            case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
            case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
            case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
            case 0: containsNUL = true; continue
            default: continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(escaped)
            runStart = index + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
    }
}

/// Sends encoded rows during ``PostgresConnection/copyIn(_:_:)``.
public struct CopyWriter {
    fileprivate let handle: OpaquePointer
    var failed = false
    var nulFound = false

    /// Sends the encoder's rows and empties it. After a failure (or a NUL byte) nothing
    /// more is sent and the COPY is abandoned when the body returns.
    public mutating func send(_ encoder: inout CopyRowEncoder) {
        defer { encoder.removeAll() }
        guard !failed, !nulFound, !encoder.bytes.isEmpty else { return }
        if encoder.containsNUL { nulFound = true; return }
        let sent = encoder.bytes.withUnsafeBufferPointer { bytes in
            bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { pointer in
                PQputCopyData(handle, pointer, Int32(bytes.count))
            }
        }
        if sent != 1 { failed = true }
    }
}

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
        try copyIn(copySQL) { writer in
            var encoder = CopyRowEncoder(reservingCapacity: 68 * 1024)
            for row in rows {
                for field in row { encoder.append(field) }
                encoder.endRow()
                if encoder.bytes.count >= 64 * 1024 { writer.send(&encoder) }
            }
            writer.send(&encoder)
        }
    }

    /// Runs `COPY … FROM STDIN` (text format) with the rows encoded on a thread of their
    /// own: `produce` encodes chunks and hands each to `emit` (which returns false once the
    /// COPY has failed, so the producer can stop), while this thread sends the previous
    /// chunk. Encoding then overlaps the server's inserting instead of alternating with it.
    /// `sent` is called on this thread after each chunk with the rows sent so far.
    /// Returns the number of rows the server copied; an error thrown by `produce` aborts
    /// the COPY and is rethrown.
    ///
    /// - Warning: `copySQL` is sent as is: never build it from untrusted input.
    public func copyIn(
        _ copySQL: String,
        producing produce: @escaping @Sendable (_ emit: (CopyRowEncoder) -> Bool) throws -> Void,
        sent: (Int) -> Void = { _ in }
    ) throws -> Int {
        try copyIn(copySQL) { writer in
            let chunks = CopyChunkQueue(capacity: 4)
            let producer = Thread {
                do {
                    try produce { chunks.put($0) }
                    chunks.finish(nil)
                } catch {
                    chunks.finish(error)
                }
            }
            producer.start()
            // Whatever happens here, the producer is stopped and waited for before returning.
            defer { chunks.cancelAndWait() }
            var rows = 0
            while var chunk = try chunks.take() {
                rows += chunk.rowCount
                writer.send(&chunk)
                if writer.failed || writer.nulFound { return }
                sent(rows)
            }
        }
    }

    /// Runs `COPY … FROM STDIN` (text format) and lets `body` stream rows it encodes
    /// itself with ``CopyRowEncoder``, sending them with the writer as it goes.
    /// Returns the number of rows the server copied. If `body` throws, the COPY is
    /// aborted and the error rethrown; a field with a NUL byte aborts it too.
    ///
    /// - Warning: `copySQL` is sent as is: never build it from untrusted input.
    public func copyIn(_ copySQL: String, _ body: (inout CopyWriter) throws -> Void) throws -> Int {
        let handle = try liveHandle()
        guard let started = PQexec(handle, copySQL) else { throw connectionError(handle) }
        let startStatus = PQresultStatus(started)
        guard startStatus == PGRES_COPY_IN else {
            defer { PQclear(started) }
            try check(started, handle: handle, secrets: [])
            throw PostgresError(kind: .protocolViolation, message: "copyFrom needs a COPY ... FROM STDIN statement")
        }
        PQclear(started)

        var writer = CopyWriter(handle: handle)
        var bodyError: (any Error)?
        do {
            try body(&writer)
        } catch {
            bodyError = error
        }
        // Ending with an error message makes the server abort the COPY.
        let abortReason: String? = bodyError != nil ? "copy abandoned by the client"
            : writer.nulFound ? "a field contains a NUL character" : nil
        _ = PQputCopyEnd(handle, abortReason)
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
        if let bodyError { throw bodyError }
        if writer.nulFound {
            throw PostgresError(kind: .invalidArgument, message: "copyFrom: a field contains a NUL character, which PostgreSQL text cannot hold; nothing was copied")
        }
        if let failure { throw failure }
        if writer.failed { throw connectionError(handle) }
        return copied
    }
}

/// Encoded chunks handed from a producer thread to the sending thread, at most
/// `capacity` waiting, so a fast producer cannot run ahead by the whole load.
final class CopyChunkQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private let capacity: Int
    private var chunks: [CopyRowEncoder] = []
    private var finished = false
    private var cancelled = false
    private var producerDone = false
    private var failure: (any Error)?

    init(capacity: Int) { self.capacity = capacity }

    /// Adds a chunk, waiting while the queue is full; false once the consumer cancelled.
    func put(_ chunk: CopyRowEncoder) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while chunks.count >= capacity && !cancelled { condition.wait() }
        if cancelled { return false }
        chunks.append(chunk)
        condition.broadcast()
        return true
    }

    /// The producer is done, with the error that stopped it, if any.
    func finish(_ error: (any Error)?) {
        condition.lock()
        finished = true
        producerDone = true
        failure = error
        condition.broadcast()
        condition.unlock()
    }

    /// The next chunk, or nil when the producer finished; rethrows the producer's error.
    func take() throws -> CopyRowEncoder? {
        condition.lock()
        defer { condition.unlock() }
        while chunks.isEmpty && !finished { condition.wait() }
        if !chunks.isEmpty {
            condition.broadcast()
            return chunks.removeFirst()
        }
        if let failure { throw failure }
        return nil
    }

    /// Tells the producer to stop and waits until it has.
    func cancelAndWait() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        while !producerDone { condition.wait() }
        condition.unlock()
    }
}
