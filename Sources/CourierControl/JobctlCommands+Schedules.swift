import CourierCLI
import CourierCore

/// The `schedule` and `schedules` commands. Their job flags are `enqueue`'s own
/// declarations (one source), less the ones each run sets itself.
extension JobctlCommands {
    /// `enqueue` flags a schedule's job does not take: each run starts at its slot and
    /// gets the idempotency key `schedule:NAME:SLOT`.
    static let flagsSetByEachRun: Set<String> = ["run-at", "in", "deadline", "idempotency-key", "no-idempotency-key"]

    /// The job flags of `schedule add`: `--url` and the per-job flags of `enqueue`, as
    /// `enqueue` declares them, with `--within` meaning "after the slot".
    static let scheduleJobFlags: [ArgumentSpec] = (["url"] + enqueuePerJobFlags)
        .filter { !flagsSetByEachRun.contains($0) }
        .compactMap { name in enqueue.arguments.first { $0.long == name } }
        .map { spec in
            var spec = spec
            spec.exclusiveGroup = spec.long == "url" ? "job" : nil
            if spec.long == "within" { spec.help = "Give each run up to DURATION after its slot, then dead-letter it as 'deadline'." }
            if spec.long == "url" { spec.help = "The URL each run calls; http or https." }
            return spec
        } + [
            .option("kind", value: "KIND", help: "Instead of --url: a job for the Swift handler registered for KIND.",
                    exclusiveGroup: "job"),
            .option("args", value: "JSON", help: "The handler job's arguments, a JSON object (with --kind)."),
        ]

    static let missedPolicies = MissedRunPolicy.allCases.map(\.rawValue)

    static let scheduleRuleFlags: [ArgumentSpec] = [
        .option("cron", value: "'EXPR'", help: "A five-field cron expression (minute hour day-of-month month day-of-week) or a macro such as @hourly.",
                exclusiveGroup: "rule"),
        .option("every", value: "DURATION", help: "A fixed interval instead, at least 1s: runs at whole multiples of it since 1970.",
                exclusiveGroup: "rule"),
        .option("timezone", value: "TZ", help: "The IANA time zone the cron expression is read in."),
        .option("missed", value: "POLICY", help: "After all workers were down: run none of the missed slots, the latest one, or each (up to 1000).",
                allowedValues: missedPolicies),
    ]

    static let scheduleName = ArgumentSpec.positional("name", value: "NAME",
                                                      help: "The schedule's name: letters, digits, _ . : - (up to 128).")

    static let scheduleRules = """
        Cron: ranges (1-5), steps (*/15, 0-30/10), lists (1,15), names (MON, JAN), \
        @yearly, @monthly, @weekly, @daily, @hourly; when both day fields are \
        restricted, a day matches either (classic cron). A wall time skipped by a \
        daylight-saving change runs once at the end of the gap; one that occurs twice \
        runs once, the first time.

        Every worker runs the schedules; none owns them. Each run is a job with the \
        idempotency key schedule:NAME:SLOT (the slot in UTC), enqueued in the same \
        transaction that advances the schedule, so no slot runs twice.
        """

    static let schedules = CommandSpec(
        name: "schedules",
        abstract: "List the periodic job schedules.",
        discussion: "For each schedule: its rule, time zone, missed-run policy, whether it is paused, its next run and its job.",
        arguments: [json]
    )

    static func withoutDefaults(_ specs: [ArgumentSpec]) -> [ArgumentSpec] {
        specs.map { spec in
            var spec = spec
            spec.defaultValue = nil
            return spec
        }
    }

    static let schedule = CommandSpec(
        name: "schedule",
        abstract: "Add, change, inspect, pause and remove periodic job schedules.",
        subcommands: [
            CommandSpec(
                name: "add",
                abstract: "Add a schedule: a cron expression or interval, and the job each run enqueues.",
                discussion: scheduleRules + "\n\nTZ defaults to UTC; POLICY to 'one'.",
                arguments: [scheduleName] + withoutDefaults(scheduleRuleFlags) + scheduleJobFlags + [
                    .flag("paused", help: "Add the schedule paused."),
                    json,
                ],
                examples: [
                    "jobctl schedule add nightly-report --cron '0 2 * * *' \\\n    --timezone Europe/Berlin --url https://reports.example.com/run",
                    "jobctl schedule add poll-orders --every 5s --missed skip \\\n    --url https://api.example.com/orders/poll --method GET --within 5s",
                    "jobctl schedule add cleanup --cron @hourly \\\n    --kind cleanup.run --args '{\"days\": 30}'",
                ],
                constraints: [.atLeastOne(of: ["cron", "every"]), .atLeastOne(of: ["url", "kind"]),
                              .conflicts("kind", with: ["method", "header", "data", "expect-content-type"])]),
            CommandSpec(
                name: "update",
                abstract: "Change some of a schedule's settings or job fields; the others stay.",
                discussion: """
                    A new --cron, --every or --timezone makes the next run be computed \
                    anew from now. Job flags change the job of the runs still to come.
                    """,
                arguments: [scheduleName] + withoutDefaults(scheduleRuleFlags) + withoutDefaults(scheduleJobFlags) + [json]),
            CommandSpec(
                name: "show",
                abstract: "Show a schedule, its next runs and its last runs with their jobs' outcomes.",
                discussion: "Outcomes: available, running, succeeded, dead:<reason>, or gone (pruned). Exits 3 for an unknown name.",
                arguments: [
                    scheduleName,
                    .option("next", value: "N", help: "How many next runs to show.", defaultValue: "5"),
                    .option("runs", value: "N", help: "How many last runs to show (at most 100 are kept).", defaultValue: "10"),
                    json,
                ]),
            CommandSpec(name: "pause", abstract: "Pause a schedule: no runs until it is resumed.",
                        arguments: [scheduleName, json]),
            CommandSpec(name: "resume", abstract: "Resume a schedule from its next slot after now; the paused slots are not run.",
                        arguments: [scheduleName, json]),
            CommandSpec(name: "remove", abstract: "Remove a schedule and its run history; the jobs it enqueued stay.",
                        arguments: [scheduleName, json]),
            CommandSpec(
                name: "apply",
                abstract: "Make the set of schedules equal to a file's: add, update and remove.",
                discussion: """
                    FILE (or standard input for '-') is a JSON array of schedules, or one \
                    schedule per line (NDJSON). Each has name, cron or every (a duration \
                    such as 30s), and job (the fields of courier.enqueue or kind and args, \
                    without run_at, deadline and idempotency_key; within_ms for a deadline \
                    after the slot); optionally timezone (UTC), missed (one) and paused \
                    (when left out, a schedule's paused state is kept). Schedules not in \
                    the file are removed. All in one transaction, or nothing at the first \
                    bad entry.
                    """,
                arguments: [
                    .positional("file", value: "FILE", help: "The file of schedules, or '-' for standard input."),
                    .flag("dry-run", help: "Print what would change, and change nothing."),
                    json,
                ],
                examples: [
                    "jobctl schedule apply deploy/schedules.json --dry-run",
                ]),
        ]
    )
}
