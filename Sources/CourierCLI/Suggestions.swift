/// "Did you mean" suggestions based on edit distance.
enum Suggestions {
    /// The candidate closest to `input`, when it is close enough to be a likely typo
    /// or `input` is an unambiguous prefix of it.
    static func best(for input: String, among candidates: [String]) -> String? {
        let input = input.lowercased()
        guard !input.isEmpty else { return nil }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(input, candidate.lowercased())
            if best == nil || distance < best!.distance {
                best = (candidate, distance)
            }
        }
        if let best, best.distance <= max(2, input.count / 3) {
            return best.candidate
        }
        let prefixed = candidates.filter { $0.lowercased().hasPrefix(input) }
        if prefixed.count == 1 { return prefixed[0] }
        return nil
    }

    /// Levenshtein distance (insertions, deletions and substitutions cost 1).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
