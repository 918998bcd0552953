/// Bounded label cardinality for metrics keyed by an open-ended value (a destination, a
/// tenant): the `limit` keys ranked highest keep their own label value, every other key
/// is folded into one ``otherLabel`` series. Pure: the same ranking gives the same labels,
/// so several families built from one selection agree on which keys stand alone.
///
/// A key that is literally `"other"` and ranked among the kept ones is exported under
/// its own name and so shares the series with the folded rest; pick a limit and keys
/// where that cannot confuse (destinations are `scheme://host:port`).
public struct LabelSelection: Sendable, Equatable {
    /// The label value of every key that was not kept.
    public static let otherLabel = "other"

    /// The keys that keep their own label value.
    public let kept: Set<String>

    /// Keeps the `limit` keys with the highest rank (ties by key, ascending). A negative
    /// limit keeps none.
    public init(ranking: [String: Double], limit: Int) {
        let ordered = ranking.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        kept = Set(ordered.prefix(max(0, limit)).map(\.key))
    }

    /// The label value `key` is exported under.
    public func label(for key: String) -> String { kept.contains(key) ? key : Self.otherLabel }

    /// `values` with the keys not kept summed into one ``otherLabel`` entry (present only
    /// when some key was folded). Kept keys sort first by name, ``otherLabel`` last.
    public func fold(_ values: [String: Double]) -> [(label: String, value: Double)] {
        var own: [(label: String, value: Double)] = []
        var other = 0.0
        var folded = false
        for (key, value) in values {
            if kept.contains(key) {
                own.append((key, value))
            } else {
                other += value
                folded = true
            }
        }
        own.sort { $0.label < $1.label }
        if folded { own.append((Self.otherLabel, other)) }
        return own
    }
}
