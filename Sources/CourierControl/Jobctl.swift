import CourierCLI
import CourierCore
import CourierStore
import Foundation

/// The operator's command-line tool. `run` parses, dispatches and returns the
/// exit code, so tests drive it in-process exactly as the executable does.
public enum Jobctl {
    public static func run(_ arguments: [String], io: ControlIO) -> Int32 {
        // No command at all is a usage mistake: show what there is, on stderr, and exit 2.
        if arguments.isEmpty {
            if case .help(let text)? = try? CommandLineParser.parse(["--help"], root: JobctlCommands.root, environment: io.environment) {
                io.writeErr(text + "\n")
            }
            return 2
        }
        let command: ParsedCommand
        do {
            switch try CommandLineParser.parse(arguments, root: JobctlCommands.root, environment: io.environment) {
            case .run(let parsed): command = parsed
            case .help(let text), .version(let text):
                io.print(text)
                return 0
            }
        } catch {
            io.printError(error.description + "\n" + (error.helpHint.map { $0 + "\n" } ?? ""))
            return error.exitCode
        }
        do {
            try dispatch(command, io: io)
            return 0
        } catch let error as ControlError {
            if !error.description.isEmpty { io.printError(error.description + "\n") }
            return error.exitCode
        } catch let error as UsageError {
            io.printError(error.description + "\n")
            return error.exitCode
        } catch {
            // What the database said, by code: the store decides what a SQLSTATE means.
            let failure = StoreError.from(error)
            io.printError("error: \(failure)\n")
            switch failure.code {
            case .schemaMissing:
                // Undefined schema, table or function: the database was never migrated, or not to this version.
                io.printError("hint: the courier schema is missing or older than this jobctl: run 'jobctl migrate'\n")
                return 1
            case .badInput, .conflict:
                // A refused value (bad input caught by the database) is the caller's to fix.
                return 2
            default:
                return 1
            }
        }
    }

    static func dispatch(_ command: ParsedCommand, io: ControlIO) throws {
        switch command.path {
        case ["migrate"]: try migrate(command, io: io)
        case ["enqueue"]: try enqueue(command, io: io)
        case ["list"]: try list(command, io: io)
        case ["show"]: try show(command, io: io)
        case ["cancel"]: try cancel(command, io: io)
        case ["retry"]: try retry(command, io: io)
        case ["update"]: try update(command, io: io)
        case ["stats"]: try stats(command, io: io)
        case ["workers"]: try workers(command, io: io)
        case ["dead", "list"]: try deadList(command, io: io)
        case ["dead", "show"]: try deadShow(command, io: io)
        case ["dead", "replay"]: try deadReplay(command, io: io)
        case ["dead", "purge"]: try deadPurge(command, io: io)
        case ["breakers"]: try breakers(command, io: io)
        case ["breaker", "open"], ["breaker", "close"], ["breaker", "reset"]: try breaker(command, io: io)
        case ["queues"]: try queues(command, io: io)
        case ["queue", "set"]: try queueSet(command, io: io)
        case ["queue", "reset"]: try queueReset(command, io: io)
        case ["destinations"]: try destinations(command, io: io)
        case ["destination", "set"]: try destinationSet(command, io: io)
        case ["destination", "reset"]: try destinationReset(command, io: io)
        case ["destination", "pause"]: try destinationPause(command, io: io, paused: true)
        case ["destination", "resume"]: try destinationPause(command, io: io, paused: false)
        case ["tenants"]: try tenants(command, io: io)
        case ["tenant", "set"]: try tenantSet(command, io: io)
        case ["tenant", "reset"]: try tenantReset(command, io: io)
        case ["queue", "pause"]: try queuePause(command, io: io, paused: true)
        case ["queue", "resume"]: try queuePause(command, io: io, paused: false)
        case ["schedules"]: try schedulesList(command, io: io)
        case ["schedule", "add"]: try scheduleAdd(command, io: io)
        case ["schedule", "update"]: try scheduleUpdate(command, io: io)
        case ["schedule", "show"]: try scheduleShow(command, io: io)
        case ["schedule", "pause"], ["schedule", "resume"], ["schedule", "remove"]: try schedulePauseResumeRemove(command, io: io)
        case ["schedule", "apply"]: try scheduleApply(command, io: io)
        case ["dashboard"]: try dashboard(command, io: io)
        case ["devdb", "start"], ["devdb", "stop"], ["devdb", "status"]: try devdb(command, io: io)
        default:
            throw ControlError.badInput("error: '\(command.commandPath.joined(separator: " "))' is not available in this build")
        }
    }

    /// Connects to the database named by `--database-url`, `DATABASE_URL` or the `PG*` variables.
    static func connect(_ command: ParsedCommand, io: ControlIO) throws -> ControlStore {
        let configuration = DatabaseConfiguration.resolve(flag: command.value("database-url"), environment: io.environment)
        if let problem = ControlStore.connectionStringProblem(configuration.connectionString) {
            // The parser reads DATABASE_URL into the flag's value too: name both.
            throw ControlError.badInput("error: --database-url (or DATABASE_URL): \(problem)")
        }
        do {
            return try ControlStore.connect(DatabaseConfiguration(connectionString: configuration.connectionString,
                                                                  applicationName: "jobctl"))
        } catch {
            // libpq's message already says "connection to server ... failed"; do not repeat it.
            let message = (error as? StoreError)?.message ?? "\(error)"
            var text = "error: cannot connect to the database: \(message)"
            if configuration.connectionString.isEmpty && !io.environment.keys.contains(where: { $0.hasPrefix("PG") }) {
                text += "\nhint: no database was given, so libpq tried its default (the local system cluster); set DATABASE_URL or pass --database-url, or for a development database run: export DATABASE_URL=\"$(jobctl devdb start)\""
            }
            throw ControlError.runtime(text)
        }
    }

    /// Runs `body` on a fresh connection, closing it afterwards.
    static func withDatabase<T>(_ command: ParsedCommand, io: ControlIO, _ body: (ControlStore) throws -> T) throws -> T {
        let store = try connect(command, io: io)
        defer { store.close() }
        return try body(store)
    }

    static func migrate(_ command: ParsedCommand, io: ControlIO) throws {
        if command.flag("print") {
            // Without a reachable database, every migration is pending: print them all.
            let applied: [Int]
            do {
                applied = try withDatabase(command, io: io) { try $0.migrationsApplied() }
            } catch {
                io.printError("note: the database is not reachable, so this is every migration\n")
                applied = []
            }
            let pending = Migration.all.filter { !applied.contains($0.version) }
            io.print(pending.isEmpty ? "-- nothing to apply: the schema is up to date (\(Migration.all.count) migrations)"
                                     : Migrator.script(migrations: pending))
            return
        }
        let (applied, versions) = try withDatabase(command, io: io) { connection in
            (try connection.migrationsApply(), try connection.migrationsApplied())
        }
        let known = Set(Migration.all.map(\.version))
        let unknown = versions.filter { !known.contains($0) }
        if !unknown.isEmpty {
            io.printError("note: the database has migrations this jobctl does not know (\(unknown.map(String.init).joined(separator: ", "))): it is older than the schema; use the newer jobctl\n")
        }
        if command.flag("json") {
            try io.printJSON(["applied": applied.map(\.name)])
        } else if applied.isEmpty {
            io.print("schema is up to date (\(Migration.all.count) migrations)")
        } else {
            for migration in applied { io.print("applied \(migration.name)") }
        }
    }
}
