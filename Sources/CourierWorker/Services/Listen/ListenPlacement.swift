/// Whether the worker's listener may trust LISTEN on the connection it got, decided
/// afresh for every new listening connection. A pure function of two facts.
///
/// Behind a transaction-mode pooler (PgBouncer's `pool_mode = transaction`) a LISTEN
/// registers on whichever server connection the pooler lent for that one statement, and
/// the notifications go to whoever holds it next, or nowhere. The worker cannot tell the
/// pool mode from its side, so a pooled connection that the operator did not name for
/// listening is not trusted: the worker polls (`--poll-interval`) and learns of
/// cancellations at each heartbeat instead. `--listen-database-url` names a direct
/// connection (or a session-mode pool) to listen on.
enum ListenPlacement: Equatable, Sendable {
    /// LISTEN on this connection.
    case listen
    /// LISTEN on this connection, though it is pooled: the operator named it, so it must be
    /// direct or session-mode; say so once.
    case listenWarningPooled
    /// Do not LISTEN; poll.
    case poll

    static func decide(listenURLGiven: Bool, connectionIsPooled: Bool) -> ListenPlacement {
        switch (listenURLGiven, connectionIsPooled) {
        case (_, false): return .listen
        case (true, true): return .listenWarningPooled
        case (false, true): return .poll
        }
    }
}
