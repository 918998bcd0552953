import Foundation

// courier-bench: Courier's benchmarks. Each subcommand measures one thing and appends
// JSON rows to --out; bench/run.sh runs them all (with the peers harness) and
// bench/report.py turns the rows into bench/RESULTS.md. Not a test: it prints figures.
//
//   courier-bench setup    [common]                         recreate and migrate the database
//   courier-bench enqueue  [common] --lines 100000 --sql-calls 10000 --reps 3
//   courier-bench drain    [common] --kind noop|http --jobs 100000 --workers 1,2 --concurrency 64,256 --reps 3 [--url URL]
//                          [--retention 0]   (the workers' --retention; 0: no success archive)
//   courier-bench pgbench  [common] --clients 1,2,4 --duration 5 --fill 600000 --batch 100 --reps 1 [--pgbench PATH]
//   courier-bench latency  [common] --jobs 500 --interval-ms 20 --reps 3
//                          [--scheduled-ahead 0]   (jobs waiting a day ahead in the same queue)
//   courier-bench memory   [common] --concurrency 256 --delay 10
//   courier-bench soak     [common] --minutes 30 --rate 5000 --workers 2 --concurrency 256 --retention 1m --sample 60
//                          [--hold-snapshot-seconds S] [--label L]  (a repeatable-read snapshot held for the first S seconds)
//                          steady enqueue + drain; per-sample throughput, claim lag, sizes, dead tuples, autovacuum runs
//   (drain also takes --hold-snapshot 1: a repeatable-read transaction held open across every drain, and
//    --tag NAME: rows marked for a section of their own, e.g. longtx, kept out of the drain tables)
//   courier-bench traffic  [common] --jobs 50000 --destinations 100 --waiting 10000 --reps 3
//                          (claim cost with capped destinations' backlogs against no policies, same run)
//   courier-bench fair     [common] --backlog 200000 --jobs 100 --interval-ms 100 --concurrency 64 --reps 3
//                          (a trickle destination's pickup behind another's backlog; no policies)
//   courier-bench tenants  [common] --flood 1000000 --flood-kind noop|http --trickle-keys 50 [--trickle-rate 50] --trickle-seconds 30 --workers 2 --concurrency 256
//                          --weighted-backlog 200000 --weighted-minutes 2 --weighted-delay-ms 50 --weighted-concurrency 64
//                          [--scenarios trickle,noisy,weighted] --reps 1
//                          (fairness keys, issue 42: a trickle's pickup on an empty queue and behind one key's flood;
//                           shares per minute of keys weighted 1:2:4 under full load)
//   (drain also takes --fairness-keys K: its jobs spread over K fairness keys, for the fair claim's cost)
//   courier-bench backlog  [common] --runnable 1000000 --waiting 9000000 --held-share 0.5 --workers 2 --concurrency 256 --loaders 2 --reps 1
//                          [--scenarios empty,backlog]
//                          drain of the runnable jobs with the waiting ones scheduled ahead / held, against an empty table
//   courier-bench outage   [common] --waiting 1000000 --open-seconds 600 --workers 2 --concurrency 256 --other-rate 200
//                          --other-delay-ms 500 --lease 10s --loaders 2
//                          one destination's breaker open over a big backlog: heartbeat delays, lease losses, hold/release times
//   courier-bench script                                    print the generated pgbench script
// common: --db NAME --bin-dir DIR --work-dir DIR --out FILE --pg-data DIR (PG* variables select the cluster)

func runBench(_ arguments: [String]) throws {
    guard let command = arguments.first else { throw BenchError("usage: courier-bench setup|enqueue|drain|pgbench|latency|memory|soak|backlog|outage|traffic|fair|tenants|script [options]") }
    let rest = arguments.dropFirst()
    let common = BenchContext.commonOptions
    switch command {
    case "script":
        print(PgbenchBench.script(), terminator: "")
    case "setup":
        try BenchContext(BenchOptions(rest, known: common)).createDatabase()
    case "enqueue":
        let options = try BenchOptions(rest, known: common + ["lines", "sql-calls", "reps"])
        let bench = EnqueueBench(context: try BenchContext(options), lines: try options.int("lines", default: 100_000),
                                 sqlCalls: try options.int("sql-calls", default: 10_000))
        for rep in 1...max(1, try options.int("reps", default: 3)) { try bench.run(rep: rep) }
    case "drain":
        let options = try BenchOptions(rest, known: common + ["kind", "jobs", "workers", "concurrency", "reps", "url", "retention", "hold-snapshot", "tag",
                                                              "fairness-keys"])
        guard let kind = DrainBench.Kind(rawValue: options.string("kind", default: "noop")) else { throw BenchError("--kind: noop or http") }
        let bench = DrainBench(context: try BenchContext(options), kind: kind,
                               jobs: try options.int("jobs", default: kind == .noop ? 100_000 : 50_000),
                               httpURL: options.string("url", default: "http://127.0.0.1:18080/ok"),
                               retention: options.optional("retention"),
                               holdSnapshot: options.optional("hold-snapshot").map { $0 != "0" && $0 != "false" } ?? false,
                               tag: options.optional("tag"), fairnessKeys: try options.int("fairness-keys", default: 0))
        guard bench.fairnessKeys >= 0, bench.fairnessKeys == 0 || kind == .noop else {
            throw BenchError("--fairness-keys: 0 or more, and only with --kind noop")
        }
        let reps = max(1, try options.int("reps", default: 3))
        for rep in 1...reps {
            for workers in try options.intList("workers", default: [1, 2]) {
                for concurrency in try options.intList("concurrency", default: [64, 256]) {
                    try bench.run(workers: workers, concurrency: concurrency, rep: rep)
                }
            }
        }
    case "pgbench":
        let options = try BenchOptions(rest, known: common + ["clients", "duration", "fill", "batch", "reps", "pgbench"])
        let bench = PgbenchBench(context: try BenchContext(options), batch: try options.int("batch", default: 100),
                                 duration: try options.int("duration", default: 5), fill: try options.int("fill", default: 600_000),
                                 pgbench: options.string("pgbench", default: "/usr/lib/postgresql/15/bin/pgbench"))
        for rep in 1...max(1, try options.int("reps", default: 1)) {
            for clients in try options.intList("clients", default: [1, 2, 4]) { try bench.run(clients: clients, rep: rep) }
        }
    case "soak":
        let options = try BenchOptions(rest, known: common + ["minutes", "seconds", "rate", "workers", "concurrency", "retention", "sample",
                                                                "hold-snapshot-seconds", "label"])
        let seconds = try options.optional("seconds").map { _ in try options.int("seconds", default: 60) }
            ?? 60 * (try options.int("minutes", default: 30))
        var soak = SoakBench(context: try BenchContext(options), seconds: seconds, rate: try options.int("rate", default: 5000),
                             workers: try options.int("workers", default: 2), concurrency: try options.int("concurrency", default: 256),
                             retention: options.string("retention", default: "1m"), sample: try options.int("sample", default: 60))
        soak.holdSnapshotSeconds = try options.int("hold-snapshot-seconds", default: 0)
        soak.label = options.optional("label")
        try soak.run()
    case "backlog":
        let options = try BenchOptions(rest, known: common + ["runnable", "waiting", "held-share", "workers", "concurrency", "loaders", "reps", "scenarios"])
        let scenarios = options.string("scenarios", default: BacklogBench.scenarios.joined(separator: ",")).split(separator: ",").map(String.init)
        guard !scenarios.isEmpty, scenarios.allSatisfy(BacklogBench.scenarios.contains) else {
            throw BenchError("--scenarios: a comma-separated list of \(BacklogBench.scenarios.joined(separator: ", "))")
        }
        let share = Double(options.string("held-share", default: "0.5"))
        guard let share, share >= 0, share <= 1 else { throw BenchError("--held-share: a number from 0 to 1") }
        let bench = BacklogBench(context: try BenchContext(options), runnable: try options.int("runnable", default: 1_000_000),
                                 waiting: try options.int("waiting", default: 9_000_000), heldShare: share,
                                 loaders: max(1, try options.int("loaders", default: 2)),
                                 workers: try options.int("workers", default: 2), concurrency: try options.int("concurrency", default: 256),
                                 scenarios: scenarios)
        for rep in 1...max(1, try options.int("reps", default: 1)) { try bench.run(rep: rep) }
    case "outage":
        let options = try BenchOptions(rest, known: common + ["waiting", "open-seconds", "workers", "concurrency", "other-rate",
                                                              "other-delay-ms", "lease", "loaders"])
        try OutageBench(context: try BenchContext(options), waiting: try options.int("waiting", default: 1_000_000),
                        openSeconds: try options.int("open-seconds", default: 600), workers: max(2, try options.int("workers", default: 2)),
                        concurrency: try options.int("concurrency", default: 256), otherRate: try options.int("other-rate", default: 200),
                        otherDelayMs: try options.int("other-delay-ms", default: 500), lease: options.string("lease", default: "10s"),
                        loaders: max(1, try options.int("loaders", default: 2))).run()
    case "latency":
        let options = try BenchOptions(rest, known: common + ["jobs", "interval-ms", "reps", "scheduled-ahead"])
        let bench = LatencyBench(context: try BenchContext(options), jobs: try options.int("jobs", default: 500),
                                 intervalMilliseconds: try options.int("interval-ms", default: 20),
                                 scheduledAhead: try options.int("scheduled-ahead", default: 0))
        guard bench.scheduledAhead >= 0 else { throw BenchError("--scheduled-ahead must be 0 or more") }
        for rep in 1...max(1, try options.int("reps", default: 3)) { try bench.run(rep: rep) }
    case "traffic":
        let options = try BenchOptions(rest, known: common + ["jobs", "destinations", "waiting", "reps"])
        let bench = TrafficBench(context: try BenchContext(options), jobs: try options.int("jobs", default: 50_000),
                                 destinations: try options.int("destinations", default: 100),
                                 waiting: try options.int("waiting", default: 10_000))
        for rep in 1...max(1, try options.int("reps", default: 3)) { try bench.run(rep: rep) }
    case "fair":
        let options = try BenchOptions(rest, known: common + ["backlog", "jobs", "interval-ms", "concurrency", "reps"])
        let bench = FairBench(context: try BenchContext(options), backlog: try options.int("backlog", default: 200_000),
                              jobs: try options.int("jobs", default: 100), intervalMilliseconds: try options.int("interval-ms", default: 100),
                              concurrency: try options.int("concurrency", default: 64))
        for rep in 1...max(1, try options.int("reps", default: 3)) { try bench.run(rep: rep) }
    case "tenants":
        let options = try BenchOptions(rest, known: common + ["flood", "flood-kind", "trickle-keys", "trickle-rate", "trickle-seconds", "workers", "concurrency",
                                                              "weighted-backlog", "weighted-minutes", "weighted-delay-ms",
                                                              "weighted-concurrency", "scenarios", "reps"])
        let scenarios = options.string("scenarios", default: TenantBench.scenarios.joined(separator: ",")).split(separator: ",").map(String.init)
        guard !scenarios.isEmpty, scenarios.allSatisfy(TenantBench.scenarios.contains) else {
            throw BenchError("--scenarios: a comma-separated list of \(TenantBench.scenarios.joined(separator: ", "))")
        }
        guard let floodKind = DrainBench.Kind(rawValue: options.string("flood-kind", default: "noop")) else {
            throw BenchError("--flood-kind: noop or http")
        }
        let bench = TenantBench(context: try BenchContext(options), flood: try options.int("flood", default: 1_000_000), floodKind: floodKind,
                                trickleKeys: try options.int("trickle-keys", default: 50),
                                trickleRate: try options.int("trickle-rate", default: try options.int("trickle-keys", default: 50)),
                                trickleSeconds: try options.int("trickle-seconds", default: 30),
                                workers: try options.int("workers", default: 2), concurrency: try options.int("concurrency", default: 256),
                                weightedBacklog: try options.int("weighted-backlog", default: 200_000),
                                weightedMinutes: try options.int("weighted-minutes", default: 2),
                                weightedDelayMilliseconds: try options.int("weighted-delay-ms", default: 50),
                                weightedConcurrency: try options.int("weighted-concurrency", default: 64), scenarios: scenarios)
        guard bench.trickleKeys >= 1, bench.trickleRate >= 1, bench.trickleSeconds >= 1, bench.weightedMinutes >= 1, bench.flood >= 1 else {
            throw BenchError("--flood, --trickle-keys, --trickle-seconds and --weighted-minutes must be 1 or more")
        }
        for rep in 1...max(1, try options.int("reps", default: 1)) { try bench.run(rep: rep) }
    case "memory":
        let options = try BenchOptions(rest, known: common + ["concurrency", "delay"])
        try MemoryBench(context: try BenchContext(options), concurrency: try options.int("concurrency", default: 256),
                        delaySeconds: try options.int("delay", default: 10)).run()
    default:
        throw BenchError("unknown subcommand '\(command)'")
    }
}

do {
    try runBench(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("courier-bench: \(error)\n".utf8))
    exit(1)
}
