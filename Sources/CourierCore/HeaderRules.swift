/// The limits and character rules for a job's stored headers: the Swift side of the
/// rules of the `courier.header_map` domain (sql/schema/domains.sql, with
/// `courier.check_headers` and `courier.headers_plainly_valid`), so every door
/// (courier.enqueue, COPY, jobctl, NDJSON, the Swift API) refuses the same headers.
/// `HeaderRulesAgreementTests` checks both sides at each boundary.
///
/// The limits keep a hostile or careless enqueuer from making the worker build
/// megabyte requests (libcurl fails on them after connecting) or spend seconds on
/// 100,000 headers.
public enum HeaderRules {
    /// At most this many headers per job.
    public static let maximumCount = 100
    /// At most this many bytes of header names plus values (a secret reference counts
    /// its name; at send time, its resolved value), in UTF-8.
    public static let maximumTotalBytes = 65_536

    /// Whether `byte` may appear in a header value: visible characters, space, tab and
    /// non-ASCII bytes (RFC 9110 field-value); no other control byte, which a receiver
    /// could read as a line end or a terminal could act on.
    @inlinable
    public static func isAllowedValueByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// Why a list of (name, value-or-secret-name) pairs breaks the count or size limit,
    /// or nil. One pass; names are checked elsewhere.
    public static func limitProblem<S: Sequence>(_ sizes: S) -> String? where S.Element == (nameBytes: Int, valueBytes: Int) {
        var count = 0
        var total = 0
        for size in sizes {
            count += 1
            total += size.nameBytes + size.valueBytes
        }
        if count > maximumCount { return "more than \(maximumCount) headers" }
        if total > maximumTotalBytes { return "names and values exceed \(maximumTotalBytes) bytes in total" }
        return nil
    }
}
