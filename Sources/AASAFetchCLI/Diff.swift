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
/// `--json` output (stdout), every key present (`null` when it does not apply):
/// ```json
/// {
///   "schemaVersion": 1, "old": "old.json", "new": "new.json", "changed": true,
///   "changes": [
///     {"kind": "app-added", "service": "applinks", "appID": "ABCDE12345.com.example.app",
///      "description": "ABCDE12345.com.example.app added to applinks", "before": null, "after": null},
///     {"kind": "rules-changed", "service": "applinks", "appID": "…", "description": "…",
///      "before": [{"position": 2, "component": {"/": "/old/*", "?": null, "#": null, "exclude": false,
///                  "caseSensitive": null, "percentEncoded": null}, "path": null}],
///      "after": [{"position": 2, "component": {"/": "/new/*", …}, "path": null}]}
///   ]
/// }
/// ```
/// When an input cannot be used the command cannot run: `aasa-fetch: CODE: message` on standard
/// error and, with `--json`, the error document (`file-unreadable`, `file-too-large`,
/// `invalid-json`, `not-an-association-file`).
///
/// Exit status: 0 no semantic change, 1 changes found, 2 an input is unreadable, not JSON or
/// not an association file.
public struct Diff: AsyncParsableCommand {
    /// The command's name, help and exit-status documentation.
    public static let configuration = CommandConfiguration(
        abstract: "Compare two apple-app-site-association files by meaning.",
        discussion: HelpText.discussion(examples: CommandHelp.diff, exitCodes: CommandHelp.diffExitCodes)
    )

    /// The earlier file.
    @Argument(help: "The earlier association file.", completion: .file())
    public var old: String

    /// The later file.
    @Argument(help: "The later association file.", completion: .file())
    public var new: String

    /// Machine-readable output.
    @Flag(help: "Write the changes as JSON.")
    public var json = false

    /// The size limit for each file.
    @Option(name: .customLong("max-size"), help: ArgumentHelp("Largest file read, in bytes (default 131072 = 128 KiB).", valueName: "bytes"))
    public var maxSize: Int = LintOptions.defaultMaxSize

    /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
    @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

    /// Creates the command with default values (ArgumentParser fills them).
    public init() {}

    /// Rejects a non-positive size limit (exit 64).
    public func validate() throws {
        guard maxSize > 0 else { throw ValidationError("--max-size must be a positive number of bytes.") }
    }

    /// Runs the command: writes the report and throws the exit status (1 or 2) when not 0.
    public func run() async throws {
        let limit = maxSize
        let report = try Self.report(old: old, new: new) { path in try Lint.readFile(path, limit: limit) }
        let console = Console.standard
        if json {
            try console.json(report)
        } else {
            for line in Self.render(report) { console.out(line) }
        }
        if let status = Self.exitStatus(report) { throw status }
    }

    /// The process exit status of a report: `nil` for no change, else 1.
    public static func exitStatus(_ report: DiffReport) -> ExitCode? {
        report.changes.isEmpty ? nil : ExitStatus.failure
    }

    /// Reads, decodes and compares two files; `read` supplies the bytes (tests pass their own).
    /// An input that cannot be used is a failure (`file-unreadable`, `invalid-json`,
    /// `not-an-association-file`; exit 2).
    public static func report(old: String, new: String, read: (String) throws -> [UInt8]) throws(CommandFailure) -> DiffReport {
        var report = DiffReport(old: old, new: new)
        var documents: [AASADocument] = []
        for path in [old, new] {
            let bytes: [UInt8]
            do {
                bytes = try read(path)
            } catch let error as BoundedFileError {
                throw CommandFailure(fileError: error, path: path)
            } catch let error as LintReadError {
                throw CommandFailure(code: error.code, message: error.message)
            } catch {
                throw CommandFailure(code: "file-unreadable", message: "cannot read \(path): \((error as NSError).localizedDescription)")
            }
            switch AASADecoder.decode(bytes) {
            case .document(let document, _):
                documents.append(document)
            case .invalidJSON(let error, _):
                throw CommandFailure(code: "invalid-json", message: "\(path):\(error.line):\(error.column): \(error.message)")
            case .notAnAssociationFile(let reason, _):
                throw CommandFailure(code: "not-an-association-file", message: "\(path): \(reason)")
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
            for line in (change.beforeText ?? "").split(separator: "\n", omittingEmptySubsequences: true) { lines.append("  - \(line)") }
            for line in (change.afterText ?? "").split(separator: "\n", omittingEmptySubsequences: true) { lines.append("  + \(line)") }
        }
        return lines
    }
}

/// The result of `aasa-fetch diff` (its `--json` output).
public struct DiffReport: Sendable, Codable, Hashable {
    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// The earlier file's path.
    public var old: String
    /// The later file's path.
    public var new: String
    /// Whether anything changed.
    public var changed = false
    /// The changes in ``AASADiff`` order.
    public var changes: [AASAChange] = []

    /// Creates an empty report.
    public init(old: String, new: String) {
        self.old = old
        self.new = new
    }
}
