// TEMPORARY: an exact copy of shared domain types that live in CourierCore.
// The lead deletes this file at merge time; CourierHTTP then uses CourierCore's.

public struct HTTPHeader: Sendable, Equatable, Codable { public var name: String; public var value: String; public init(name: String, value: String) { self.name = name; self.value = value } }
public struct HTTPResponseSummary: Sendable, Equatable { public var status: Int; public var headers: [HTTPHeader]; public var bodyPrefix: [UInt8]; public var bodyTruncated: Bool
  public init(status: Int, headers: [HTTPHeader], bodyPrefix: [UInt8], bodyTruncated: Bool) { self.status = status; self.headers = headers; self.bodyPrefix = bodyPrefix; self.bodyTruncated = bodyTruncated } }
public enum TransportOutcome: Sendable, Equatable {
  case notSent(String)                          // DNS, connect refused, TLS: certainly not delivered
  case blocked(String)                          // SSRF guard or disallowed scheme: never sent, permanent
  case timedOut(connected: Bool, String)        // connected:false => certainly not delivered
  case connectionLost(String)                   // after the request was (maybe) sent
  case response(HTTPResponseSummary)
  case cancelled(maybeSent: Bool)               // aborted by task cancellation / shutdown
}
