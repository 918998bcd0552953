import CourierCLI
import CourierCore
import CourierStore

/// The declaration of every `jobctl` command and flag. Parsing, validation and
/// help are derived from it (see `CourierCLI`); command implementations read
/// the values by these names.
///
/// Positional keys: `show` and `dead show` use `id`; `cancel`, `dead replay`
/// and `dead purge` use `ids`; `breaker open|close|reset` use `destination`.
public enum JobctlCommands {
    /// `jobctl`, with every subcommand.
    public static let root = CommandSpec(
        name: "jobctl",
        abstract: "Operate a Courier job queue: migrate the schema, enqueue and inspect jobs, replay dead letters, control circuit breakers.",
        discussion: """
            Every command reads the database location from --database-url or \
            DATABASE_URL (a libpq URI or key=value conninfo; the PG* variables work \
            too, as in libpq). Commands that print data take --json.

            Exit codes: 0 success; 1 runtime failure, such as an unreachable \
            database; 2 bad usage or bad input; 3 nothing matched, such as an \
            unknown id.
            """,
        arguments: [databaseURL],
        subcommands: [migrate, enqueue, list, show, cancel, retry, update, stats, dead, breakers, breaker, queues, queue, destinations,
                      destinationCommand, tenants, tenantCommand, schedules, schedule, workers, dashboard, devdb]
    )

    // MARK: - Shared arguments

    static let databaseURL = ArgumentSpec.option(
        "database-url", value: "URL",
        help: "The database: a libpq URI or key=value conninfo. The PG* variables apply too, as in libpq.",
        environmentVariable: "DATABASE_URL", isGlobal: true)

    static let json = ArgumentSpec.flag("json", help: "Print machine-readable JSON.")

    static let filterRule = """
        A filter given several times matches any of its values; different \
        filters must all match.
        """

    static let timeSyntax = """
        TIME is an RFC 3339 time (2024-05-01T12:00:00Z), a date (2024-05-01, \
        midnight UTC), 'now', or an offset from now such as +30m or -12h. \
        Durations are written 250ms, 30s, 5m, 2h or 1h30m.
        """

    static let reasons = DeadLetterReason.allCases.map(\.rawValue)

    static let errorClasses = ErrorClass.allCases.map(\.rawValue)

    /// The dead-letter filters shared by `dead list` and `dead replay`.
    static let deadLetterFilters: [ArgumentSpec] = [
        .option("reason", value: "REASON", help: "Only dead letters with this reason.",
                allowedValues: reasons, repeatable: true),
        .option("destination", value: "DEST",
                help: "Only this destination: scheme://host:port, a URL, or host:port (http and https).",
                repeatable: true),
        .option("queue", value: "QUEUE", help: "Only this queue.", repeatable: true),
        .option("class", value: "CLASS", help: "Only dead letters whose last attempt failed with this error class.",
                allowedValues: errorClasses, repeatable: true),
        .option("status", value: "CODE", help: "Only dead letters whose last attempt got this HTTP status.",
                repeatable: true),
        .option("since", value: "TIME", help: "Only dead letters that failed at or after TIME."),
        .option("until", value: "TIME", help: "Only dead letters that failed before TIME."),
    ]

    static let deadLetterFilterNames = deadLetterFilters.map(\.long)

    // MARK: - Commands

    static let migrate = CommandSpec(
        name: "migrate",
        abstract: "Create or upgrade the courier schema.",
        discussion: """
            Applies the pending migrations under an advisory lock, so it is safe to \
            run repeatedly and from several processes at once. The migrations are \
            built into jobctl, so it works from any directory.
            """,
        arguments: [
            .flag("print", help: "Print the SQL of the pending migrations instead of applying it."),
            json,
        ]
    )

    static let enqueuePerJobFlags = [
        "method", "header", "data", "queue", "priority", "run-at", "in", "max-attempts", "deadline", "within",
        "idempotency-key", "no-idempotency-key", "unique-key", "destination", "timeout", "expect-content-type",
        "signing-secret", "fairness-key",
    ]

    static let enqueue = CommandSpec(
        name: "enqueue",
        abstract: "Enqueue an HTTP job, or many from NDJSON.",
        discussion: """
            Prints the new job's id. While a job with the same --unique-key, \
            enqueued by the same database role, is waiting or running, prints that \
            job's id instead of adding another.

            Every job carries an idempotency key, generated unless --idempotency-key \
            gives one, and sent as the Idempotency-Key header on every attempt and \
            every replay. --no-idempotency-key enqueues a job without one: if its \
            method is not idempotent, a failure that may have reached the server \
            then sends it to the dead letters as 'ambiguous' instead of repeating it.

            --signing-secret NAME signs every attempt as Standard Webhooks do \
            (webhook-id, webhook-timestamp, webhook-signature headers) with the \
            secret NAME, which the worker reads from COURIER_SECRET_NAME or its \
            --secrets-dir; only the name is stored. Without it, the destination's \
            default applies (see 'jobctl destination set').

            With --ndjson, each line of FILE (or of standard input) is a JSON object \
            with the fields of courier.enqueue: \(EnqueueRequest.jsonFieldNames.joined(separator: ", ")). Lines are strict JSON \
            (RFC 8259: no trailing commas, no field given twice); a body that is not \
            a string is sent as its JSON text, exactly as written. The file is \
            enqueued all or nothing; an error names the line and the field. Prints \
            how many jobs were enqueued.

            \(timeSyntax)
            """,
        arguments: [
            .option("url", value: "URL", help: "The URL to call; http or https.", exclusiveGroup: "source"),
            .option("ndjson", value: "FILE",
                    help: "Enqueue one job per line of FILE, or of standard input when FILE is '-' or left out.",
                    exclusiveGroup: "source", implicitValue: "-"),
            .option("method", short: "X", value: "METHOD", help: "The HTTP method.", defaultValue: "POST"),
            .option("header", short: "H", value: "'NAME: VALUE'", help: "A request header.", repeatable: true),
            .option("data", short: "d", value: "TEXT|@FILE", help: "The request body, or @FILE to read it from a file."),
            .option("queue", value: "QUEUE", help: "The queue to put the job on.", defaultValue: "default"),
            .option("priority", value: "N", help: "Smaller runs first; negative numbers are allowed.", defaultValue: "0"),
            .option("run-at", value: "TIME", help: "Run no earlier than TIME.", exclusiveGroup: "start"),
            .option("in", value: "DURATION", help: "Run no earlier than DURATION from now.", exclusiveGroup: "start"),
            .option("max-attempts", value: "N",
                    help: "Attempts before the job goes to the dead letters as 'exhausted'.",
                    defaultValue: String(JobDefaults.maxAttempts)),
            .option("deadline", value: "TIME",
                    help: "Give up once TIME has passed: the job goes to the dead letters as 'deadline'.",
                    exclusiveGroup: "deadline"),
            .option("within", value: "DURATION", help: "Give up once DURATION from now has passed.",
                    exclusiveGroup: "deadline"),
            .option("idempotency-key", value: "KEY", help: "The idempotency key to send; generated when not given.",
                    exclusiveGroup: "idempotency"),
            .flag("no-idempotency-key", help: "Enqueue the job without an idempotency key (see above).",
                  exclusiveGroup: "idempotency"),
            .option("unique-key", value: "KEY",
                    help: "While a job of this database role with this key is waiting or running, return its id instead of adding another."),
            .option("destination", value: "DEST",
                    help: "The circuit-breaker key; scheme://host:port of the URL when not given."),
            .option("timeout", value: "DURATION", help: "The request timeout of each attempt."),
            .option("expect-content-type", value: "TYPE",
                    help: "Treat a 2xx response of another content type as 'invalid_response', e.g. application/json."),
            .option("signing-secret", value: "NAME",
                    help: "Sign each attempt with the secret NAME (Standard Webhooks); the destination's default when not given."),
            .option("fairness-key", value: "KEY",
                    help: "The tenant the job works for: a queue's keys share its workers by weight (jobctl tenant set); the default key when not given."),
            .option("traceparent", value: "TRACEPARENT",
                    help: "The W3C traceparent of the span enqueuing the job (00-TRACEID-SPANID-FLAGS): its attempts' spans link to it."),
            .option("tracestate", value: "TRACESTATE", help: "The W3C tracestate that goes with --traceparent."),
            json,
        ],
        examples: [
            "jobctl enqueue --url https://api.example.com/hooks \\\n    -H 'Content-Type: application/json' --data '{\"event\": \"signup\"}'",
            "jobctl enqueue --url https://api.example.com/sync/42 --method PUT \\\n    --in 5m --within 2h --unique-key sync-42 \\\n    --expect-content-type application/json",
            "jobctl enqueue --ndjson jobs.ndjson",
            "generate-jobs | jobctl enqueue --ndjson --json",
        ],
        constraints: [
            .atLeastOne(of: ["url", "ndjson"]),
            .conflicts("ndjson", with: enqueuePerJobFlags + ["traceparent", "tracestate"]),
        ]
    )

    static let show = CommandSpec(
        name: "show",
        abstract: "Show a job, waiting, running, succeeded or dead, with its attempts.",
        discussion: """
            Succeeded jobs stay visible for the workers' retention period (24h by \
            default). Exits 3 when no job has this id.
            """,
        arguments: [
            .positional("id", value: "ID", help: "The job's id."),
            json,
        ]
    )

    static let stats = CommandSpec(
        name: "stats",
        abstract: "Show queue depth, throughput, retries, breakers and live workers.",
        discussion: """
            Depth per queue and state; throughput; attempts by error class; retries \
            and jobs that succeeded after a retry; the distribution of retry delays; \
            circuit breakers; live workers; schedules (paused, and failing: unable to \
            run, see 'jobctl schedules').

            --watch on a terminal draws on the alternate screen, fitted to the \
            terminal's size: a headline first (waiting, running, throughput, \
            workers, breakers, dead letters), then the queue table, then the \
            details as far as they fit. When standard output is not a terminal it \
            prints plain frames one after another, without escape codes.
            """,
        arguments: [
            .flag("watch", short: "w", help: "Refresh the view in place until interrupted."),
            .option("interval", value: "DURATION", help: "How often --watch refreshes.", defaultValue: "2s"),
            .option("frames", value: "N", help: "With --watch, stop after N frames."),
            json,
        ]
    )

    // MARK: dead

    static let dead = CommandSpec(
        name: "dead",
        abstract: "Inspect, replay and purge dead letters.",
        discussion: """
            A job goes to the dead letters when it will not be retried \
            automatically. Reasons: permanent (a 4xx that retrying cannot fix), \
            invalid_response (a 2xx whose body breaks the job's expectation), \
            exhausted (max attempts used), deadline (the job's deadline passed), \
            ambiguous (the request may have been delivered and the job is not safe \
            to repeat), cancelled.
            """,
        subcommands: [deadList, deadShow, deadReplay, deadPurge]
    )

    static let deadList = CommandSpec(
        name: "list",
        abstract: "List dead letters, newest first.",
        discussion: """
            Says how many matched when it shows fewer ("50 of 2,146 shown"; with \
            --json the note goes to standard error).

            \(destinationRule)

            \(filterRule)

            \(timeSyntax)
            """,
        arguments: deadLetterFilters + [
            .option("id", value: "ID", help: "Only the dead letter with this id.", repeatable: true),
            .option("limit", short: "n", value: "N", help: "Show at most N dead letters.", defaultValue: "50"),
            json,
        ]
    )

    static let deadShow = CommandSpec(
        name: "show",
        abstract: "Show a dead letter with its request and full attempt history.",
        discussion: """
            ID is the dead letter's id, as 'dead list' prints it, or the job's id \
            when no dead letter has that id (a note says so); --job ID is always \
            the job's id. Exits 3 when nothing has this id.
            """,
        arguments: [
            .positional("id", value: "ID", help: "The dead letter's id, as 'dead list' prints it (or the job's).",
                        required: false, exclusiveGroup: "which"),
            .option("job", value: "ID", help: "The job's id, as 'list' and 'show' print it.", exclusiveGroup: "which"),
            json,
        ],
        constraints: [.atLeastOne(of: ["id", "job"])]
    )

    static let deadReplay = CommandSpec(
        name: "replay",
        abstract: "Enqueue dead letters again, paced, keeping their idempotency keys.",
        discussion: """
            Choose dead letters by id, with --all, or with the filters of 'dead \
            list'. Each replayed job keeps the original idempotency key, so \
            receivers can deduplicate, and starts with fresh attempts. A dead letter \
            is replayed once: replaying it again does nothing unless --force is \
            given. A job keeps its deadline if that is still ahead of its new start \
            time; otherwise it gets a new one, as long after the new start as the \
            original deadline was after the original enqueue.

            --rate spreads the new jobs' start times, so the pace holds across the \
            whole fleet of workers. Replayed jobs still wait while their \
            destination's circuit breaker is open. --dry-run prints how many dead \
            letters would be replayed per destination, and changes nothing.

            --all leaves out dead letters with reason 'cancelled', since a person \
            cancelled those on purpose; --include-cancelled takes them too, and \
            --reason cancelled replays only them.

            Filters that match nothing left to replay print 'replayed 0 dead \
            letters' and exit 0, so a replay can safely run again; ids of which \
            none can be replayed (unknown, or replayed before) exit 3.

            \(filterRule)

            \(timeSyntax)
            """,
        arguments: [
            .positional("ids", value: "ID", help: "The ids of the dead letters to replay.", repeatable: true,
                        required: false, exclusiveGroup: "selection"),
            .flag("all", help: "Replay every dead letter not replayed yet, except cancelled ones.", exclusiveGroup: "selection"),
        ] + deadLetterFilters + [
            .option("limit", short: "n", value: "N", help: "Replay at most N dead letters."),
            .option("rate", value: "RATE",
                    help: "Replay at most RATE jobs, like 20/s, 300/m or 1000/h; a bare number is per second."),
            .flag("dry-run", help: "Print what would be replayed, per destination, and change nothing."),
            .flag("force", help: "Replay dead letters that were replayed before, too."),
            .flag("include-cancelled",
                  help: "With --all, replay cancelled dead letters too (someone cancelled them on purpose)."),
            json,
        ],
        examples: [
            "jobctl dead replay --destination https://api.example.com:443 \\\n    --since -12h --dry-run",
            "jobctl dead replay --destination https://api.example.com:443 \\\n    --since -12h --rate 20/s",
            "jobctl dead replay 1041 1042 1043",
            "jobctl dead replay --all --rate 300/m --json",
        ],
        constraints: [
            .atLeastOne(of: ["ids", "all"] + deadLetterFilterNames),
            .conflicts("all", with: deadLetterFilterNames),
            .conflicts("include-cancelled", with: ["ids"] + deadLetterFilterNames),
        ]
    )

    static let deadPurge = CommandSpec(
        name: "purge",
        abstract: "Delete dead letters by id or by age.",
        arguments: [
            .positional("ids", value: "ID", help: "The ids of the dead letters to delete.", repeatable: true,
                        required: false, exclusiveGroup: "selection"),
            .option("older-than", value: "DURATION", help: "Delete the dead letters that failed more than DURATION ago.",
                    exclusiveGroup: "selection"),
            json,
        ],
        constraints: [.atLeastOne(of: ["ids", "older-than"])]
    )

    // MARK: breakers

    static let breakers = CommandSpec(
        name: "breakers",
        abstract: "Show every destination's circuit breaker.",
        discussion: """
            For each destination: state (closed, open or half_open), since when, \
            failure counts, the next probe time and the number of jobs waiting.
            """,
        arguments: [json]
    )

    static let destination = ArgumentSpec.positional(
        "destination", value: "DESTINATION", help: "The destination, as scheme://host:port.")

    static let breaker = CommandSpec(
        name: "breaker",
        abstract: "Open, close or reset a destination's circuit breaker by hand.",
        subcommands: [
            CommandSpec(
                name: "open",
                abstract: "Open the breaker: hold the destination's jobs until it is closed or reset.",
                discussion: "A breaker opened by hand stays open, without probes, until it is closed or reset.",
                arguments: [destination, json]),
            CommandSpec(
                name: "close",
                abstract: "Close the breaker: let the destination's jobs run again.",
                arguments: [destination, json]),
            CommandSpec(
                name: "reset",
                abstract: "Return the breaker to automatic operation, closed, with its counts cleared.",
                arguments: [destination, json]),
        ]
    )

    // MARK: queue settings

    static let queues = CommandSpec(
        name: "queues",
        abstract: "Show the retry settings and priority head start set per queue for the whole fleet.",
        discussion: """
            Each row overrides the workers' own flags (--backoff, --backoff-base, \
            --backoff-cap, --jitter, --retry-after-cap) for the jobs of one queue; \
            '-' means the worker's flag applies. Workers read the settings every 10 \
            seconds. HEAD_START is the queue's priority head start ('-': priority is \
            strict), which every claim reads.
            """,
        arguments: [json]
    )

    static let queueName = ArgumentSpec.positional("queue", value: "QUEUE", help: "The queue's name.")

    static let queue = CommandSpec(
        name: "queue",
        abstract: "Set or clear a queue's retry settings and priority head start, or pause and resume it, for the whole fleet.",
        subcommands: [
            CommandSpec(
                name: "set",
                abstract: "Set some of a queue's retry settings or its priority head start; the ones not given stay as they are.",
                discussion: """
                    A worker that finds a queue's settings inconsistent (a base longer \
                    than the cap, with the cap from its own --backoff-cap when the queue \
                    sets none) keeps its own flags for that queue. With \
                    --priority-head-start D the queue's due jobs (within each fairness key) \
                    are claimed in the order of run_at + priority x D, so no stream of \
                    better-priority jobs starves a worse one: a job of priority p is passed \
                    only by jobs of priority q due less than (p - q + 1) x D after it. It \
                    holds from the next claim (docs/fairness.md).
                    """,
                arguments: [
                    queueName,
                    .option("backoff", value: "STRATEGY", help: "How the delay between attempts grows.",
                            allowedValues: BackoffPolicy.Strategy.allCases.map(\.rawValue)),
                    .option("backoff-base", value: "DURATION",
                            help: "The delay before the first retry, and the step of linear backoff (at most 24h)."),
                    .option("backoff-cap", value: "DURATION", help: "The longest delay between attempts (at most 7 days)."),
                    .option("backoff-multiplier", value: "X", help: "The growth factor of exponential backoff, 1 to 100."),
                    .option("jitter", value: "MODE", help: "How retry delays are randomized.",
                            allowedValues: BackoffPolicy.Jitter.allCases.map(\.rawValue)),
                    .option("retry-after-cap", value: "DURATION",
                            help: "The longest wait a destination's Retry-After can impose (at most 7 days)."),
                    .option("priority-head-start", value: "DURATION",
                            help: "The head start each point of priority buys (1ms to 24h): a job waits behind better-priority jobs only until the gap's head start has passed. Unset, priority is strict."),
                    .flag("no-priority-head-start", help: "Make the queue's priority strict again."),
                    json,
                ],
                constraints: [.atLeastOne(of: ["backoff", "backoff-base", "backoff-cap", "backoff-multiplier", "jitter",
                                               "retry-after-cap", "priority-head-start", "no-priority-head-start"]),
                              .conflicts("priority-head-start", with: ["no-priority-head-start"])]),
            CommandSpec(
                name: "reset",
                abstract: "Clear a queue's settings: its jobs follow each worker's flags again; exit 3 when it had none.",
                arguments: [queueName, json]),
        ] + queuePauseCommands
    )

    // MARK: destinations (specs in JobctlCommands+Traffic.swift)

    static let workers = CommandSpec(
        name: "workers",
        abstract: "List live workers and the jobs each holds.",
        discussion: "For each worker: id, host, pid, start time, last heartbeat and the jobs it holds.",
        arguments: [json]
    )

    // MARK: devdb

    static let devdb = CommandSpec(
        name: "devdb",
        abstract: "Run a private local PostgreSQL cluster for development.",
        discussion: """
            The cluster is made with the installed PostgreSQL server programs \
            (initdb, pg_ctl). It listens on a Unix socket in DIR/run, a directory \
            only its owner may enter (0700), and trusts connections there: it is for \
            development and tests only. Only when start is given --port does it listen \
            on 127.0.0.1 too, asking for a generated password, kept in DIR/run/pgpass \
            (a libpq PGPASSFILE). A directory that others can write, or that belongs \
            to another user, is refused. Run as root, the server runs as the \
            'postgres' user. The directory defaults to /tmp/courier-devdb-UID.
            """,
        arguments: [
            .option("dir", value: "DIR", help: "Where the cluster's files live.",
                    environmentVariable: "COURIER_DEVDB_DIR", isGlobal: true),
            .option("port", value: "PORT",
                    help: "The port; given to start, also listen on 127.0.0.1:PORT (with the password).",
                    defaultValue: String(DevDatabase.Configuration.defaultPort), isGlobal: true),
        ],
        subcommands: [
            CommandSpec(
                name: "start",
                abstract: "Create the cluster on first use, start it, and print the DATABASE_URL to use.",
                arguments: [
                    .flag("fast", help: "Turn off fsync and synchronous commit: faster and unsafe, for test suites."),
                ]),
            CommandSpec(name: "stop", abstract: "Stop the cluster; its data stays."),
            CommandSpec(
                name: "status",
                abstract: "Show whether the cluster is running, and its DATABASE_URL; exit 3 when it is not running.",
                arguments: [json]),
        ]
    )
}
