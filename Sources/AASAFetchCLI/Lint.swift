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
///   "schemaVersion": 1, "errors": 1, "warnings": 2, "infos": 0, "unreadable": 0,
///   "files": [
///     {
///       "path": "apple-app-site-association", "size": 512, "errors": 1, "warnings": 2, "infos": 0,
///       "findings": [
///         {"code": "invalid-json", "severity": "error", "message": "invalid JSON at line 5, column 5: …",
///          "location": "5:5", "line": 5, "column": 5, "fix": "Remove the comma …"}
///       ],
///       "readError": null
///     },
///     {"path": "missing.json", "size": null, "errors": 0, "warnings": 0, "infos": 0, "findings": [],
///      "readError": {"code": "file-unreadable", "message": "…"}}
///   ]
/// }
/// ```
/// `location` is a JSON pointer (`/applinks/details/0/appIDs/1`), `line:column` for
/// `invalid-json`, or `null` for whole-file findings; `line` and `column` are where the finding
/// points in the file (`null` for whole-file findings). Every key is present (`null` when absent).
///
/// Exit status: 0 no error findings (warnings allowed), 1 at least one error finding,
/// 2 a file could not be read (takes precedence). `-` reads standard input. A folder stands for
/// the association files inside it (see ``expand(_:)``); a folder without any is the read error
/// `no-association-files`.
///
/// A file is read up to `--max-size` bytes: a larger one gets the single finding `too-large` and
/// is not parsed (reading stops there, so `/dev/zero` or a huge pipe costs no more).
public struct Lint: AsyncParsableCommand {
    /// The command's name, help and exit-status documentation.
    public static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Check apple-app-site-association files for syntax, structure and semantic problems.",
        discussion: HelpText.discussion("Use - for standard input.", examples: CommandHelp.lint, exitCodes: CommandHelp.lintExitCodes)
    )

    /// The files to check.
    @Argument(help: "Association files to check (- for standard input; a folder: every file inside it named apple-app-site-association or ending in .json).", completion: .file())
    public var files: [String]

    /// The output format (`--format`, `--json`).
    @OptionGroup var output: FormatOptions

    /// Whether the report is written as JSON (`--json`, `--format json`).
    public var json: Bool { output.format == .json }

    /// The size limit.
    @Option(name: .customLong("max-size"), help: "Size limit in bytes (default 131072 = 128 KiB).")
    public var maxSize: Int = LintOptions.defaultMaxSize

    /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
    @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

    /// Creates the command with default values (ArgumentParser fills them).
    public init() {}

    /// Rejects an empty file list and a size limit outside 1 B to 1 GiB (exit 64).
    public func validate() throws {
        guard !files.isEmpty else { throw ValidationError("Give at least one file.") }
        guard maxSize > 0, maxSize <= NetworkOptions.maxSizeLimit else {
            throw ValidationError("--max-size must be between 1 and \(NetworkOptions.maxSizeLimit) bytes")
        }
    }

    /// Runs the command: writes the report and throws the exit status (1 or 2) when not 0.
    public func run() async throws {
        let limit = maxSize
        let report = Self.report(files: Self.expand(files), options: LintOptions(maxSize: maxSize)) { path in try Self.readFile(path, limit: limit) }
        let console = Console.standard
        if output.format.isCI {
            var writer = CIWriters.standardOutput(output.format, console: console)
            LintCI.render(report, to: &writer)
        } else if json {
            try console.json(report)
        } else {
            for line in Self.render(report, console: console) { console.out(line) }
        }
        for file in report.files {
            if let e = file.readError { console.diagnostic(e.code, e.message) }
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
    /// - Throws: ``BoundedFileError`` (`tooLarge` past the limit, without reading on), or a
    ///   ``LintReadError`` for a folder: `no-association-files` (one that ``expand(_:)`` found
    ///   nothing in) or `file-unreadable` with the system's reason.
    public static func readFile(_ path: String, limit: Int) throws -> [UInt8] {
        if path != "-", isFolder(path) {
            if let directory = opendir(path) {
                closedir(directory)
                throw LintReadError(code: "no-association-files",
                                    message: "\(path) is a folder with no association file inside (files named apple-app-site-association or ending in .json, searched in every subfolder and .well-known)")
            }
            throw LintReadError(code: "file-unreadable", message: "cannot read the folder \(path): \(SystemReason.text(errno: errno))")
        }
        return try BoundedFile.read(path: path, limit: limit)
    }

    /// The files the arguments stand for, in order: a file (or `-`) as given; a folder as every
    /// file inside it (in every subfolder, `.well-known` included, other hidden folders and links
    /// to folders not followed) named `apple-app-site-association` or ending in `.json`, sorted by
    /// path. A folder with none stays as it is, so reading it reports `no-association-files`; a
    /// subfolder that cannot be listed is kept too, so it reports why.
    public static func expand(_ arguments: [String]) -> [String] {
        arguments.flatMap { argument -> [String] in
            guard argument != "-", isFolder(argument) else { return [argument] }
            let found = associationFiles(in: argument)
            return found.isEmpty ? [argument] : found
        }
    }

    private static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    private static func associationFiles(in folder: String) -> [String] {
        let fileName = "apple-app-site-association"
        var found: [String] = []
        var pending = [folder]
        while let current = pending.popLast() {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: current) else {
                if current != folder { found.append(current) }
                continue
            }
            for name in names {
                let path = (current as NSString).appendingPathComponent(name)
                // The item itself, not what a symbolic link points at: links to folders are not followed.
                let isCandidate = name == fileName || name.lowercased().hasSuffix(".json")
                guard let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType else {
                    // Gone since the listing, or a name that is not UTF-8 (it comes back with
                    // U+FFFD and names no file): reported as unreadable, never skipped in silence.
                    if isCandidate { found.append(path) }
                    continue
                }
                if type == .typeDirectory {
                    if !name.hasPrefix(".") || name == ".well-known" { pending.append(path) }
                } else if isCandidate {
                    if type == .typeSymbolicLink, isFolder(path) { continue }
                    found.append(path)
                }
            }
        }
        return found.sorted()
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
                let failure = error as? LintReadError
                    ?? LintReadError(code: "file-unreadable", message: (error as? BoundedFileError)?.message(path: path) ?? "cannot read \(path): \(SystemReason.of(error))")
                report.files.append(LintFileReport(path: path, findings: [], readError: .init(code: failure.code, message: failure.message)))
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
                if let fix = finding.fix { lines.append("    \(console.paint("fix:", .dim)) \(fix)") }
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

/// Why `lint` could not read a path: `file-unreadable` (missing, not permitted, …) or
/// `no-association-files` (a folder with none inside).
public struct LintReadError: Error, Sendable, Hashable {
    /// The stable code.
    public var code: String
    /// What happened, in words.
    public var message: String

    /// Creates an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// The result of `aasa-fetch lint` (its `--json` output).
public struct LintReport: Sendable, Codable, Hashable {
    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// Error findings over all files.
    public var errors = 0
    /// Warning findings over all files.
    public var warnings = 0
    /// Informational findings over all files.
    public var infos = 0
    /// Files that could not be read.
    public var unreadable = 0
    /// One entry per file, in argument order.
    public var files: [LintFileReport]

    /// Creates a report.
    public init(files: [LintFileReport]) {
        self.files = files
    }
}

/// One file's lint result.
public struct LintFileReport: Sendable, Codable, Hashable {
    /// Why a file could not be read.
    public struct ReadError: Sendable, Codable, Hashable {
        /// `file-unreadable` or `no-association-files`.
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
