/// What a NOTIFY may make a worker do.
///
/// Any role that can connect may NOTIFY any channel (it needs no privilege), so a
/// notification is only ever a hint to look at the database: its payload is never
/// read. A `courier_cancel` notice makes the worker read `cancel_requested_at` for the
/// jobs it holds (set only by a role allowed to cancel); a `courier_jobs` notice makes
/// it try a claim. Pure, so the rule is tested without a database.
enum NotificationPolicy {
    /// The channels a worker listens on.
    static let channels = ["courier_jobs", "courier_cancel"]

    /// What to look at in the database.
    enum Look: Hashable {
        /// Claim: there may be new runnable jobs.
        case claim
        /// Read which held jobs an operator cancelled.
        case cancellations
    }

    /// The looks a batch of notifications calls for, each at most once however many
    /// arrived (a flood of notices costs one query). Only channel names are used.
    static func looks(forChannels channels: some Sequence<String>) -> Set<Look> {
        var looks = Set<Look>()
        for channel in channels {
            switch channel {
            case "courier_jobs": looks.insert(.claim)
            case "courier_cancel": looks.insert(.cancellations)
            default: break
            }
        }
        return looks
    }
}
