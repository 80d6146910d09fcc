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
/// With `--stored`, OLD and NEW name approved files kept in the store (`--cache`, `--store`):
/// `HOST` the latest, `HOST@-1` the one before, `HOST@-N` (`show HOST --versions` lists them);
/// `--route cdn` for the files fetched through Apple's CDN. A host the store does not hold is
/// `host-unknown`, a version it does not keep `version-unknown` (exit 2).
///
/// Exit status: 0 no semantic change, 1 changes found, 2 an input is unreadable, not JSON or
/// not an association file (or, with `--stored`, not in the store).
public struct Diff: AsyncParsableCommand {
    /// The command's name, help and exit-status documentation.
    public static let configuration = CommandConfiguration(
        commandName: "diff",
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

    /// OLD and NEW are kept approved files of the store: `HOST`, `HOST@-1`, `HOST@-N`.
    @Flag(help: "OLD and NEW name approved files kept in the store: HOST (the latest), HOST@-1 (the one before), HOST@-N.")
    public var stored = false

    /// The route of the stored files.
    @Option(help: ArgumentHelp("With --stored: the files fetched from the origin (default) or through Apple's CDN.", valueName: "origin|cdn"))
    public var route: Route?

    @OptionGroup var store: StoreOptions
    /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
    @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

    /// Creates the command with default values (ArgumentParser fills them).
    public init() {}

    /// Rejects a non-positive size limit, `--route` without `--stored`, and OLD or NEW that are
    /// not `HOST[@-N]` with it (exit 64).
    public func validate() throws {
        guard maxSize > 0, maxSize <= NetworkOptions.maxSizeLimit else {
            throw ValidationError("--max-size must be between 1 and \(NetworkOptions.maxSizeLimit) bytes")
        }
        // --cache and --store may come from the environment (AASA_FETCH_CACHE): only --route is refused.
        if !stored {
            if route != nil { throw ValidationError("--route names stored files: use it with --stored") }
            return
        }
        for spec in [old, new] where StoredSpec(spec) == nil {
            throw ValidationError("--stored takes HOST (the latest approved file), HOST@-1 (the one before) or HOST@-N, not '\(spec)'")
        }
    }

    /// Runs the command: writes the report and throws the exit status (1 or 2) when not 0.
    public func run() async throws {
        let limit = maxSize
        let files = stored ? try await storedFiles() : [:]
        let report = try Self.report(old: old, new: new) { path in
            if let bytes = files[path] { return bytes }
            return try Lint.readFile(path, limit: limit)
        }
        let console = Console.standard
        if json {
            try console.json(report)
        } else {
            for line in Self.render(report) { console.out(line) }
        }
        if let status = Self.exitStatus(report) { throw status }
    }

    /// `--stored`: the bytes of OLD and NEW from the store's kept approved files.
    private func storedFiles() async throws(CommandFailure) -> [String: [UInt8]] {
        let database = try await store.open(create: false, readOnly: true)
        let route = self.route ?? .origin
        var files: [String: [UInt8]] = [:]
        var kept: [HostKey: [StoredVersion]] = [:]
        for text in [old, new] {
            guard let spec = StoredSpec(text) else { continue }
            let key = HostKey(host: spec.host, route: route)
            do {
                if kept[key] == nil {
                    guard try await database.states(of: [key])[key] != nil else {
                        let other = route == .origin ? "" : " on the \(route.rawValue) route"
                        throw CommandFailure(code: "host-unknown", message: "\(spec.host) is not in the store \(store.location)\(other)")
                    }
                    kept[key] = try await database.versions(of: key, bodies: true)
                }
            } catch {
                throw CommandFailure(storeCall: error)
            }
            let versions = kept[key] ?? []
            guard let version = versions.first(where: { $0.index == spec.index }), let body = version.body else {
                let what = versions.isEmpty ? "no approved file is kept" : "only \(Plural.count(versions.count, "approved file")) \(versions.count == 1 ? "is" : "are") kept (\(spec.host)\(versions.count == 1 ? "" : " … \(spec.host)@\(1 - versions.count)"))"
                throw CommandFailure(code: "version-unknown", message: "\(text): \(what); see aasa-fetch show \(spec.host) --versions")
            }
            files[text] = body
        }
        return files
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
            var bytes: [UInt8]
            do {
                bytes = try read(path)
            } catch let error as BoundedFileError {
                throw CommandFailure(fileError: error, path: path)
            } catch let error as LintReadError {
                throw CommandFailure(code: error.code, message: error.message)
            } catch {
                throw CommandFailure(code: "file-unreadable", message: "cannot read \(path): \(SystemReason.of(error))")
            }
            // A signed file is compared by its content, as fetch reads it.
            switch CMSUnwrapper.body(bytes) {
            case .plain: break
            case .signed(let content): bytes = content
            case .unusable: throw CommandFailure(code: "invalid-json", message: "\(path): \(CMSUnwrapper.unusableReason)")
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

extension Route: ExpressibleByArgument {}

/// `HOST`, `HOST@0` (the latest kept approved file), `HOST@-N` (N files before it).
struct StoredSpec: Equatable {
    /// The ASCII host, as the store keys it.
    var host: String
    /// 0 for the latest, -1 for the one before, …
    var index: Int

    init?(_ text: String) {
        var name = Substring(text)
        var index = 0
        if let at = text.lastIndex(of: "@") {
            let suffix = text[text.index(after: at)...]
            guard let value = Int(suffix), value <= 0, value > -1_000_000 else { return nil }
            index = value
            name = text[..<at]
        }
        guard !name.isEmpty, let host = AASAFetchCommand.Refresh.normalizedHost(String(name)) else { return nil }
        self.host = host
        self.index = index
    }
}
