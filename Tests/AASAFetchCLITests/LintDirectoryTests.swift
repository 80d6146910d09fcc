import AASAFetchCLI
import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `lint DIR` lints every association file inside the folder (its `.well-known` included) instead
/// of failing with Foundation's "(NSCocoaErrorDomain error 256.)"; a folder without any is a clear
/// error with a stable code; unreadable paths say why in words.
@Suite(.timeLimit(.minutes(1)))
struct LintDirectoryTests {
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/buy/*"}]}]}}"#
    static let bad = "{\"applinks\":{\"details\":[],}}"

    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-lint-dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    @Test func aFolderIsLintedFileByFile() throws {
        let site = try Self.folder()
        defer { try? FileManager.default.removeItem(at: site) }
        try Self.write(Self.good, to: site.appendingPathComponent("example.com/.well-known/apple-app-site-association"))
        try Self.write(Self.bad, to: site.appendingPathComponent("example.com/apple-app-site-association"))
        try Self.write(Self.good, to: site.appendingPathComponent("export/shop.example.net.json"))
        try Self.write("<html></html>", to: site.appendingPathComponent("example.com/index.html"))
        try Self.write(Self.bad, to: site.appendingPathComponent(".git/config.json"))

        let result = try ToolRunner.run(["lint", site.path, "--json"])
        #expect(result.status == 1, "one file has an error: \(result.stdout)\(result.stderr)")
        #expect(!result.stdout.contains("NSCocoaErrorDomain") && !result.stderr.contains("NSCocoaErrorDomain"))
        let report = try JSONDecoder().decode(LintReport.self, from: Data(result.stdout.utf8))
        let prefix = site.path + "/"
        #expect(report.files.map { String($0.path.dropFirst(prefix.count)) } == [
            "example.com/.well-known/apple-app-site-association",
            "example.com/apple-app-site-association",
            "export/shop.example.net.json",
        ])
        #expect(report.files.map(\.errors) == [0, 1, 0])
        #expect(report.unreadable == 0)

        let human = try ToolRunner.run(["lint", site.path])
        #expect(human.status == 1)
        #expect(human.stdout.contains(prefix + "example.com/apple-app-site-association\n  error invalid-json"), "\(human.stdout)")
    }

    @Test func aFolderWithoutAssociationFilesIsAClearError() throws {
        let empty = try Self.folder()
        defer { try? FileManager.default.removeItem(at: empty) }
        try Self.write("hello", to: empty.appendingPathComponent("readme.txt"))
        let result = try ToolRunner.run(["lint", empty.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("no-association-files"), "\(result.stderr)")
        #expect(result.stderr.contains(empty.path))
        #expect(!result.stderr.contains("NSCocoaErrorDomain"))

        let json = try ToolRunner.run(["lint", empty.path, "--json"])
        #expect(json.status == 2)
        let report = try JSONDecoder().decode(LintReport.self, from: Data(json.stdout.utf8))
        #expect(report.files.first?.readError?.code == "no-association-files")
    }

    @Test func unreadablePathsSayWhyInWords() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing.json").path
        let result = try ToolRunner.run(["lint", missing])
        #expect(result.status == 2)
        #expect(result.stderr.contains("file-unreadable"), "\(result.stderr)")
        #expect(result.stderr.lowercased().contains("no such file"), "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"))
    }
}
