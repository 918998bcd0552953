import Foundation
import Testing

/// CourierStore is the only door to PostgreSQL: no module above it imports the driver.
/// Package.swift lists `Postgres` only for the store, the test support and the tools
/// (courier-bench, courier-breaker-sim); this fails when another module's source
/// imports it anyway (SwiftPM would let a transitive import compile).
@Suite struct ModuleBoundaryTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
    static let mayImportPostgres: Set<String> = ["Postgres", "CourierStore", "CourierTestSupport", "courier-bench", "courier-breaker-sim"]

    @Test func onlyTheStoreTheTestSupportAndTheToolsImportPostgres() throws {
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).sorted()
        #expect(modules.contains("CourierControl") && modules.contains("CourierWorker"), "the sources were found")
        var offenders: [String] = []
        for module in modules where !Self.mayImportPostgres.contains(module) {
            let root = Self.sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: root.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
                let imports = text.split(whereSeparator: \.isNewline).contains { line in
                    let words = line.split(separator: " ")
                    return words.firstIndex(of: "import").map { $0 + 1 < words.count && words[$0 + 1] == "Postgres" } ?? false
                }
                if imports { offenders.append("\(module)/\(file)") }
            }
        }
        #expect(offenders.isEmpty, "import Postgres above the store: \(offenders)")
    }
}
