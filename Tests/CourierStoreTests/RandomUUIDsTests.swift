@testable import CourierStore
import Foundation
import Testing

@Suite struct RandomUUIDsTests {
    @Test func keysAreVersionFourUUIDsAndDoNotRepeat() {
        var generator = RandomUUIDs()
        var seen = Set<String>()
        // More keys than one 4 KiB pool holds, so refills are exercised too.
        for _ in 0..<10_000 {
            let text = generator.withNext { String(decoding: $0, as: UTF8.self) }
            #expect(text.utf8.count == 36)
            guard let uuid = UUID(uuidString: text) else {
                Issue.record("not a UUID: \(text)")
                continue
            }
            #expect(uuid.uuidString.lowercased() == text, "lower case, canonical")
            #expect(Array(text)[14] == "4", "version 4: \(text)")
            #expect("89ab".contains(Array(text)[19]), "RFC 4122 variant: \(text)")
            seen.insert(text)
        }
        #expect(seen.count == 10_000)
    }
}
