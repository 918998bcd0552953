import CourierCLI
import CourierCore

/// `jobctl destinations`, `jobctl destination set|reset|pause|resume` and `jobctl queue
/// pause|resume`: destination traffic control (caps, rates, slow start, retry budgets, pause).
extension JobctlCommands {
    static let destinations = CommandSpec(
        name: "destinations",
        abstract: "Show destinations: their policies, jobs in flight and waiting, recent rate and breaker.",
        discussion: """
            Lists every destination with a policy, a breaker, running jobs or attempts \
            in the last minute: its concurrency cap (MAX), rate and burst, slow start, \
            retry budget, whether it is paused, jobs in flight now and waiting, the \
            recent request rate (attempts per second over the last minute or two), its \
            breaker's state, and its default signing secret NAME ('-' means none). The \
            JSON adds the fleet-wide counters: claims through the gated claim, waits \
            for a slot, waits for a token and deferred retries. Workers follow a policy \
            change within seconds.
            """,
        arguments: [json]
    )

    /// The traffic policy flags of `destination set`, named once for the spec and its constraint.
    static let trafficPolicyFlags = ["max-in-flight", "rate", "burst", "slow-start", "retry-budget"]

    static let destinationCommand = CommandSpec(
        name: "destination",
        abstract: "Set, clear, pause or resume a destination's policy for the whole fleet.",
        discussion: """
            DESTINATION is normalised as enqueue derives destinations: a URL \
            becomes scheme://host:port (https://API.example.com/hooks is \
            https://api.example.com:443); any other label is kept as written. \
            A sub-key is written after an explicit port \
            (https://api.example.com:443/billing): set declares it, and only \
            then may enqueuers file jobs under it; pausing or resuming an origin \
            pauses or resumes every sub-key declared under it, and an origin's \
            limits count and spend its sub-keys' requests too. A sub-key's own \
            limits hold within its origin's.
            """,
        subcommands: [
            CommandSpec(
                name: "set",
                abstract: "Set some of a destination's policy; what is not given stays as it is.",
                discussion: """
                    Limits hold for the whole fleet, however many workers run. \
                    --max-in-flight caps the requests in flight at once (exactly: \
                    never above it). --rate limits how many start per second (a token \
                    bucket of --burst tokens, default a tenth of the rate and at least \
                    1): in any second at most rate + burst start. --slow-start ramps \
                    the requests in flight from 1 after the breaker closes or a pause \
                    ends, over that long: up to --max-in-flight (with a cap the \
                    default is 5s; 0s turns it off) or, without a cap and only when \
                    given, up to the fleet's slots (the live workers' --concurrency \
                    added up), with no limit after. --retry-budget lets retries be at most that \
                    share of the last minute's requests (at least 3 a minute); the rest \
                    wait. Jobs waiting for a slot, a token or the budget use no attempt \
                    and no worker slot, and never delay other destinations' jobs. A \
                    destination's Retry-After and breaker still apply on top.

                    --signing-secret NAME signs the destination's jobs that have no \
                    signing secret of their own with the secret NAME (read by each \
                    worker from COURIER_SECRET_NAME or its --secrets-dir). A job's own \
                    --signing-secret wins.

                    --propagate-trace sends the destination's requests with the W3C \
                    traceparent (the attempt's span as parent) and tracestate headers \
                    of the job's trace context; --no-propagate-trace stops it. Off by \
                    default: a partner may not want to see them.
                    """,
                arguments: [
                    destination,
                    .option("max-in-flight", value: "N", help: "The most requests in flight at once, 1 to 100000."),
                    .option("rate", value: "N/s", help: "The most requests started per second (20/s, 300/m, 1000/h)."),
                    .option("burst", value: "N", help: "The token bucket's size, 1 to 1000000."),
                    .option("slow-start", value: "DURATION",
                            help: "How long requests in flight ramp from 1 after an outage or pause, up to the cap or, without one, the fleet's slots (at most 24h)."),
                    .option("retry-budget", value: "PERCENT", help: "Retries at most this share of recent requests, 0 to 100 (20 or 20%)."),
                    .option("signing-secret", value: "NAME",
                            help: "The default signing secret NAME of the destination's jobs."),
                    .flag("propagate-trace", help: "Send traceparent and tracestate headers on the destination's requests."),
                    .flag("no-propagate-trace", help: "Stop sending them (the default)."),
                    json,
                ],
                examples: [
                    "jobctl destination set https://api.partner.example \\\n    --max-in-flight 10 --rate 50/s --retry-budget 20%",
                    "jobctl destination pause https://api.partner.example",
                    "jobctl destination set https://partner.example.com \\\n    --signing-secret PARTNER_WEBHOOKS",
                ],
                constraints: [.atLeastOne(of: trafficPolicyFlags + ["signing-secret", "propagate-trace", "no-propagate-trace"]),
                              .conflicts("propagate-trace", with: ["no-propagate-trace"])]),
            CommandSpec(
                name: "reset",
                abstract: "Clear a destination's whole policy (limits, pause, signing secret); exit 3 when it had none.",
                arguments: [destination, json]),
            CommandSpec(
                name: "pause",
                abstract: "Pause a destination: its waiting jobs wait, using no attempts; running ones finish.",
                arguments: [destination, json]),
            CommandSpec(
                name: "resume",
                abstract: "Resume a paused destination (a capped one ramps up over its slow start).",
                arguments: [destination, json]),
        ]
    )

    static let queuePauseCommands = [
        CommandSpec(
            name: "pause",
            abstract: "Pause a queue for the whole fleet: no job of it starts; running ones finish, waiting ones use no attempts.",
            arguments: [queueName, json]),
        CommandSpec(
            name: "resume",
            abstract: "Resume a paused queue.",
            arguments: [queueName, json]),
    ]
}
