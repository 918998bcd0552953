/// The circuit-breaker key of a job: by default `scheme://host:port` of its URL.
public enum Destination {
    /// The longest explicit destination accepted, in bytes.
    public static let maximumLength = 512

    /// Derives `scheme://host:port` (lower case, default ports 80 and 443
    /// written out, IPv6 in brackets) from a job URL; errors name `field`.
    public static func derive(fromURL url: String, field: String = "url") throws(ValidationError) -> String {
        try RequestURL(url, field: field).destination
    }

    /// The canonical form of a destination key, as every door stores it (the rule of
    /// `courier.destination_canonical`, sql/schema/destinations.sql). A sub-key is written
    /// after an explicit port, `scheme://host:port/rest`: its canonical `scheme://host:port`
    /// plus the rest as written, a lone `/` dropped, so `HTTPS://Api.Example.com.:0443/billing`
    /// is `https://api.example.com:443/billing`. URL-like text without a port is a URL, whose
    /// key is its origin. Any other label (`job:KIND`, an operator's own) is kept unchanged.
    public static func canonicalKey(_ key: String) -> String {
        guard let url = try? RequestURL(key, field: "destination") else { return key }
        guard url.hasExplicitPort, let separator = key.utf8.firstRange(of: "://".utf8) else { return url.destination }
        let afterScheme = key[separator.upperBound...]
        let restStart = afterScheme.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        guard let restStart else { return url.destination }
        let rest = key[restStart...]
        return rest == "/" ? url.destination : url.destination + rest
    }

    /// Validates a job URL (see ``RequestURL``); errors name `field`.
    @discardableResult
    public static func validateURL(_ url: String, field: String = "url") throws(ValidationError) -> RequestURL {
        try RequestURL(url, field: field)
    }

    /// Validates an explicit `destination` (any label that groups jobs for a
    /// breaker): not empty, at most ``maximumLength`` bytes, no whitespace or
    /// control characters. Returns it unchanged.
    @discardableResult
    public static func validate(_ destination: String, field: String = "destination") throws(ValidationError) -> String {
        guard !destination.isEmpty else { throw ValidationError(field: field, message: "must not be empty") }
        guard destination.utf8.count <= maximumLength else {
            throw ValidationError(field: field, message: "is longer than \(maximumLength) bytes")
        }
        guard !destination.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw ValidationError(field: field, message: "\(Quoting.quote(destination)) contains whitespace or control characters")
        }
        return destination
    }
}
