@testable import CourierControl
import Testing

/// The progress line's arithmetic, without a clock.
@Suite("progress line")
struct ProgressLineTests {
    @Test(arguments: [
        (250, 1000, 5.0, "250/1000 replayed, 750 left, 50/s, ~15s left"),
        (1, 3, 2.0, "1/3 replayed, 2 left, 0.5/s, ~4s left"),
        (1000, 1000, 4.0, "1000/1000 replayed, 0 left, 250/s"),
        (0, 10, 0.0, "0/10 replayed, 10 left, 0/s"),
    ])
    func line(_ done: Int, _ total: Int, _ elapsed: Double, _ expected: String) {
        #expect(Progress.line(done: done, total: total, elapsed: elapsed, label: "replayed") == expected)
    }
}
