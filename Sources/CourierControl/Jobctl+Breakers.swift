import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    static func breakers(_ command: ParsedCommand, io: ControlIO) throws {
        let views = try withDatabase(command, io: io) { try $0.breakersList() }
        if command.flag("json") {
            try io.printJSON(views)
            return
        }
        var table = TextTable(["DESTINATION", "STATE", "SINCE", "FAILURES", "WINDOW", "NEXT_PROBE", "WAITING", "OPENED", "OPEN_FOR"])
        for v in views {
            let state = v.forced ? "\(v.state) (forced)" : v.state
            let next = v.nextProbeAt.map(Timestamp.format) ?? (v.notBefore.map { "not before " + Timestamp.format($0) } ?? "-")
            table.add([v.destination, state, Timestamp.format(v.since), String(v.consecutiveFailures),
                       "\(v.windowFailures)/\(v.windowFailures + v.windowSuccesses)", next, String(v.waitingJobs),
                       String(v.openedCount), DurationParser.format(.milliseconds(v.openMillisecondsTotal))])
        }
        io.print(views.isEmpty ? "no breakers yet: every destination is closed" : table.render())
    }

    static func breaker(_ command: ParsedCommand, io: ControlIO) throws {
        guard let destination = command.positionals("destination").first, !destination.isEmpty else {
            throw ControlError.badInput("error: DESTINATION: required (scheme://host:port, as 'jobctl breakers' shows)")
        }
        let action = BreakersTable.ForceAction(rawValue: command.path.last ?? "") ?? .reset
        let actor = "jobctl:\(ProcessInfo.processInfo.hostName)"
        let (known, before) = try withDatabase(command, io: io) { connection in
            (try connection.breakerIsKnown(destination: destination),
             try connection.breakerForce(destination: destination, action: action, actor: actor))
        }
        if !known {
            io.printError("warning: no breaker, waiting job or dead letter has destination '\(destination)'; destinations are written scheme://host:port, as 'jobctl breakers' shows\n")
        }
        let after = action == .open ? "open (forced: stays open until closed or reset)" : "closed"
        if command.flag("json") {
            try io.printJSON(["destination": destination, "from": before, "to": action == .open ? "open" : "closed"])
        } else {
            io.print("\(destination): \(before) -> \(after)")
        }
    }
}
