/// An IPv4 or IPv6 address, parsed in pure Swift.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// An IPv4 address, most significant octet first.
    case v4(UInt32)
    /// An IPv6 address as its high and low 64 bits.
    case v6(high: UInt64, low: UInt64)

    /// Parses dotted-quad IPv4 (four decimal octets, no leading zeros) or
    /// IPv6 text (RFC 4291: `::` compression, an embedded IPv4 tail). Square
    /// brackets around IPv6 and a `%zone` suffix are accepted and ignored.
    public init?(_ text: String) {
        var body = Substring(text)
        if body.hasPrefix("[") && body.hasSuffix("]") { body = body.dropFirst().dropLast() }
        if let v4 = Self.parseV4(body) {
            self = .v4(v4)
            return
        }
        if let percent = body.firstIndex(of: "%") {
            guard body.index(after: percent) != body.endIndex else { return nil }
            body = body[..<percent]
        }
        guard let (high, low) = Self.parseV6(body) else { return nil }
        self = .v6(high: high, low: low)
    }

    /// Whether this is a loopback address: 127.0.0.0/8, `::1`, or an IPv4-mapped
    /// `::ffff:127.x.x.x` (what a dual-stack socket reports for an IPv4 loopback peer).
    public var isLoopback: Bool {
        switch self {
        case .v4(let value): value >> 24 == 127
        case .v6(let high, let low): high == 0 && (low == 1 || (low >> 32 == 0xFFFF && (low >> 24) & 0xFF == 127))
        }
    }

    /// The IPv4 address embedded in the low 32 bits of an IPv6 address.
    var embeddedV4: UInt32? {
        guard case .v6(_, let low) = self else { return nil }
        return UInt32(truncatingIfNeeded: low)
    }

    /// Canonical text: dotted quad, or RFC 5952 IPv6 (lower case, longest zero
    /// run compressed, IPv4-mapped addresses as `::ffff:a.b.c.d`).
    public var description: String {
        switch self {
        case .v4(let value):
            return Self.formatV4(value)
        case .v6(let high, let low):
            if high == 0 && low >> 32 == 0xFFFF {
                return "::ffff:" + Self.formatV4(UInt32(truncatingIfNeeded: low))
            }
            let groups = (0..<8).map { i -> UInt16 in
                let word = i < 4 ? high : low
                return UInt16(truncatingIfNeeded: word >> (UInt64(3 - i % 4) * 16))
            }
            // Longest run of at least two zero groups (the first one on a tie).
            var bestStart = -1, bestLength = 0, index = 0
            while index < 8 {
                guard groups[index] == 0 else { index += 1; continue }
                let start = index
                while index < 8 && groups[index] == 0 { index += 1 }
                if index - start > bestLength { bestStart = start; bestLength = index - start }
            }
            let hex = groups.map { String($0, radix: 16) }
            guard bestLength >= 2 else { return hex.joined(separator: ":") }
            let head = hex[..<bestStart].joined(separator: ":")
            let tail = hex[(bestStart + bestLength)...].joined(separator: ":")
            return head + "::" + tail
        }
    }

    static func formatV4(_ value: UInt32) -> String {
        "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
    }

    /// Dotted-quad only: four decimal octets 0-255, no leading zeros (which some
    /// resolvers read as octal).
    static func parseV4(_ text: Substring) -> UInt32? {
        var value: UInt32 = 0
        var octet: UInt32 = 0
        var digits = 0
        var dots = 0
        var leadingZero = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, dots < 3 else { return nil }
                value = value << 8 | octet
                dots += 1
                octet = 0
                digits = 0
                continue
            }
            guard let digit = byte.decimalDigit, digits < 3, !(leadingZero && digits > 0) else { return nil }
            if digits == 0 { leadingZero = digit == 0 }
            octet = octet * 10 + UInt32(digit)
            digits += 1
            guard octet <= 255 else { return nil }
        }
        guard digits > 0, dots == 3 else { return nil }
        return value << 8 | octet
    }

    static func parseV6(_ text: Substring) -> (UInt64, UInt64)? {
        guard text.utf8.count >= 2, text.utf8.count <= 45 else { return nil }
        // Split around a single "::".
        let bytes = Array(text.utf8)
        var doubleColon: Int?
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == UInt8(ascii: ":") && bytes[i + 1] == UInt8(ascii: ":") {
                if doubleColon != nil { return nil }
                doubleColon = i
                i += 2
            } else {
                i += 1
            }
        }
        func groups(_ part: ArraySlice<UInt8>, allowV4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            let pieces = part.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            var out: [UInt16] = []
            for (n, piece) in pieces.enumerated() {
                if allowV4Tail && n == pieces.count - 1 && piece.contains(UInt8(ascii: ".")) {
                    guard let v4 = parseV4(Substring(String(decoding: piece, as: UTF8.self))) else { return nil }
                    out.append(UInt16(v4 >> 16))
                    out.append(UInt16(v4 & 0xFFFF))
                    continue
                }
                guard (1...4).contains(piece.count) else { return nil }
                var value: UInt16 = 0
                for byte in piece {
                    guard let digit = byte.hexDigit else { return nil }
                    value = value << 4 | UInt16(digit)
                }
                out.append(value)
            }
            return out
        }
        var all: [UInt16]
        if let at = doubleColon {
            guard let head = groups(bytes[..<at], allowV4Tail: false),
                  let tail = groups(bytes[(at + 2)...], allowV4Tail: true),
                  head.count + tail.count <= 7
            else { return nil }
            all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let full = groups(bytes[...], allowV4Tail: true), full.count == 8 else { return nil }
            all = full
        }
        var high: UInt64 = 0, low: UInt64 = 0
        for group in all[0..<4] { high = high << 16 | UInt64(group) }
        for group in all[4..<8] { low = low << 16 | UInt64(group) }
        return (high, low)
    }
}

extension UInt8 {
    var hexDigit: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
