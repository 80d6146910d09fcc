import AASAFetchCore
import ArgumentParser
import Foundation

/// `aasa-fetch diff OLD NEW [--json]`: what changed in meaning between two association files.
///
/// Formatting, key order, comments and the `details` form are ignored (see ``AASADiff``).
///
/// Human output (stdout): one line per change, `kind service appID: description`, followed by
/// `- ` lines (before) and `+ ` lines (after) where useful; `no semantic change` otherwise.
///
/// Each file is read up to `--max-size` bytes (default 128 KiB, Apple's limit); a larger one is
/// `file-too-large` (exit 2) and is not parsed.
///
/// `--json` output (stdout):
/// ```json
/// {
///   "old": "old.json", "new": "new.json", "changed": true,
///   "changes": [
///     {"kind": "app-added", "service": "applinks", "appID": "ABCDE12345.com.example.app",
///      "description": "ABCDE12345.com.example.app added to applinks"},
///     {"kind": "rules-changed", "service": "applinks", "appID": "…", "description": "…",
///      "before": "2. {\"/\":\"/old/*\"}", "after": "2. {\"/\":\"/new/*\"}"}
///   ]
/// }
/// ```
/// When an input cannot be used, `changed` is absent, `changes` is empty and `error` is
/// `{"file": "new.json", "code": "file-unreadable" | "file-too-large" | "invalid-json" | "not-an-association-file",
/// "message": "…"}` (the message is also written to standard error).
///
/// Exit status: 0 no semantic change, 1 changes found, 2 an input is unreadable, not JSON or
/// not an association file.
public struct Diff: AsyncParsableCommand {
    /// The command's name, help and exit-status documentation.
    public static let configuration = CommandConfiguration(
        abstract: "Compare two apple-app-site-association files by meaning.",
        discussion: "Exit status: 0 no change, 1 changes found, 2 an input is unreadable, invalid JSON or not an association file."
    )

    /// The earlier file.
    @Argument(help: "The earlier association file.")
    public var old: String

    /// The later file.
    @Argument(help: "The later association file.")
    public var new: String

    /// Machine-readable output.
    @Flag(help: "Write the changes as JSON.")
    public var json = false

    /// The size limit for each file.
    @Option(name: .customLong("max-size"), help: ArgumentHelp("Largest file read, in bytes (default 131072 = 128 KiB).", valueName: "bytes"))
    public var maxSize: Int = LintOptions.defaultMaxSize

    /// Creates the command with default values (ArgumentParser fills them).
    public init() {}

    /// Rejects a non-positive size limit (exit 64).
    public func validate() throws {
        guard maxSize > 0 else { throw ValidationError("--max-size must be a positive number of bytes.") }
    }

    /// Runs the command: writes the report and throws the exit status (1 or 2) when not 0.
    public func run() async throws {
        let limit = maxSize
        let report = Self.report(old: old, new: new) { path in try Lint.readFile(path, limit: limit) }
        let console = Console.standard
        if let error = report.error {
            console.err("error: \(error.code): \(error.message)")
        }
        if json {
            try console.json(report)
        } else if report.error == nil {
            for line in Self.render(report) { console.out(line) }
        }
        if let status = Self.exitStatus(report) { throw status }
    }

    /// The process exit status of a report: `nil` for no change, else 1 or 2.
    public static func exitStatus(_ report: DiffReport) -> ExitCode? {
        if report.error != nil { return ExitStatus.cannotRun }
        return report.changes.isEmpty ? nil : ExitStatus.failure
    }

    /// Reads, decodes and compares two files; `read` supplies the bytes (tests pass their own).
    public static func report(old: String, new: String, read: (String) throws -> [UInt8]) -> DiffReport {
        var report = DiffReport(old: old, new: new)
        var documents: [AASADocument] = []
        for path in [old, new] {
            let bytes: [UInt8]
            do {
                bytes = try read(path)
            } catch let error as BoundedFileError {
                let failure = CommandFailure(fileError: error, path: path)
                report.error = .init(file: path, code: failure.code, message: failure.message)
                return report
            } catch {
                report.error = .init(file: path, code: "file-unreadable", message: "cannot read \(path): \((error as NSError).localizedDescription)")
                return report
            }
            switch AASADecoder.decode(bytes) {
            case .document(let document, _):
                documents.append(document)
            case .invalidJSON(let error, _):
                report.error = .init(file: path, code: "invalid-json", message: "\(path):\(error.line):\(error.column): \(error.message)")
                return report
            case .notAnAssociationFile(let reason, _):
                report.error = .init(file: path, code: "not-an-association-file", message: "\(path): \(reason)")
                return report
            }
        }
        report.changes = AASADiff.changes(from: documents[0], to: documents[1])
        report.changed = !report.changes.isEmpty
        return report
    }

    /// The human-readable lines of a report.
    public static func render(_ report: DiffReport) -> [String] {
        guard !report.changes.isEmpty else { return ["no semantic change"] }
        var lines: [String] = []
        for change in report.changes {
            var head = change.kind
            if let service = change.service { head += " \(service.name)" }
            if let app = change.appID { head += " \(app)" }
            lines.append("\(head): \(change.description)")
            for line in (change.before ?? "").split(separator: "\n", omittingEmptySubsequences: true) { lines.append("  - \(line)") }
            for line in (change.after ?? "").split(separator: "\n", omittingEmptySubsequences: true) { lines.append("  + \(line)") }
        }
        return lines
    }
}

/// The result of `aasa-fetch diff` (its `--json` output).
public struct DiffReport: Sendable, Codable, Hashable {
    /// Why an input could not be used.
    public struct InputError: Sendable, Codable, Hashable {
        /// The file concerned.
        public var file: String
        /// `file-unreadable`, `file-too-large`, `invalid-json` or `not-an-association-file`.
        public var code: String
        /// What happened.
        public var message: String
    }

    /// The earlier file's path.
    public var old: String
    /// The later file's path.
    public var new: String
    /// Whether anything changed; absent when an input could not be used.
    public var changed: Bool?
    /// The changes in ``AASADiff`` order.
    public var changes: [AASAChange] = []
    /// Set when an input could not be used.
    public var error: InputError?

    /// Creates an empty report.
    public init(old: String, new: String) {
        self.old = old
        self.new = new
    }
}
