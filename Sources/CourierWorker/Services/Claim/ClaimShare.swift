/// How one claim round's slots are shared between the gated claim (destinations with a
/// traffic policy) and the plain claim (everything else), so neither can starve the other.
///
/// Why: the gated claim used to go first and the round ended when it filled the batch. A
/// policy that does not bind (a retry budget alone, a cap at or above the fleet's slots, a
/// rate above what the destination achieves) fills every batch, so a priority -100 job of
/// another destination waited for the whole backlog. Now each claim is offered its share
/// first, and what one leaves unused goes to the other in the same round:
///   1. the gated claim up to ``gatedShare``;
///   2. the plain claim up to its share plus whatever the gated claim left;
///   3. the gated claim again for what the plain claim left, if the first gated claim
///      came back full (it may have more).
/// With an odd number of free slots the odd one alternates between the two, round by
/// round, so a worker with one free slot serves both in turn. A value type, tested alone.
struct ClaimShare: Sendable, Equatable {
    /// Whether the gated claim gets the odd slot of the next round.
    private(set) var oddSlotToGated = true

    /// The gated claim's share of `free` slots for this round (the plain claim's is the rest),
    /// and advances the odd slot's turn.
    mutating func gatedShare(of free: Int) -> Int {
        let share = free / 2 + (free % 2 == 1 && oddSlotToGated ? 1 : 0)
        if free % 2 == 1 { oddSlotToGated.toggle() }
        return share
    }

    /// What the gated claim may take again after the plain claim, or 0: only when its first
    /// claim came back full, and only what is left.
    static func gatedTopUp(free: Int, gatedShare: Int, gatedTaken: Int, plainTaken: Int) -> Int {
        guard gatedTaken == gatedShare else { return 0 }
        return max(0, free - gatedTaken - plainTaken)
    }
}
