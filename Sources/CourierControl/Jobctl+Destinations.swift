import CourierCLI
import CourierCore
import CourierStore
import Foundation
import Postgres

extension Jobctl {
    static func destinations(_ command: ParsedCommand, io: ControlIO) throws {
        let rows = try withDatabase(command, io: io) { try DestinationsTable.all(on: $0) }
        if command.flag("json") {
            try io.printJSON(rows)
            return
        }
        io.print(rows.isEmpty ? "no destination policies: every destination follows the defaults" : policyTable(rows))
    }

    static func destinationSet(_ command: ParsedCommand, io: ControlIO) throws {
        var changes = DestinationsTable.Policy(destination: try destinationArgument(command))
        if let name = command.value("signing-secret") {
            guard EnqueueRequest.isValidSecretName(name) else {
                throw ControlError.badInput("error: --signing-secret: \(EnqueueRequest.secretNameRule)")
            }
            changes.signingSecret = name
        }
        let stored = try withDatabase(command, io: io) { try DestinationsTable.merge(changes, on: $0) }
        if command.flag("json") {
            try io.printJSON(stored)
        } else {
            io.print(policyTable([stored]))
        }
    }

    static func destinationReset(_ command: ParsedCommand, io: ControlIO) throws {
        let destination = try destinationArgument(command)
        let removed = try withDatabase(command, io: io) { try DestinationsTable.remove(destination: destination, on: $0) }
        guard removed else {
            throw ControlError.notFound("error: destination '\(destination)' has no policy (see 'jobctl destinations')")
        }
        if command.flag("json") {
            try io.printJSON(["destination": destination, "policy": "cleared"])
        } else {
            io.print("\(destination): policy cleared; its jobs follow the defaults")
        }
    }

    /// DESTINATION as given; `courier.destination_set` and `destination_reset` normalise it.
    private static func destinationArgument(_ command: ParsedCommand) throws -> String {
        guard let destination = command.positionals("destination").first else {
            throw ControlError.badInput("error: DESTINATION: required (scheme://host:port or a URL)")
        }
        do throws(ValidationError) {
            return try Destination.validate(destination, field: "DESTINATION")
        } catch {
            throw ControlError.badInput("error: \(error)")
        }
    }

    private static func policyTable(_ rows: [DestinationsTable.Policy]) -> String {
        var table = TextTable(["DESTINATION", "SIGNING_SECRET", "UPDATED"])
        for row in rows {
            table.add([row.destination, row.signingSecret ?? "-", row.updatedAt.map(Timestamp.format) ?? "-"])
        }
        return table.render()
    }
}
