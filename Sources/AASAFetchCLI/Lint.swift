import AASAFetchCore
import ArgumentParser
import Foundation

/// `aasa-fetch lint FILE... [--json] [--max-size BYTES]`: checks association files on disk.
///
/// Human output (stdout), per file: the path, then one line per finding
/// `severity code location: message` with its fix on the next line, then a summary.
/// Colour only on a terminal.
///
/// `--json` output (stdout):
/// ```json
/// {
///   "errors": 1, "warnings": 2, "infos": 0, "unreadable": 0,
///   "files": [
///     {
///       "path": "apple-app-site-association", "size": 512, "errors": 1, "warnings": 2, "infos": 0,
///       "findings": [
///         {"code": "invalid-json", "severity": "error", "location": "5:5",
///          "message": "invalid JSON at line 5, column 5: …", "fix": "Remove the comma …"}
///       ]
///     },
///     {"path": "missing.json", "errors": 0, "warnings": 0, "infos": 0, "findings": [],
///      "readError": {"code": "file-unreadable", "message": "…"}}
///   ]
/// }
/// ```
/// `location` is a JSON pointer (`/applinks/details/0/appIDs/1`), `line:column` for
/// `invalid-json`, or absent for whole-file findings; absent fields are omitted.
///
/// Exit status: 0 no error findings (warnings allowed), 1 at least one error finding,
/// 2 a file could not be read (takes precedence). `-` reads standard input.
///
/// A file is read up to `--max-size` bytes: a larger one gets the single finding `too-large` and
/// is not parsed (reading stops there, so `/dev/zero` or a huge pipe costs no more).
public struct Lint: AsyncParsableCommand {
    /// The command's name, help and exit-status documentation.
    public static let configuration = CommandConfiguration(
        abstract: "Check apple-app-site-association files for syntax, structure and semantic problems.",
        discussion: "Exit status: 0 no errors, 1 errors found, 2 a file could not be read. Use - for standard input."
    )

    /// The files to check.
    @Argument(help: "Association files to check (- for standard input).")
    public var files: [String]

    /// Machine-readable output.
    @Flag(help: "Write the report as JSON.")
    public var json = false

    /// The size limit.
    @Option(name: .customLong("max-size"), help: "Size limit in bytes (default 131072 = 128 KiB).")
    public var maxSize: Int = LintOptions.defaultMaxSize

    /// Creates the command with default values (ArgumentParser fills them).
    public init() {}

    /// Rejects an empty file list and a non-positive size limit (exit 64).
    public func validate() throws {
        guard !files.isEmpty else { throw ValidationError("Give at least one file.") }
        guard maxSize > 0 else { throw ValidationError("--max-size must be a positive number of bytes.") }
    }

    /// Runs the command: writes the report and throws the exit status (1 or 2) when not 0.
    public func run() async throws {
        let limit = maxSize
        let report = Self.report(files: files, options: LintOptions(maxSize: maxSize)) { path in try Self.readFile(path, limit: limit) }
        let console = Console.standard
        if json {
            try console.json(report)
        } else {
            for line in Self.render(report, console: console) { console.out(line) }
            for file in report.files {
                if let e = file.readError { console.err("error: \(e.code): \(e.message)") }
            }
        }
        if let status = Self.exitStatus(report) { throw status }
    }

    /// The process exit status of a report: `nil` for success, else 1 or 2.
    public static func exitStatus(_ report: LintReport) -> ExitCode? {
        if report.unreadable > 0 { return ExitStatus.cannotRun }
        if report.errors > 0 { return ExitStatus.failure }
        return nil
    }

    /// Reads a file, or standard input for `-`, at most `limit` bytes.
    /// - Throws: ``BoundedFileError`` (`tooLarge` past the limit, without reading on).
    public static func readFile(_ path: String, limit: Int) throws -> [UInt8] {
        try BoundedFile.read(path: path, limit: limit)
    }

    /// Lints every file; `read` supplies the bytes (tests pass their own).
    public static func report(files: [String], options: LintOptions, read: (String) throws -> [UInt8]) -> LintReport {
        var report = LintReport(files: [])
        for path in files {
            let bytes: [UInt8]
            do {
                bytes = try read(path)
            } catch BoundedFileError.tooLarge(let size, let limit) {
                // Over the limit: the one finding, and the rest of the file is never parsed.
                let file = LintFileReport(path: path, size: size, findings: [AASALinter.tooLargeFinding(size: size, limit: limit)])
                report.errors += file.errors
                report.files.append(file)
                continue
            } catch {
                let message = (error as? BoundedFileError)?.message(path: path) ?? "cannot read \(path): \((error as NSError).localizedDescription)"
                report.files.append(LintFileReport(path: path, findings: [], readError: .init(code: "file-unreadable", message: message)))
                report.unreadable += 1
                continue
            }
            let findings = AASALinter.lint(bytes, options: options)
            let file = LintFileReport(path: path, size: bytes.count, findings: findings)
            report.errors += file.errors
            report.warnings += file.warnings
            report.infos += file.infos
            report.files.append(file)
        }
        return report
    }

    /// The human-readable lines of a report.
    public static func render(_ report: LintReport, console: Console) -> [String] {
        var lines: [String] = []
        for file in report.files {
            lines.append(console.paint(file.path, .bold))
            if let e = file.readError {
                lines.append("  " + console.paint("error", .red) + " \(e.code): \(e.message)")
                continue
            }
            for finding in file.findings {
                let color: ANSIColor = switch finding.severity {
                case .error: .red
                case .warning: .yellow
                case .info: .dim
                }
                let location = finding.location.map { $0.isEmpty ? " (root)" : " \($0)" } ?? ""
                lines.append("  \(console.paint(finding.severity.rawValue, color)) \(finding.code)\(location): \(finding.message)")
                if let fix = finding.fix { lines.append("    " + console.paint("fix: \(fix)", .dim)) }
            }
            if file.findings.isEmpty {
                lines.append("  " + console.paint("no problems", .green))
            } else {
                lines.append("  \(count(file.errors, "error")), \(count(file.warnings, "warning")), \(count(file.infos, "note"))")
            }
        }
        return lines
    }

    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}

/// The result of `aasa-fetch lint` (its `--json` output).
public struct LintReport: Sendable, Codable, Hashable {
    /// One entry per file, in argument order.
    public var files: [LintFileReport]
    /// Error findings over all files.
    public var errors = 0
    /// Warning findings over all files.
    public var warnings = 0
    /// Informational findings over all files.
    public var infos = 0
    /// Files that could not be read.
    public var unreadable = 0

    /// Creates a report.
    public init(files: [LintFileReport]) {
        self.files = files
    }
}

/// One file's lint result.
public struct LintFileReport: Sendable, Codable, Hashable {
    /// Why a file could not be read.
    public struct ReadError: Sendable, Codable, Hashable {
        /// `file-unreadable`.
        public var code: String
        /// What happened.
        public var message: String
    }

    /// The path as given.
    public var path: String
    /// The size in bytes, when read.
    public var size: Int?
    /// Error findings.
    public var errors: Int
    /// Warning findings.
    public var warnings: Int
    /// Informational findings.
    public var infos: Int
    /// The findings, in file order.
    public var findings: [Finding]
    /// Set when the file could not be read.
    public var readError: ReadError?

    /// Creates a file report, counting the findings by severity.
    public init(path: String, size: Int? = nil, findings: [Finding], readError: ReadError? = nil) {
        self.path = path
        self.size = size
        self.findings = findings
        self.readError = readError
        errors = findings.filter { $0.severity == .error }.count
        warnings = findings.filter { $0.severity == .warning }.count
        infos = findings.filter { $0.severity == .info }.count
    }
}
