import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct CopyTests {
    @Test func copiesOneHundredThousandRows() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table items (id int8, label text, note text)")
            let rows = (1...100_000).lazy.map { id -> [String?] in
                [String(id), "label \(id)", id % 10 == 0 ? nil : "note\t\(id)\n\\end"]
            }
            let copied = try connection.copyFrom("COPY items (id, label, note) FROM STDIN", rows: rows)
            #expect(copied == 100_000)
            #expect(try connection.query("select count(*), count(note), sum(id) from items").rows[0].values == ["100000", "90000", "5000050000"])
            let sample = try connection.query("select label, note from items where id = \(77_777)").rows[0]
            #expect(try sample.decode(0, as: String.self) == "label 77777")
            #expect(try sample.decode(1, as: String?.self) == "note\t77777\n\\end")
            #expect(try connection.query("select note from items where id = \(50)").rows[0].isNull(0))
        }
    }

    @Test func copyKeepsAwkwardTextIntact() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (n int, v text)")
            let values: [String?] = ["\\N", "a\\tb", "tab\there", "cr\rlf\n", "", "ünï 😀", nil, "\\", "NULL"]
            let rows = values.enumerated().map { [String($0.offset), $0.element] }
            #expect(try connection.copyFrom("COPY t (n, v) FROM STDIN", rows: rows) == values.count)
            let stored = try connection.query("select v from t order by n").rows.map { try $0.decode(0, as: String?.self) }
            #expect(stored == values)
        }
    }

    @Test func badDataFailsWithServerErrorAndConnectionStaysUsable() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (n int)")
            let rows: [[String?]] = [["1"], ["2"], ["not a number"]]
            let error = #expect(throws: PostgresError.self) { try connection.copyFrom("COPY t FROM STDIN", rows: rows) }
            #expect(error?.sqlState == "22P02")
            #expect(connection.transactionStatus == .idle)
            #expect(try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func nonCopyStatementIsRejected() throws {
        try withConnection { connection, _ in
            let error = #expect(throws: PostgresError.self) { try connection.copyFrom("select 1", rows: [[String?]]()) }
            #expect(error?.kind == .protocolViolation)
            try connection.simpleQuery("create table t (n int)")
            let nul = #expect(throws: PostgresError.self) { try connection.copyFrom("COPY t FROM STDIN", rows: [["1\u{0}"]]) }
            #expect(nul?.kind == .invalidArgument)
            // A COPY sent through simpleQuery is ended cleanly, not left hanging.
            let viaSimple = #expect(throws: PostgresError.self) { try connection.simpleQuery("COPY t FROM STDIN") }
            #expect(viaSimple?.kind == .protocolViolation)
            try connection.execute("insert into t values (\(Int32(1)))")
            let copyOut = #expect(throws: PostgresError.self) { try connection.query("COPY t TO STDOUT") }
            #expect(copyOut?.kind == .protocolViolation)
            try connection.execute("delete from t")
            #expect(try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self) == 0)
        }
    }
}

@Suite struct CopyRowEncoderTests {
    @Test func encodesFieldsAsCopyTextFormat() {
        var encoder = CopyRowEncoder()
        encoder.append("a\tb\nc\rd\\e")
        encoder.append(nil)
        encoder.append(-42)
        encoder.append(Int.max)
        encoder.append("")
        encoder.endRow()
        encoder.appendVerbatim(Array("raw".utf8))
        encoder.append(0)
        encoder.endRow()
        #expect(String(decoding: encoder.bytes, as: UTF8.self) == "a\\tb\\nc\\rd\\\\e\t\\N\t-42\t9223372036854775807\t\nraw\t0\n")
        #expect(!encoder.containsNUL)
        encoder.removeAll()
        #expect(encoder.bytes.isEmpty)
        encoder.append("x\u{0}y")
        #expect(encoder.containsNUL)
    }

    @Test func streamedRowsArriveAndAThrowingBodyCopiesNothing() throws {
        struct Stop: Error {}
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (n int, v text)")
            let copied = try connection.copyIn("COPY t (n, v) FROM STDIN") { writer in
                var encoder = CopyRowEncoder()
                for n in 1...1000 {
                    encoder.append(n)
                    encoder.append(n % 2 == 0 ? nil : "v\t\(n)")
                    encoder.endRow()
                    if n % 100 == 0 { writer.send(&encoder) }
                }
                writer.send(&encoder)
            }
            #expect(copied == 1000)
            #expect(try connection.query("select count(v), sum(n) from t").rows[0].values == ["500", "500500"])
            #expect(try connection.query("select v from t where n = \(Int32(7))").rows[0].decode(0, as: String.self) == "v\t7")

            #expect(throws: Stop.self) {
                try connection.copyIn("COPY t (n, v) FROM STDIN") { writer in
                    var encoder = CopyRowEncoder()
                    encoder.append(2000)
                    encoder.append("sent before the error")
                    encoder.endRow()
                    writer.send(&encoder)
                    throw Stop()
                }
            }
            #expect(connection.transactionStatus == .idle)
            #expect(try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self) == 1000)
        }
    }
}

@Suite struct CopyProducerTests {
    struct Stop: Error {}

    @Test func chunksFromAProducerThreadArriveInOrderWithProgress() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (n int, v text)")
            var progress: [Int] = []
            let copied = try connection.copyIn("COPY t (n, v) FROM STDIN", producing: { emit in
                var encoder = CopyRowEncoder()
                for n in 1...10_000 {
                    encoder.append(n)
                    encoder.append("row \(n)")
                    encoder.endRow()
                    if n % 1000 == 0 {
                        guard emit(encoder) else { return }
                        encoder.removeAll()
                    }
                }
            }, sent: { progress.append($0) })
            #expect(copied == 10_000)
            #expect(progress == Array(stride(from: 1000, through: 10_000, by: 1000)))
            #expect(try connection.query("select count(*), sum(n) from t").rows[0].values == ["10000", "50005000"])
            // COPY keeps the order the rows were sent in: the heap holds them in sequence.
            #expect(try connection.query("select bool_and(n = ord) from (select n, row_number() over (order by ctid) as ord from t) s")
                .rows[0].decode(0, as: Bool.self))
        }
    }

    @Test func aThrowingProducerAbortsTheCopyAndNothingIsKept() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (n int)")
            #expect(throws: Stop.self) {
                try connection.copyIn("COPY t (n) FROM STDIN", producing: { emit in
                    var encoder = CopyRowEncoder()
                    encoder.append(1)
                    encoder.endRow()
                    _ = emit(encoder)
                    throw Stop()
                })
            }
            #expect(connection.transactionStatus == .idle)
            #expect(try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func aRefusedRowFailsTheCopyAndAProducerBlockedOnAFullQueueIsReleased() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (n int)")
            // A NUL byte stops the sending side at once; the producer, which would emit
            // far more chunks than the queue holds, must be told to stop, not left blocked.
            let emitted = Counter()
            let error = #expect(throws: PostgresError.self) {
                try connection.copyIn("COPY t (n) FROM STDIN", producing: { emit in
                    for chunk in 0..<1000 {
                        var encoder = CopyRowEncoder()
                        if chunk == 1 { encoder.append("1\u{0}") } else { encoder.append(chunk) }
                        encoder.endRow()
                        guard emit(encoder) else { return }
                        emitted.increment()
                    }
                })
            }
            #expect(error?.kind == .invalidArgument)
            #expect(emitted.value < 1000, "the producer stopped early (\(emitted.value) chunks)")
            #expect(try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self) == 0)
            // And a server-side refusal (not a number) fails the whole COPY.
            let refused = #expect(throws: PostgresError.self) {
                try connection.copyIn("COPY t (n) FROM STDIN", producing: { emit in
                    var encoder = CopyRowEncoder()
                    encoder.append("1"); encoder.endRow()
                    encoder.append("two"); encoder.endRow()
                    _ = emit(encoder)
                })
            }
            #expect(refused?.sqlState == "22P02")
            #expect(try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self) == 0)
        }
    }
}

extension CopyProducerTests {
    /// The server going away mid-COPY ends the call with a connection error, without
    /// leaving the producer blocked on a full queue; the connection can reconnect.
    @Test func aBackendKilledMidCopyFailsCleanly() throws {
        try withConnection { connection, database in
            try connection.simpleQuery("create table t (n int, v text)")
            let admin = try adminConnection(database)
            defer { admin.close() }
            let victim = connection.backendPID
            let killed = Counter()
            let error = #expect(throws: PostgresError.self) {
                try connection.copyIn("COPY t (n, v) FROM STDIN", producing: { emit in
                    for chunk in 0..<2000 {
                        var encoder = CopyRowEncoder()
                        for n in 0..<200 {
                            encoder.append(chunk * 200 + n)
                            encoder.append(String(repeating: "x", count: 200))
                            encoder.endRow()
                        }
                        guard emit(encoder) else { return }
                        if chunk == 5 && killed.value == 0 {
                            killed.increment()
                            try? terminateBackend(victim, using: admin)
                        }
                    }
                })
            }
            #expect(killed.value == 1)
            #expect(error?.isConnectionLoss == true, "\(String(describing: error))")
            // After reconnecting, the COPY has left nothing behind.
            try connection.reconnect()
            #expect(try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self) == 0)
        }
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
