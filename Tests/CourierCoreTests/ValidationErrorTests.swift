import CourierCore
import Testing

@Suite struct ValidationErrorTests {
    @Test func descriptionNamesTheField() {
        let error = ValidationError(field: "max_attempts", message: "must be at least 1")
        #expect(error.description == "max_attempts: must be at least 1")
        #expect("\(error)" == "max_attempts: must be at least 1")
    }

    @Test func enumsParseNamingTheField() throws {
        #expect(try ErrorClass.parse("connection_lost") == .connectionLost)
        #expect(try DeadLetterReason.parse("invalid_response") == .invalidResponse)
        #expect(throws: ValidationError.self) { try ErrorClass.parse("Timeout") }
        do {
            _ = try DeadLetterReason.parse("gone", field: "--reason")
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "--reason")
            #expect(error.message.contains("\"gone\""))
            #expect(error.message.contains("ambiguous"))
        }
    }

    @Test func contractNamesAreStable() {
        #expect(ErrorClass.allCases.map(\.rawValue) == [
            "transport", "timeout", "connection_lost", "server", "throttled", "client",
            "invalid_response", "lease_expired", "cancelled",
        ])
        #expect(DeadLetterReason.allCases.map(\.rawValue) == [
            "permanent", "invalid_response", "exhausted", "deadline", "ambiguous", "cancelled",
        ])
        #expect(BreakerStateName.allCases.map(\.rawValue) == ["closed", "open", "half_open"])
    }

    @Test func breakerFailureClasses() {
        let counted = ErrorClass.allCases.filter(\.countsAsBreakerFailure)
        #expect(counted == [.transport, .timeout, .connectionLost, .server])
    }
}
