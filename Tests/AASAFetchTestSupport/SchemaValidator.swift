import Foundation

/// Validates the tool's JSON documents against the JSON Schemas in `docs/schema` with python3's
/// `jsonschema` (draft 2020-12, date-time formats checked; `Resources/validate_json.py`), many
/// documents per run of the interpreter.
public enum SchemaValidator {
    /// `docs/schema` in the repository.
    public static let schemaFolder = TestPaths.repository.appendingPathComponent("docs/schema")

    /// One document to check: the schema's name (`fetch` for `docs/schema/fetch.schema.json`) and
    /// the text exactly as the tool printed it.
    public struct Document: Sendable {
        /// The schema's name.
        public var schema: String
        /// The document's text.
        public var text: String
        /// Where it came from, for messages.
        public var origin: String

        /// Creates a document.
        public init(schema: String, text: String, origin: String) {
            self.schema = schema
            self.text = text
            self.origin = origin
        }
    }

    static var script: String {
        if let url = Bundle.module.url(forResource: "validate_json", withExtension: "py", subdirectory: "Resources") {
            return url.path
        }
        return TestPaths.repository.appendingPathComponent("Tests/AASAFetchTestSupport/Resources/validate_json.py").path
    }

    /// Checks every document; returns one message per invalid document (empty when all are valid).
    /// Throws when the validator itself cannot run (python3 or jsonschema missing).
    public static func problems(in documents: [Document]) throws -> [String] {
        let requests = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-schema-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: requests) }
        var lines = ""
        for document in documents {
            let line = try JSONSerialization.data(withJSONObject: ["schema": document.schema, "document": document.text])
            lines += String(decoding: line, as: UTF8.self) + "\n"
        }
        try Data(lines.utf8).write(to: requests)
        let output = try ChildProcess.run("/usr/bin/env", ["python3", script, schemaFolder.path, requests.path], timeout: .seconds(120))
        let answers = output.standardOutput.split(separator: "\n").map(String.init)
        guard output.status == 0 || output.status == 1, answers.count == documents.count else {
            throw TestSupportError("the schema validator did not run (status \(output.status)): \(output.standardError.suffix(2000))")
        }
        return zip(documents, answers).compactMap { document, answer in
            answer == "ok" ? nil : "\(document.origin): \(answer)"
        }
    }
}
