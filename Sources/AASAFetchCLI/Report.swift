import AASAFetchCore
import ArgumentParser
import Foundation

extension AASAFetchCommand {
    /// `aasa-fetch report --html FILE`: a status page of the store (``StatusPage``), one
    /// self-contained HTML file, written atomically (`-`: standard output).
    ///
    /// Exit status: 0 written, 2 the store is missing or unusable or the file cannot be written
    /// (`report-unwritable`), 64 usage. JSON (`--json`, the page written to a file):
    /// `{"schemaVersion","out","generatedAt","bytes","hosts","states":{"fails","pending","unjudged","associates"},"unneededLeftOut"}`.
    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report",
            abstract: "Write a status page of the store: one self-contained HTML file.",
            discussion: HelpText.discussion(
                """
                Per host and route: its state, the last change and a history timeline, each failure \
                with its fix, and the approved file. The page has no external assets and fetches \
                nothing; a filter box and state and sort menus work in the browser, and a link with \
                a fragment such as #q=example.com&state=fails opens it filtered.
                """,
                examples: CommandHelp.report, exitCodes: CommandHelp.reportExitCodes)
        )

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The HTML file to write (replaced atomically; - for standard output).", valueName: "file"))
        var html: String
        @Option(help: ArgumentHelp("History events shown per host (the latest).", valueName: "n")) var historyLimit = 20
        @Option(help: .hidden) var now: String?
        @Flag(help: "Print JSON: what was written (with --html FILE; the page itself is never JSON).") var json = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        func validate() throws {
            if html.isEmpty { throw ValidationError("--html takes a file name (or - for standard output)") }
            if historyLimit < 0 { throw ValidationError("--history-limit must be 0 or more") }
            if let now, Timestamp.parse(now) == nil { throw ValidationError("--now takes an ISO 8601 time or seconds since 1970, between the years 1970 and 9999") }
            if json, html == "-" { throw ValidationError("--json describes the page written to a file; with --html - the page itself is the output") }
        }

        /// The hosts on the page per state, in the page's order (failing first).
        struct States: Encodable {
            var fails: Int
            var pending: Int
            var unjudged: Int
            var associates: Int
        }

        /// `report --json`: what was written.
        struct Output: Encodable {
            var schemaVersion = JSONSchemaVersion.current
            /// The file written.
            var out: String
            /// The page's time.
            var generatedAt: Date
            /// The page's size in bytes.
            var bytes: Int
            /// The hosts on the page (one per host and route).
            var hosts: Int
            var states: States
            /// Hosts no app needs any more, left out of the page.
            var unneededLeftOut: Int
        }

        func run() async throws {
            let console = Console.standard
            let generated = now.flatMap(Timestamp.parse) ?? Date()
            if html != "-", let problem = AtomicFile.checkWritable(html) {
                throw CommandFailure(code: "report-unwritable", message: "--html \(html): \(problem)")
            }
            var page = StatusPage(historyLimit: historyLimit)
            do {
                // Read-only, as show and export: a status page is often made by another user
                // than the one that records (the web server's).
                let database = try await store.open(create: false, readOnly: true)
                try await StoredVerdict.walk(database, historyLimit: historyLimit) { chunk in
                    for (verdict, history) in chunk { page.add(verdict, history: history) }
                }
            } catch {
                throw CommandFailure(storeCall: error)
            }
            if let failure = page.spoolFailure {
                throw CommandFailure(code: "spool-error", message: "\(failure) (TMPDIR)")
            }
            // Written piece by piece: the page of many hosts is never whole in memory.
            var bytes = 0
            if html == "-" {
                do {
                    try page.render(store: store.location, generatedAt: generated, version: AASAFetchVersion.string) { piece in
                        console.outJSONFragment(String(decoding: piece, as: UTF8.self))  // machine output, written as it is
                    }
                } catch {
                    throw CommandFailure(code: "report-unwritable", message: "--html -: \(error)")
                }
                return
            }
            do {
                try AtomicFile.write(to: html) { emit in
                    try page.render(store: store.location, generatedAt: generated, version: AASAFetchVersion.string) { piece in
                        bytes += piece.count
                        try emit(piece)
                    }
                }
            } catch {
                throw CommandFailure(code: "report-unwritable", message: "--html \(html): \(error.message)")
            }
            if json {
                let states = States(fails: page.count(.fails), pending: page.count(.pending), unjudged: page.count(.unjudged),
                                    associates: page.count(.associates))
                try console.json(Output(out: html, generatedAt: generated, bytes: bytes, hosts: page.hostCount, states: states,
                                        unneededLeftOut: page.unneededCount))
                return
            }
            let failing = page.count(.fails)
            let unneeded = page.unneededCount > 0 ? ", \(page.unneededCount) no longer needed left out" : ""
            console.out("wrote \(html): \(Plural.count(page.hostCount, "host")), \(failing) failing\(unneeded), \(bytes / 1024) KiB")
        }
    }
}
