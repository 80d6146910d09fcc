import ArgumentParser

/// One example of a command's `--help`: the arguments after `aasa-fetch`, written to be run from
/// the repository's root against the example sites that `scripts/demo` serves (the network
/// options that send the hosts there come from the environment, not from the example).
struct HelpExample: Sendable {
    /// What follows `aasa-fetch` (shell words; no pipes, no variables).
    var arguments: String
    /// What the example shows, one short line.
    var description: String

    init(_ arguments: String, _ description: String) {
        self.arguments = arguments
        self.description = description
    }

    /// The example's command line as `--help` prints it.
    var commandLine: String { "aasa-fetch \(arguments)" }
}

/// One exit status of a command and what it means there.
struct HelpExitCode: Sendable {
    /// The status.
    var code: Int32
    /// What it means for the command.
    var meaning: String

    init(_ code: Int32, _ meaning: String) {
        self.code = code
        self.meaning = meaning
    }
}

/// The sections every command's `--help` ends its overview with (also in the man page):
///
/// ```
/// EXAMPLES:
///   $ aasa-fetch ARGUMENTS
///       what it shows
///
/// EXIT CODES:
///   0   meaning
/// ```
///
/// Every line fits in 80 columns, so ArgumentParser never wraps one at the default width (a
/// harness reads the `  $ aasa-fetch …` lines and runs them).
enum HelpText {
    /// The widest line of the sections.
    static let width = 80

    /// The discussion of a command: `lead` (a paragraph, optional), then its examples and exit codes.
    static func discussion(_ lead: String? = nil, examples: [HelpExample], exitCodes: [HelpExitCode]) -> String {
        var lines: [String] = []
        if let lead {
            lines += [lead, ""]
        }
        lines.append("EXAMPLES:")
        for example in examples {
            lines.append("  $ \(example.commandLine)")
            lines.append("      \(example.description)")
        }
        lines += ["", "EXIT CODES:"]
        let codeWidth = (exitCodes.map { String($0.code).count }.max() ?? 1) + 2
        for exit in exitCodes {
            let code = String(exit.code)
            lines.append("  \(code)\(String(repeating: " ", count: codeWidth - code.count))\(exit.meaning)")
        }
        return lines.joined(separator: "\n")
    }

    /// The usage error status, the same for every command.
    static let usage = HelpExitCode(ExitStatus.usage.rawValue, "usage error: an unknown option, a bad value, a missing input")
}

/// The examples and exit codes of every command, defined once: each command's configuration
/// builds its `--help` from them, and the tests read them.
enum CommandHelp {
    /// `aasa-fetch` (the root command).
    static let root: [HelpExample] = [
        HelpExample("--entitlements examples/Example.entitlements", "Judge every associated domain of the example app (fetch, the default)."),
        HelpExample("diagnose www.example.com --app-id ABCDE12345.com.example.app", "Walk the steps of one domain and stop at the first that fails."),
        HelpExample("match https://example.com/buy/1 --domain example.com", "Which app a URL opens, and which rule decides."),
        HelpExample("lint examples/broken.json", "Check an association file on disk."),
        HelpExample("show", "What the store knows about every host."),
    ]
    static let rootExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "the answer is good (see each command)"),
        HelpExitCode(1, "the answer is bad: a domain does not associate, a lint error, ..."),
        HelpExitCode(2, "the command could not run: unreadable input, store error"),
        HelpText.usage,
    ]

    static let fetch: [HelpExample] = [
        HelpExample("--entitlements examples/Example.entitlements", "Every domain of the example app (a redirect and an unlisted app fail)."),
        HelpExample("fetch --entitlements examples/Example.entitlements --json", "The same as JSON, for CI."),
        HelpExample("--domain shop.example.net --app-id ABCDE12345.com.example.app", "One domain for one app (a bare host means applinks:HOST)."),
        HelpExample("--domains examples/hosts.txt --app-id ABCDE12345.com.example.app", "A list of entries, one a line."),
        HelpExample("--entitlements examples/Example.entitlements --no-store -q", "A pure run: no store, no progress."),
    ]
    static let fetchExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "every entry associates (or was not judged for want of an app ID)"),
        HelpExitCode(1, "at least one entry does not associate"),
        HelpExitCode(2, "the input or the store could not be used"),
        HelpText.usage,
    ]

    static let plan: [HelpExample] = [
        HelpExample("plan --entitlements examples/Example.entitlements", "Parsed entries and the downloads in start order, without network."),
        HelpExample("plan --domains examples/hosts.txt --region DE --json", "The priorities of a list for a device in Germany, as JSON."),
    ]
    static let planExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "every entry is valid"),
        HelpExitCode(1, "an entry has an error"),
        HelpExitCode(2, "the input could not be read"),
        HelpText.usage,
    ]

    static let match: [HelpExample] = [
        HelpExample("match https://example.com/buy/1 --domain example.com", "Every app the file of example.com names, with the deciding rule."),
        HelpExample("match --urls examples/urls.txt --domain example.com --json", "Many URLs, one JSON line per URL and app."),
        HelpExample("match https://old.example.com/a --domain old.example.com -q", "The file names only another app, which the URL opens; -q: no notes."),
    ]
    static let matchExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "every answer is match (--cases: every line answered)"),
        HelpExitCode(1, "an answer is exclude or no_match (--cases: a line was unusable)"),
        HelpExitCode(2, "an input or the store could not be used"),
        HelpText.usage,
    ]

    static let diagnose: [HelpExample] = [
        HelpExample("diagnose www.example.com --app-id ABCDE12345.com.example.app", "Why www.example.com does not associate (a redirect)."),
        HelpExample("diagnose --entitlements examples/Example.entitlements", "Every entry of the example app, then a tally."),
        HelpExample("diagnose applinks:shop.example.net --json", "One diagnosis as JSON (without an app ID: not judged)."),
    ]
    static let diagnoseExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "no step failed (association may be unjudged without an app ID)"),
        HelpExitCode(1, "a step failed for at least one entry"),
        HelpExitCode(2, "the input could not be read"),
        HelpText.usage,
    ]

    static let refresh: [HelpExample] = [
        HelpExample("refresh", "Fetch the hosts that are due (for cron): silent when nothing changed."),
        HelpExample("refresh --json", "The same, always with a report."),
        HelpExample("refresh --host example.com", "Fetch one host now, whatever is due (after fixing its server)."),
        HelpExample("refresh --metrics aasa.prom", "Also write Prometheus metrics for node_exporter's textfile collector."),
        HelpExample("refresh --format github", "In a scheduled CI job: GitHub annotations for what broke or changed (also sarif, junit)."),
    ]
    static let refreshExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "no association broke (--watch, --worker: stopped by a signal)"),
        HelpExitCode(1, "an association broke: a host now fails or an app is no longer listed"),
        HelpExitCode(2, "the store is missing or unusable"),
        HelpText.usage,
    ]

    static let report: [HelpExample] = [
        HelpExample("report --html status.html", "One self-contained status page of every host in the store."),
        HelpExample("report --html status.html --history-limit 5", "The same with the last 5 history events per host (20 by default)."),
        HelpExample("report --html status.html --json", "The same, and what was written as JSON (hosts per state)."),
    ]
    static let reportExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "the page was written"),
        HelpExitCode(2, "the store is unusable, or the file cannot be written (report-unwritable)"),
        HelpText.usage,
    ]

    static let show: [HelpExample] = [
        HelpExample("show", "One line per host: status, last approved file, next check."),
        HelpExample("show example.com", "One host with its entries, app IDs and history."),
        HelpExample("show --json", "Every host as JSON."),
    ]
    static let showExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "shown"),
        HelpExitCode(1, "the host is not in the store"),
        HelpExitCode(2, "the store is missing or unusable"),
        HelpText.usage,
    ]

    static let forget: [HelpExample] = [
        HelpExample("forget old.example.com", "Remove a host, its entries and its history from the store."),
    ]
    static let forgetExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "removed"),
        HelpExitCode(1, "the host is not in the store"),
        HelpExitCode(2, "the store is missing or unusable"),
        HelpText.usage,
    ]

    static let export: [HelpExample] = [
        HelpExample("export --out approved", "Write each host's last approved file to approved/HOST.json."),
    ]
    static let exportExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "written"),
        HelpExitCode(1, "some hosts were skipped (a name that is not a plain host)"),
        HelpExitCode(2, "the store is unusable or a file cannot be written"),
        HelpText.usage,
    ]

    static let lint: [HelpExample] = [
        HelpExample("lint examples/broken.json", "Errors and warnings with their location and fix."),
        HelpExample("lint examples/site/legacy.example.org/apple-app-site-association", "A good file: no problems."),
        HelpExample("lint examples/broken.json --json", "The findings as JSON."),
    ]
    static let lintExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "no error finding (warnings allowed)"),
        HelpExitCode(1, "at least one error finding"),
        HelpExitCode(2, "a file could not be read"),
        HelpText.usage,
    ]

    static let diff: [HelpExample] = [
        HelpExample("diff examples/before.json examples/after.json", "What changed in meaning: an app removed, a rule added."),
        HelpExample("diff examples/before.json examples/after.json --json", "The changes as JSON."),
    ]
    static let diffExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "no change in meaning"),
        HelpExitCode(1, "changes found"),
        HelpExitCode(2, "an input is unreadable, not JSON or not an association file"),
        HelpText.usage,
    ]

    static let entitlements: [HelpExample] = [
        HelpExample("entitlements examples/Example.entitlements", "The app ID and associated domains of an .entitlements file."),
        HelpExample("entitlements examples/Example.entitlements --json", "The whole dictionary as JSON."),
    ]
    static let entitlementsExitCodes: [HelpExitCode] = [
        HelpExitCode(0, "no error finding (with --compare: and no difference)"),
        HelpExitCode(1, "an error finding, or a difference with --compare"),
        HelpExitCode(2, "the input cannot be read"),
        HelpText.usage,
    ]
}
