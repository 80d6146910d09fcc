import AASAFetchCore
import ArgumentParser

/// What `fetch`, `lint` and `diagnose` print on standard output (`--format`).
public enum OutputFormat: String, CaseIterable, Sendable, ExpressibleByArgument {
    /// Lines for people (the default).
    case human
    /// The JSON document of docs/json.md (`--json`).
    case json
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`), one a finding.
    case github
    /// A SARIF 2.1.0 log (code scanning).
    case sarif
    /// JUnit XML (test reports).
    case junit

    /// Whether the format is one of the CI formats of ``CIWriter``.
    var isCI: Bool { self == .github || self == .sarif || self == .junit }
}

/// `--format FORMAT` and `--json` (the same as `--format json`): the one output option group of
/// `fetch`, `lint` and `diagnose`. `--json` with another `--format` is a usage error (exit 64).
struct FormatOptions: ParsableArguments {
    @Option(name: .customLong("format"), help: ArgumentHelp(
        "Output format: human, json, github (GitHub Actions annotations), sarif (SARIF 2.1.0) or junit (JUnit XML).",
        valueName: "format"))
    var chosen: OutputFormat?

    @Flag(help: "Print JSON (the same as --format json).")
    var json = false

    func validate() throws {
        if json, let chosen, chosen != .json {
            throw ValidationError("--json means --format json; it cannot go with --format \(chosen.rawValue)")
        }
    }

    /// The format asked for.
    var format: OutputFormat { json ? .json : chosen ?? .human }

    /// The format a command line asks for, read before parsing (so that an error before any
    /// report is written in it): the last `--format X` or `--format=X` before `--`, `json` for `--json`.
    static func format(in arguments: [String]) -> OutputFormat? {
        let options = arguments.prefix { $0 != "--" }
        if options.contains("--json") { return .json }
        var found: OutputFormat?
        var previous: String?
        for argument in options {
            if previous == "--format" { found = OutputFormat(rawValue: argument) ?? found }
            if argument.hasPrefix("--format=") { found = OutputFormat(rawValue: String(argument.dropFirst("--format=".count))) ?? found }
            previous = argument
        }
        return found
    }
}

/// Which file each entry of a run came from, by its index: the entitlements file (or the app)
/// first, then `--domain` and a command's own entries (no file), then the `--domains` list.
/// The line within the file is ``AssociatedDomainEntry/line``.
struct EntrySources: Sendable, Hashable {
    /// `--entitlements FILE` or `--app PATH`.
    var entitlementsPath: String?
    /// How many entries it gave (indexes `0..<entitlementsCount`).
    var entitlementsCount = 0
    /// `--domains FILE`.
    var listPath: String?
    /// The index of the list's first entry.
    var listStart = Int.max

    /// The file entry `index` came from, when it came from one.
    func file(ofEntry index: Int) -> String? {
        if index < entitlementsCount { return entitlementsPath }
        if index >= listStart { return listPath }
        return nil
    }
}
