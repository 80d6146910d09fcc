import AASAFetchTestSupport
import Foundation
import Testing

/// Runs the built `aasa-fetch` binary and decodes its JSON.
enum ToolRunner {
    /// The `aasa-fetch` executable next to the test bundle (built by `swift build --build-tests`).
    static var binary: String {
        var candidates: [String] = []
        if let arg0 = CommandLine.arguments.first {
            var dir = URL(fileURLWithPath: arg0).deletingLastPathComponent()
            candidates.append(dir.appendingPathComponent("aasa-fetch").path)
            // Inside an .xctest bundle on some layouts.
            dir.deleteLastPathComponent()
            candidates.append(dir.appendingPathComponent("aasa-fetch").path)
        }
        candidates.append(TestPaths.repository.appendingPathComponent(".build/debug/aasa-fetch").path)
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[candidates.count - 1]
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// stdout parsed as a JSON object.
        func json() throws -> [String: Any] {
            let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
            return try #require(object as? [String: Any], "stdout is not a JSON object: \(stdout.prefix(300))")
        }
    }

    /// Runs the tool. Unless `cache` (a store folder) is given, it gets a fresh throwaway store
    /// (`AASA_FETCH_CACHE`), so runs never share state nor touch the repository's `cache/`.
    /// `environment` adds variables (`TMPDIR`).
    static func run(_ arguments: [String], cache: String? = nil, environment extra: [String: String] = [:],
                    timeout: Duration = .seconds(60)) throws -> Result {
        var environment = ["NO_COLOR": "1"].merging(extra) { _, given in given }
        var scratch: URL?
        if let cache {
            environment["AASA_FETCH_CACHE"] = cache
        } else {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-store-\(UUID().uuidString)")
            environment["AASA_FETCH_CACHE"] = folder.path
            scratch = folder
        }
        defer { if let scratch { try? FileManager.default.removeItem(at: scratch) } }
        let output = try ChildProcess.run(binary, arguments, environment: environment, timeout: timeout)
        return Result(status: output.status, stdout: output.standardOutput, stderr: output.standardError)
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The domain record for a host in a fetch report.
    func domain(_ host: String) -> [String: Any]? {
        (self["domains"] as? [[String: Any]])?.first { $0["host"] as? String == host }
    }

    /// The codes of a record's findings.
    var findingCodes: [String] {
        (self["findings"] as? [[String: Any]])?.compactMap { $0["code"] as? String } ?? []
    }
}
