import CourierCLI
import CourierCore

/// A failure of a jobctl command, with the exit code the contract gives it:
/// 1 runtime failure, 2 bad usage or input, 3 nothing matched.
public struct ControlError: Error, CustomStringConvertible, Sendable {
    public var exitCode: Int32
    public var description: String

    public static func runtime(_ message: String) -> ControlError { ControlError(exitCode: 1, description: message) }
    public static func badInput(_ message: String) -> ControlError { ControlError(exitCode: 2, description: message) }
    public static func notFound(_ message: String) -> ControlError { ControlError(exitCode: 3, description: message) }

    /// A validation error of an NDJSON field or SQL parameter, reported against the jobctl flag that set it.
    static func flag(_ error: ValidationError) -> ControlError {
        badInput("error: \(JobctlFlags.flag(forField: error.field)): \(error.message)")
    }
}

/// Which jobctl enqueue flag sets which `courier.enqueue` parameter.
enum JobctlFlags {
    static func flag(forField field: String) -> String {
        switch field {
        case "url": "--url"
        case "method": "--method"
        case "headers": "--header"
        case "body": "--data"
        case "queue": "--queue"
        case "priority": "--priority"
        case "run_at": "--run-at"
        case "max_attempts": "--max-attempts"
        case "deadline": "--deadline"
        case "idempotency_key": "--idempotency-key"
        case "unique_key": "--unique-key"
        case "destination": "--destination"
        case "timeout_ms": "--timeout"
        case "expect_content_type": "--expect-content-type"
        case "signing_secret": "--signing-secret"
        case "traceparent": "--traceparent"
        case "tracestate": "--tracestate"
        case "fairness_key": "--fairness-key"
        default: field
        }
    }
}
