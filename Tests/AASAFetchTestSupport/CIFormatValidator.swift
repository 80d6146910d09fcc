import Foundation

/// Checks the CI formats of `aasa-fetch` with python3 (`Resources/check_ci_formats.py`): SARIF
/// logs against OASIS's SARIF 2.1.0 JSON Schema (`Resources/sarif-schema-2.1.0.json`, with
/// `jsonschema`), JUnit documents parsed by `xml.etree` with their counts checked.
public enum CIFormatValidator {
    static var script: String {
        if let url = Bundle.module.url(forResource: "check_ci_formats", withExtension: "py", subdirectory: "Resources") {
            return url.path
        }
        return TestPaths.repository.appendingPathComponent("Tests/AASAFetchTestSupport/Resources/check_ci_formats.py").path
    }

    /// One answer per document: a JSON object with `problems` (and `suites` for JUnit).
    static func answers(_ mode: String, _ documents: [String]) throws -> [[String: Any]] {
        let requests = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-ci-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: requests) }
        var lines = ""
        for document in documents {
            lines += String(decoding: try JSONSerialization.data(withJSONObject: ["document": document]), as: UTF8.self) + "\n"
        }
        try Data(lines.utf8).write(to: requests)
        let output = try ChildProcess.run("/usr/bin/env", ["python3", script, mode, requests.path], timeout: .seconds(120))
        let answers = output.standardOutput.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        guard output.status == 0, answers.count == documents.count else {
            throw TestSupportError("the CI format checker did not run (status \(output.status)): \(output.standardError.suffix(2000))")
        }
        return answers
    }

    /// The schema violations of each SARIF log (empty lists when valid).
    public static func sarifProblems(_ documents: [String]) throws -> [[String]] {
        try answers("sarif", documents).map { $0["problems"] as? [String] ?? ["no answer"] }
    }

    /// Each JUnit document parsed: `problems` (empty when well formed) and `suites`, each with
    /// `name`, counts and `cases` (`classname`, `name`, `failure`, `error`, `skipped`, `systemOut`).
    public static func junit(_ documents: [String]) throws -> [[String: Any]] {
        try answers("junit", documents)
    }
}
