import CourierCLI
import CourierCore
import CourierStore

/// The commands that find and steer jobs: `list`, `retry`, `update` and `cancel`.
extension JobctlCommands {
    /// The states `list --state` takes: where a job can be, and `all`.
    static let listStates = JobsTable.ListedState.allCases.map(\.rawValue) + ["all"]

    /// The job filters shared by `list` and `cancel`.
    static let jobFilters: [ArgumentSpec] = [
        .option("queue", value: "QUEUE", help: "Only jobs on this queue.", repeatable: true),
        .option("destination", value: "DEST",
                help: "Only jobs for this destination: scheme://host:port, a URL, or host:port (http and https).",
                repeatable: true),
        .option("kind", value: "KIND", help: "Only jobs of this kind (http, or a Swift handler's name).", repeatable: true),
        .option("url-prefix", value: "PREFIX", help: "Only jobs whose URL starts with PREFIX."),
        .option("fairness-key", value: "KEY",
                help: "Only jobs of this fairness key (waiting, running and dead: the archive of succeeded jobs keeps no key).",
                repeatable: true),
        .option("since", value: "TIME", help: "Only jobs enqueued at or after TIME."),
        .option("until", value: "TIME", help: "Only jobs enqueued before TIME."),
    ]

    static let jobFilterNames = jobFilters.map(\.long)

    static let destinationRule = """
        --destination is normalised as enqueue derives destinations \
        (http://127.0.0.1:8000/ is http://127.0.0.1:8000; 127.0.0.1:8000 means it \
        on http or https); a destination that no job, dead letter or breaker uses \
        is named as such.
        """

    static let list = CommandSpec(
        name: "list",
        abstract: "List jobs, by id, waiting and running unless --state says otherwise.",
        discussion: """
            Says how many matched when it shows fewer ("50 of 2,146 shown"; counts \
            stop at \(JobsTable.listCountCap.formatted()), "more than ..."), and how \
            to see the next page: --after the last id shown. With --json the array \
            is printed as ever and the note goes to standard error. Exits 3 when \
            nothing matched.

            --state available, running, succeeded (within the workers' retention), \
            dead, or all; give it several times for several.

            \(destinationRule)

            \(filterRule)

            \(timeSyntax)
            """,
        arguments: [
            .option("state", value: "STATE", help: "Only jobs in this state.", allowedValues: listStates, repeatable: true),
        ] + jobFilters + [
            .option("after", value: "ID", help: "Only jobs with an id above ID (the next page)."),
            .option("limit", short: "n", value: "N", help: "Show at most N jobs.", defaultValue: "50"),
            json,
        ],
        examples: [
            "jobctl list --state dead --destination api.example.com --since -1h",
            "jobctl list --state all --url-prefix https://api.example.com/v2/ --after 2146",
        ]
    )

    static let cancel = CommandSpec(
        name: "cancel",
        abstract: "Cancel jobs, by id or by filter.",
        discussion: """
            A cancelled job goes to the dead letters with reason 'cancelled'. A \
            running job's request is aborted by its worker within a second. Exits 3 \
            when no job matched.

            With filters instead of ids, every waiting or running job that matches \
            is cancelled; --dry-run prints how many would be, per state, and \
            changes nothing.

            \(destinationRule)

            \(filterRule)

            \(timeSyntax)
            """,
        arguments: [
            .positional("ids", value: "ID", help: "The ids of the jobs to cancel.", repeatable: true, required: false),
        ] + jobFilters + [
            .flag("dry-run", help: "Print how many jobs the filters match, and cancel nothing."),
            json,
        ],
        examples: ["jobctl cancel --queue imports --url-prefix https://old.example.com/ --dry-run"],
        constraints: [
            .atLeastOne(of: ["ids"] + jobFilterNames),
            .conflicts("ids", with: jobFilterNames),
        ]
    )

    static let retry = CommandSpec(
        name: "retry",
        abstract: "Run waiting jobs now, using no attempt.",
        discussion: """
            A job that waits for its start time or backs off after a failed attempt \
            becomes due now; its attempt count stays as it is. A job whose \
            destination's breaker is open still waits for the breaker. Running jobs \
            are left alone. Exits 3 when none of the ids is a waiting job.
            """,
        arguments: [
            .positional("ids", value: "ID", help: "The ids of the jobs to run now.", repeatable: true),
            json,
        ]
    )

    static let update = CommandSpec(
        name: "update",
        abstract: "Reschedule or reprioritise a waiting job.",
        discussion: """
            Changes what is given and leaves the rest. Running jobs cannot be \
            changed. Exits 3 when the id is not a waiting job.

            \(timeSyntax)
            """,
        arguments: [
            .positional("id", value: "ID", help: "The job's id."),
            .option("run-at", value: "TIME", help: "Run no earlier than TIME.", exclusiveGroup: "start"),
            .option("in", value: "DURATION", help: "Run no earlier than DURATION from now.", exclusiveGroup: "start"),
            .option("priority", value: "N", help: "The new priority; smaller runs first."),
            json,
        ],
        constraints: [.atLeastOne(of: ["run-at", "in", "priority"])]
    )
}
