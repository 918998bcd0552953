/// A notification received on a LISTENed channel.
public struct PostgresNotification: Sendable, Hashable {
    public var channel: String
    public var payload: String
    /// The server process that sent it.
    public var backendPID: Int32

    public init(channel: String, payload: String, backendPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.backendPID = backendPID
    }
}
