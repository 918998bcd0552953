extension WorkerStateMachine {
    /// The destination holding the most of the worker's slots, and how many (ties: the
    /// first in text order); nil when the worker holds nothing.
    public var busiestDestination: (destination: String, count: Int)? {
        heldPerDestination.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }.map { ($0.key, $0.value) }
    }
}
