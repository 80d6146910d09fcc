import AASAFetchCLI
import AASAFetchCore
import AASAFetchTestSupport
import ArgumentParser
import Foundation
import Testing

struct LintDiffCommandTests {
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/buy/*"}]}]}}"#
    static let changed = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/shop/*"}]}]}}"#
    static let warnOnly = #"{"applinks":{"apps":["X"],"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/buy/*"}]}]}}"#
    static let bad = "{\"applinks\":{\"details\":[],}}"

    static func files(_ path: String) throws -> [UInt8] {
        switch path {
        case "good.json": Array(good.utf8)
        case "changed.json": Array(changed.utf8)
        case "warn.json": Array(warnOnly.utf8)
        case "bad.json": Array(bad.utf8)
        case "empty.json": Array("{}".utf8)
        default: throw CocoaError(.fileNoSuchFile)
        }
    }

    @Test func parsesLintArguments() throws {
        let command = try AASAFetchCommand.parseAsRoot(["lint", "a.json", "b.json", "--json", "--max-size", "1000"])
        let lint = try #require(command as? Lint)
        #expect(lint.files == ["a.json", "b.json"])
        #expect(lint.json)
        #expect(lint.maxSize == 1000)
        let defaults = try #require(try AASAFetchCommand.parseAsRoot(["lint", "x"]) as? Lint)
        #expect(defaults.maxSize == 131_072)
        #expect(!defaults.json)
        #expect(throws: (any Error).self) { try AASAFetchCommand.parseAsRoot(["lint", "x", "--max-size", "0"]) }
        #expect(throws: (any Error).self) { try AASAFetchCommand.parseAsRoot(["lint"]) }
    }

    @Test func parsesDiffArguments() throws {
        let diff = try #require(try AASAFetchCommand.parseAsRoot(["diff", "old.json", "new.json", "--json"]) as? Diff)
        #expect(diff.old == "old.json")
        #expect(diff.new == "new.json")
        #expect(diff.json)
        #expect(throws: (any Error).self) { try AASAFetchCommand.parseAsRoot(["diff", "only-one.json"]) }
    }

    @Test(arguments: [
        (["good.json"], nil as Int32?),
        (["warn.json"], nil),
        (["good.json", "bad.json"], Int32(1)),
        (["bad.json", "missing.json"], Int32(2)),
    ])
    func lintExitStatus(files: [String], status: Int32?) {
        let report = Lint.report(files: files, options: LintOptions(), read: Self.files)
        #expect(Lint.exitStatus(report)?.rawValue == status)
    }

    @Test func lintReportAndRendering() throws {
        let report = Lint.report(files: ["bad.json", "warn.json", "missing.json", "good.json"], options: LintOptions(), read: Self.files)
        #expect(report.errors == 1)
        #expect(report.warnings == 1)
        #expect(report.unreadable == 1)
        #expect(report.files.map(\.path) == ["bad.json", "warn.json", "missing.json", "good.json"])
        #expect(report.files[0].size == 28)
        #expect(report.files[0].findings.map(\.code) == ["invalid-json"])
        #expect(report.files[2].readError?.code == "file-unreadable")
        let lines = Lint.render(report, console: .standard)
        #expect(lines.contains { $0.hasPrefix("  error invalid-json 1:27: invalid JSON at line 1, column 27: trailing comma") })
        #expect(lines.contains { $0.hasPrefix("  warning apps-not-empty /applinks/apps: ") })
        #expect(lines.contains("    fix: Remove the comma after the last element."))
        #expect(lines.contains("  no problems"))
        #expect(lines.contains("  1 error, 0 warnings, 0 notes"))
        let json = try JSONOutput.string(report)
        let decoded = try JSONDecoder().decode(LintReport.self, from: Data(json.utf8))
        #expect(decoded == report)
        #expect(json.contains(#""location": "1:27","#))
        #expect(json.contains(#""line": 1,"#))
        #expect(json.contains(#""column": 27,"#))
        #expect(json.contains(#""readError": {"#))
        #expect(json.contains(#""readError": null"#))
        #expect(json.hasPrefix("{\n  \"schemaVersion\": 1,\n"))
    }

    @Test func diffReport() throws {
        let same = try Diff.report(old: "good.json", new: "good.json", read: Self.files)
        #expect(same.changed == false)
        #expect(Diff.exitStatus(same) == nil)
        #expect(Diff.render(same) == ["no semantic change"])

        let changed = try Diff.report(old: "good.json", new: "changed.json", read: Self.files)
        #expect(changed.changed == true)
        #expect(Diff.exitStatus(changed)?.rawValue == 1)
        #expect(
            Diff.render(changed) == [
                "rules-changed applinks ABCDE12345.com.example.app: applinks rules for ABCDE12345.com.example.app changed: 1 added, 1 removed (1 → 1 rules)",
                #"  - 1. {"/":"/buy/*"}"#,
                #"  + 1. {"/":"/shop/*"}"#,
            ])
        // Structured before and after values, not text.
        let json = try JSONOutput.string(changed)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let change = try #require((object["changes"] as? [[String: Any]])?.first)
        let before = try #require((change["before"] as? [[String: Any]])?.first)
        #expect(before["position"] as? Int == 1)
        #expect((before["component"] as? [String: Any])?["/"] as? String == "/buy/*")
        #expect(before["path"] is NSNull)

        for (old, new, code) in [
            ("missing.json", "good.json", "file-unreadable"), ("good.json", "bad.json", "invalid-json"), ("empty.json", "good.json", "not-an-association-file"),
        ] {
            #expect(throws: CommandFailure.self) { try Diff.report(old: old, new: new, read: Self.files) }
            do {
                _ = try Diff.report(old: old, new: new, read: Self.files)
            } catch {
                #expect(error.code == code)
                #expect(error.status.rawValue == 2)
            }
        }
        do {
            _ = try Diff.report(old: "good.json", new: "bad.json", read: Self.files)
        } catch {
            #expect(error.message == "bad.json:1:27: trailing comma before '}' (the comma at 1:26 must go)")
        }
    }

    // MARK: The built binary, once

    static var binary: URL? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("aasa-fetch"),
            TestPaths.repository.appendingPathComponent(".build-document/debug/aasa-fetch"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    func run(_ arguments: [String]) throws -> (status: Int32, stdout: String) {
        let process = Process()
        guard let binary = Self.binary else { throw CocoaError(.fileNoSuchFile) }
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ["NO_COLOR": "1"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(.enabled(if: binary != nil, "the aasa-fetch binary is not built"))
    func binaryExitCodes() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-lint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["good.json", "changed.json", "warn.json", "bad.json"] {
            try Data(try Self.files(name)).write(to: folder.appendingPathComponent(name))
        }
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

        #expect(try run(["lint", path("good.json")]).status == 0)
        #expect(try run(["lint", path("warn.json")]).status == 0)
        let bad = try run(["lint", "--json", path("bad.json")])
        #expect(bad.status == 1)
        let report = try JSONDecoder().decode(LintReport.self, from: Data(bad.stdout.utf8))
        #expect(report.files.first?.findings.first?.code == "invalid-json")
        #expect(try run(["lint", path("good.json"), path("nope.json")]).status == 2)
        #expect(try run(["diff", path("good.json"), path("good.json")]).status == 0)
        let diff = try run(["diff", "--json", path("good.json"), path("changed.json")])
        #expect(diff.status == 1)
        #expect(diff.stdout.contains(#""kind": "rules-changed""#))
        #expect(try run(["diff", path("good.json"), path("bad.json")]).status == 2)
        #expect(try run(["lint", "--max-size", "x", path("good.json")]).status == 64)
    }
}
