import Foundation

/// One entry of a job's attempt history (`courier.jobs.errors`, moved into
/// `courier.dead_letters.errors`). Messages never contain header values.
public struct AttemptRecord: Sendable, Equatable, Codable {
    public var attempt: Int
    /// An error class from the contract (`transport`, `timeout`, ...).
    public var errorClass: String
    public var status: Int?
    public var message: String
    /// ISO 8601 time the attempt started, as the database wrote it.
    public var startedAt: String?
    public var durationMilliseconds: Int?
    public var worker: String?

    public init(attempt: Int, errorClass: String, status: Int?, message: String,
                startedAt: String?, durationMilliseconds: Int?, worker: String?) {
        self.attempt = attempt
        self.errorClass = errorClass
        self.status = status
        self.message = message
        self.startedAt = startedAt
        self.durationMilliseconds = durationMilliseconds
        self.worker = worker
    }

    enum CodingKeys: String, CodingKey {
        case attempt, errorClass = "class", status, message, startedAt = "started_at"
        case durationMilliseconds = "duration_ms", worker
    }

    /// Decodes a stored history; an unreadable history becomes empty rather than hiding the job.
    static func decodeHistory(_ json: String) -> [AttemptRecord] {
        (try? JSONDecoder().decode([AttemptRecord].self, from: Data(json.utf8))) ?? []
    }
}
