import CourierCore
import Testing

@Suite struct LabelSelectionTests {
    @Test func keepsTheTopRankedKeysAndFoldsTheRestIntoOther() {
        let selection = LabelSelection(ranking: ["a": 5, "b": 9, "c": 1, "d": 9], limit: 2)
        #expect(selection.kept == ["b", "d"])
        #expect(selection.label(for: "a") == "other")
        let folded = selection.fold(["a": 1, "b": 2, "c": 3, "d": 4])
        #expect(folded.map(\.label) == ["b", "d", "other"])
        #expect(folded.map(\.value) == [2, 4, 4])
    }

    @Test func nothingFoldedMeansNoOtherSeries() {
        let selection = LabelSelection(ranking: ["a": 1], limit: 20)
        #expect(selection.fold(["a": 3]).map(\.label) == ["a"])
        #expect(LabelSelection(ranking: ["a": 1], limit: -1).kept.isEmpty)
    }

    @Test func tiesAreBrokenByNameSoTheSelectionIsStable() {
        let ranking = Dictionary(uniqueKeysWithValues: (0..<50).map { ("d\($0)", 1.0) })
        #expect(LabelSelection(ranking: ranking, limit: 3).kept == ["d0", "d1", "d10"])
    }
}

@Suite struct LogThrottleTests {
    @Test func letsOneLinePerKeyThroughPerInterval() {
        var throttle = LogThrottle(interval: .seconds(60))
        let start = ContinuousClock.now
        let first = throttle.allows("a", at: start)
        let again = throttle.allows("a", at: start + .seconds(30))
        let other = throttle.allows("b", at: start + .seconds(30))
        let later = throttle.allows("a", at: start + .seconds(61))
        #expect(first && !again && other && later)
    }

    @Test func remembersAtMostItsCapacity() {
        var throttle = LogThrottle(interval: .seconds(60), capacity: 2)
        let start = ContinuousClock.now
        let a = throttle.allows("a", at: start)
        let b = throttle.allows("b", at: start)
        let full = throttle.allows("c", at: start + .seconds(1))
        let forgotten = throttle.allows("c", at: start + .seconds(61))
        #expect(a && b)
        #expect(!full, "full of recent keys: refused, not grown")
        #expect(forgotten, "old keys are forgotten")
    }
}
