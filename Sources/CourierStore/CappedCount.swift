/// A count that stops at a cap, so that no list or page ever counts a whole big table:
/// `value` is exact unless `capped`, which means "more than `value`". Each source reads
/// at most `cap + 1` rows.
public struct CappedCount: Sendable, Equatable, Encodable {
    public var value: Int
    public var capped: Bool

    /// Where `jobctl` lists and the dashboard stop counting ("more than 10,000"): counting
    /// 10,000 index entries takes a few milliseconds, 100,000 take tens (measured by
    /// bench/dashboard-bench.sh); past this a table's size is the planner's estimate.
    public static let defaultCap = 10_000

    public init(value: Int, capped: Bool) {
        self.value = value
        self.capped = capped
    }

    /// From a `count(*)` over at most `cap + 1` rows.
    public init(counted: Int, cap: Int) {
        self.init(value: min(counted, cap), capped: counted > cap)
    }
}
