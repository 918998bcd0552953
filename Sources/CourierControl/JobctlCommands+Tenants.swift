import CourierCLI
import CourierCore
import CourierStore

/// `jobctl tenants` and `jobctl tenant set|reset`: the weights and caps of fairness keys (issue 42).
extension JobctlCommands {
    static let tenantKey = ArgumentSpec.positional("key", value: "KEY",
                                                   help: "The fairness key, as jobs name it (1 to 128 printable ASCII characters without spaces).")

    static let tenants = CommandSpec(
        name: "tenants",
        abstract: "Show fairness keys: their weight and cap, jobs running and waiting, busiest first.",
        discussion: """
            Lists every key with settings, running jobs or waiting jobs (at most 1,000, \
            busiest first; waiting counts stop at 10,000). A key without settings has \
            weight 1 and no cap. WAITING counts the jobs the fair claim may take: jobs \
            held by a breaker or waiting at a destination's traffic limits are not in it.
            """,
        arguments: [json]
    )

    static let tenantCommand = CommandSpec(
        name: "tenant",
        abstract: "Set or clear a fairness key's weight and cap for the whole fleet.",
        discussion: """
            Within a queue, workers share their starts between the keys that have \
            due jobs in proportion to their weights (jobs without a key share the \
            default key, weight 1): keys of weights 1, 2 and 4 get 1/7, 2/7 and 4/7 \
            of the starts while all three have jobs due. A key with nothing due takes \
            no share, and one that was idle starts again with its share, never a \
            catch-up burst. --max-in-flight caps the key's jobs running at once across \
            the fleet (exactly: never above it). Workers follow a change from their \
            next claim.
            """,
        subcommands: [
            CommandSpec(
                name: "set",
                abstract: "Set a key's weight or cap; what is not given stays as it is.",
                arguments: [
                    tenantKey,
                    .option("weight", value: "W",
                            help: "The key's share of its queues' starts against other keys', \(TenantsTable.weightRange.lowerBound) to \(TenantsTable.weightRange.upperBound) (default 1)."),
                    .option("max-in-flight", value: "N",
                            help: "The most jobs of the key running at once, \(TenantsTable.maxInFlightRange.lowerBound) to \(TenantsTable.maxInFlightRange.upperBound)."),
                    .flag("no-max-in-flight", help: "Remove the key's cap."),
                    json,
                ],
                examples: [
                    "jobctl tenant set customer-42 --weight 4",
                    "jobctl tenant set customer-7 --max-in-flight 20",
                ],
                constraints: [.atLeastOne(of: ["weight", "max-in-flight", "no-max-in-flight"]),
                              .conflicts("max-in-flight", with: ["no-max-in-flight"])]),
            CommandSpec(
                name: "reset",
                abstract: "Clear a key's settings (weight 1, no cap); exit 3 when it had none.",
                arguments: [tenantKey, json]),
        ]
    )
}
