/// How an operator's destination filter (`jobctl list --destination`, `dead list
/// --destination`, `cancel --destination`) is read: normalised as enqueue derives
/// destinations, so `http://127.0.0.1:8000/`, `HTTP://127.0.0.1:8000` and
/// `127.0.0.1:8000` all find the jobs of `http://127.0.0.1:8000`.
extension Destination {
    /// The destinations `text` may mean, most likely first, without duplicates:
    /// - a URL (`scheme://...`) means its canonical key (``canonicalKey(_:)``, a sub-key when
    ///   written after a port) and the destination enqueue derives from it;
    /// - `host[:port]` without a scheme means that host on http and on https (default
    ///   ports written out when none is given);
    /// - the text as written is always included too, for labels given with `--destination`.
    public static func filterCandidates(_ text: String) -> [String] {
        var candidates: [String] = []
        func add(_ value: String) {
            if !candidates.contains(value) { candidates.append(value) }
        }
        if text.contains("://") {
            add(canonicalKey(text))  // a sub-key (`https://host:443/billing`) as stored
            if let derived = try? derive(fromURL: text) { add(derived) }
        } else if !text.isEmpty, !text.contains("/") || text.hasSuffix("/") {
            for scheme in ["http", "https"] {
                if let derived = try? derive(fromURL: scheme + "://" + text) { add(derived) }
            }
        }
        add(text)
        return candidates
    }
}
