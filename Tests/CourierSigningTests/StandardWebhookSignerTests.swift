@testable import CourierSigning
import Foundation
import Testing

@Suite struct StandardWebhookSignerTests {
    static let specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let specBody = Array(#"{"test": 2432232314}"#.utf8)
    static let specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

    @Test func theSpecificationsTestVector() throws {
        let secret = try WebhookSecret(parsing: Self.specSecret, name: "SPEC")
        let signature = StandardWebhookSigner.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330,
                                                        body: Self.specBody, secret: secret)
        #expect(signature == Self.specSignature)
    }

    @Test func theThreeHeadersCarryTheIdTimestampAndSignature() throws {
        let secret = try WebhookSecret(parsing: Self.specSecret, name: "SPEC")
        let headers = StandardWebhookSigner.headers(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330,
                                                    body: Self.specBody, secret: secret)
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers.map(\.value) == ["msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", Self.specSignature])
    }

    @Test func hmacIsLibcryptosSHA256() {
        // RFC 4231, test case 2.
        let mac = StandardWebhookSigner.hmacSHA256(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(mac.map { String(format: "%02x", $0) }.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func aRotationSignsWithEverySecretInOrder() throws {
        let second = "whsec_" + Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()
        let both = try WebhookSecret(parsing: Self.specSecret + " " + second, name: "ROTATING")
        #expect(both.keys.count == 2)
        let id = "msg_1", timestamp: Int64 = 1_700_000_000
        let body = Array("héllo wörld ✓".utf8)
        let combined = StandardWebhookSigner.signature(id: id, timestamp: timestamp, body: body, secret: both)
        let first = StandardWebhookSigner.signature(id: id, timestamp: timestamp, body: body,
                                                    secret: try WebhookSecret(parsing: Self.specSecret, name: "A"))
        let other = StandardWebhookSigner.signature(id: id, timestamp: timestamp, body: body,
                                                    secret: try WebhookSecret(parsing: second, name: "B"))
        #expect(combined == first + " " + other)
        #expect(first != other)
        // Extra spaces or a trailing newline (a file written by hand) change nothing.
        let padded = try WebhookSecret(parsing: "  " + Self.specSecret + "   " + second + "\n", name: "ROTATING")
        #expect(padded == both)
    }

    @Test func theSignatureCoversEveryByte() throws {
        let secret = try WebhookSecret(parsing: Self.specSecret, name: "SPEC")
        let base = StandardWebhookSigner.signature(id: "a", timestamp: 1, body: Array("x".utf8), secret: secret)
        #expect(base != StandardWebhookSigner.signature(id: "b", timestamp: 1, body: Array("x".utf8), secret: secret))
        #expect(base != StandardWebhookSigner.signature(id: "a", timestamp: 2, body: Array("x".utf8), secret: secret))
        #expect(base != StandardWebhookSigner.signature(id: "a", timestamp: 1, body: Array("y".utf8), secret: secret))
        #expect(StandardWebhookSigner.signature(id: "a", timestamp: 1, body: [], secret: secret).hasPrefix("v1,"))
    }

    @Test(arguments: [
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",            // no prefix
        "whsec_",                                       // nothing after it
        "whsec_not base64!",                            // not base64
        "whsec_MfKQ9",                                  // a length base64 cannot have
        "",                                             // empty
        "   ",                                          // only spaces
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw Bearer-abc", // one good, one bad
    ])
    func malformedSecretsAreRefusedNamingTheSecretNeverTheValue(value: String) {
        do {
            _ = try WebhookSecret(parsing: value, name: "PARTNER_HOOKS")
            Issue.record("accepted a malformed secret")
        } catch {
            let text = String(describing: error)
            #expect(text.contains("PARTNER_HOOKS"))
            #expect(text.contains("malformed"))
            for part in value.split(separator: " ") where part.count >= 4 && part != "whsec_" {
                #expect(!text.contains(part), "the message must not quote the value: \(text)")
            }
        }
    }

    @Test func paddingMayBeLeftOut() throws {
        let key = Data((0..<32).map { UInt8($0) }).base64EncodedString()   // 44 characters, one '='
        #expect(key.hasSuffix("="))
        let padded = try WebhookSecret(parsing: "whsec_" + key, name: "P")
        let bare = try WebhookSecret(parsing: "whsec_" + key.trimmingCharacters(in: CharacterSet(charactersIn: "=")), name: "P")
        #expect(padded == bare)
        #expect(padded.keys == [(0..<32).map { UInt8($0) }])
    }

    @Test func aSecretNeverDescribesItsKeys() throws {
        let secret = try WebhookSecret(parsing: Self.specSecret, name: "SPEC")
        #expect(!String(describing: secret).contains("MfKQ9r8G"))
        #expect(!String(reflecting: secret).contains("MfKQ9r8G"))
    }
}
