import Testing

@Test func placeholderCompiles() { #expect(Bool(true)) }
