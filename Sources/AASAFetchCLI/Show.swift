import AASAFetchCore
import ArgumentParser
import Foundation

/// One host as `show` prints it.
struct HostRecord {
    struct EntryRecord: Encodable {
        var entry: String
        var service: Service
        var appIDs: [String]
    }

    var state: HostState
    var now: Date
    /// The verdict on the entries and apps that need the host, as a run gives it.
    var verdict: StoredVerdict
    var entries: [EntryRecord]?
    var history: [HistoryEvent]?
    /// The kept approved files, latest first (`show HOST --versions`).
    var versions: [StoredVersion]?
}

/// What `show --json` prints.
struct ShowReport: Encodable {
    /// One host: its last result, approved file, validators, schedule and lease (`entries` and
    /// `history` only when one host was asked for).
    struct Host: Encodable {
        struct Lease: Encodable {
            var owner: String
            var expires: Date
        }

        /// A kept approved file (`--versions`).
        struct Version: Encodable {
            var index: Int
            var fetchedAt: Date
            var approvedAt: Date
            var bytes: Int
            var sha256: String
            var etag: String?
            var lastModified: String?
        }

        var host: String
        var route: Route
        var tier: Int
        var code: String?
        var associated: Bool?
        var associations: [StoredVerdict.Association]
        var reason: String?
        var httpStatus: Int?
        var fetchedAt: Date?
        var approved: Bool
        var lastApprovedAt: Date?
        var approvedBytes: Int?
        var etag: String?
        var lastModified: String?
        var consecutiveFailures: Int
        var nextCheck: Date
        var due: Bool
        var lease: Lease?
        var unneededSince: Date?
        var entries: [HostRecord.EntryRecord]?
        var history: [HistoryEvent]?
        var versions: [Version]?

        init(_ record: HostRecord) {
            let state = record.state
            host = state.key.host
            route = state.key.route
            tier = state.tier
            code = record.verdict.code ?? state.lastResult?.code
            associated = record.verdict.associated
            associations = record.verdict.associations
            reason = state.lastResult?.reason
            httpStatus = state.lastResult?.httpStatus
            fetchedAt = state.lastResult?.fetchedAt
            approved = state.isApproved
            lastApprovedAt = state.approvedAt
            approvedBytes = state.approvedSize
            etag = state.validators.etag
            lastModified = state.validators.lastModified
            consecutiveFailures = state.consecutiveFailures
            nextCheck = state.nextCheck
            // An unneeded host is never due: refresh no longer fetches it.
            due = state.unneededSince == nil && state.nextCheck <= record.now
            lease = state.lease.flatMap { $0.expires > record.now ? Lease(owner: $0.owner, expires: $0.expires) : nil }
            unneededSince = state.unneededSince
            entries = record.entries
            history = record.history
            versions = record.versions?.map { version in
                Version(index: version.index, fetchedAt: version.fetchedAt, approvedAt: version.approvedAt, bytes: version.size,
                        sha256: version.digest, etag: version.etag, lastModified: version.lastModified)
            }
        }
    }

    var schemaVersion = JSONSchemaVersion.current
    var store: String
    var now: Date
    var hosts: [Host]
}

extension AASAFetchCommand {
    /// `aasa-fetch show [HOST]`: what the store knows. Without a host, one line per host (status,
    /// last approved file, next check, failures); with one, its entries and history too.
    ///
    /// The verdict is the one a run gives (``StoredVerdict``): `code` is the last download's
    /// failure, else `app-not-listed` when an app that needs the host is not listed for its entry's
    /// service, else `ok`; `associated` and, per entry and app ID, `associations` say which.
    ///
    /// Exit status: 0 shown, 1 the host is not in the store, 2 the store is missing or unusable.
    /// JSON: `{"schemaVersion","store","now","hosts":[{"host","route","tier","code","associated",
    /// "associations":[{"entry","service","appID","associated","code","reason"}],"reason",
    /// "httpStatus","fetchedAt","approved","lastApprovedAt","approvedBytes","etag","lastModified",
    /// "consecutiveFailures","nextCheck","due","lease","unneededSince","entries","history","versions"}]}`
    /// (`entries` and `history` are `null` without a host, `versions` without `--versions`;
    /// `unneededSince`: since when no entry needs the host, `null` while one does; `approved`: the
    /// last download gave an approved file; times ISO 8601).
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show what the store knows: status, last approved file, next check, failures, history.",
            discussion: HelpText.discussion(examples: CommandHelp.show, exitCodes: CommandHelp.showExitCodes)
        )

        @Argument(help: "A host to show in detail (its entries and history).") var host: String?
        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("With a host: how many history events (latest).", valueName: "n")) var historyLimit = 50
        @Flag(help: "With a host: list its kept approved files (latest first: index 0, -1, …) for diff --stored HOST@-N.")
        var versions = false
        @Option(help: .hidden) var now: String?
        @Flag(help: "Print JSON.") var json = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        func validate() throws {
            if versions && host == nil { throw ValidationError("--versions lists the kept files of one host: show HOST --versions") }
            if historyLimit < 0 { throw ValidationError("--history-limit must be 0 or more") }
            if let now, Timestamp.parse(now) == nil { throw ValidationError("--now takes an ISO 8601 time or seconds since 1970, between the years 1970 and 9999") }
        }

        func run() async throws {
            let console = Console.standard
            let now = self.now.flatMap(Timestamp.parse) ?? Date()
            guard let host else {
                try await showAll(now: now, console: console)
                return
            }
            let records: [HostRecord]
            let path = store.location
            do {
                let database = try await store.open(create: false, readOnly: true)
                // As `refresh --host` names hosts: `BÜCHER.example` is `xn--bcher-kva.example`.
                let name = AASAFetchCommand.Refresh.normalizedHost(host) ?? host.lowercased()
                let states = try await database.states(of: Route.allCases.map { HostKey(host: name, route: $0) })
                let keys = states.keys.sorted()
                let needs = try await database.needs(for: keys)
                var found: [HostRecord] = []
                for key in keys {
                    guard var state = states[key] else { continue }
                    let verdict = StoredVerdict(state: state, needs: needs[key] ?? [])
                    state.approvedBody = nil
                    state.lastResult?.body = nil
                    var byEntry: [String: HostRecord.EntryRecord] = [:]
                    var order: [String] = []
                    for need in needs[key] ?? [] {
                        if byEntry[need.entry] == nil {
                            order.append(need.entry)
                            byEntry[need.entry] = HostRecord.EntryRecord(entry: need.entry, service: need.service, appIDs: [])
                        }
                        if !need.appID.isEmpty { byEntry[need.entry]?.appIDs.append(need.appID) }
                    }
                    let history = try await database.history(of: key, limit: historyLimit)
                    let kept = versions ? try await database.versions(of: key, bodies: false) : nil
                    found.append(HostRecord(state: state, now: now, verdict: verdict, entries: order.compactMap { byEntry[$0] },
                                            history: history, versions: kept))
                }
                records = found
            } catch {
                throw CommandFailure(storeCall: error)
            }
            if json {
                try console.json(ShowReport(store: path, now: now, hosts: records.map(ShowReport.Host.init)))
            } else if versions {
                renderVersions(records, console: console)
            } else {
                render(records, console: console)
            }
            if records.isEmpty {
                throw CommandFailure(code: "host-unknown", message: "\(host) is not in the store \(path)", status: ExitStatus.failure)
            }
        }

        /// `show` without a host: every host, read and judged a page at a time
        /// (``StoredVerdict/walk(_:chunk:historyLimit:allBodies:_:)``) and written as it comes, so
        /// memory does not grow with the store. The JSON document and the table's rows wait in a
        /// temporary file (until every host was read; until the column widths are known).
        private func showAll(now: Date, console: Console) async throws {
            let path = store.location
            let database: any AssociationStore
            do {
                database = try await store.open(create: false, readOnly: true)
            } catch {
                throw CommandFailure(storeCall: error)
            }
            var stream = json ? ShowJSONStream(store: path, now: now) : nil
            var table = json ? nil : HostTable()
            do {
                try await StoredVerdict.walk(database, allBodies: false) { chunk in
                    for (verdict, _) in chunk {
                        var state = verdict.state
                        state.approvedBody = nil
                        state.lastResult?.body = nil
                        let record = HostRecord(state: state, now: now, verdict: verdict)
                        if stream != nil {
                            try stream?.host(ShowReport.Host(record))
                        } else {
                            table?.add(record)
                        }
                    }
                }
            } catch let error as CommandFailure {
                throw error
            } catch {
                throw CommandFailure(storeCall: error)
            }
            if let stream {
                try stream.finish(console: console)
            } else if let table {
                try table.print(console: console, emptyStore: path)
            }
        }

        private func render(_ records: [HostRecord], console: Console) {
            for record in records {
                let state = record.state
                console.out("\(state.key.description)  tier \(state.tier)")
                if let last = state.lastResult {
                    console.out("  last result    \(last.code)\(last.httpStatus.map { " (HTTP \($0))" } ?? "") at \(Timestamp.string(last.fetchedAt)): \(last.reason)")
                } else {
                    console.out("  last result    not fetched yet")
                }
                if state.lastResult != nil {
                    let renderer = HumanRenderer(console: console)
                    console.out("  verdict        \(renderer.mark(record.verdict.associated)) \(record.verdict.code ?? "?")")
                    for association in record.verdict.associations {
                        let app = association.appID.map { " for \($0)" } ?? " (no app ID known)"
                        console.out("    \(renderer.mark(association.associated)) \(association.entry)\(app)"
                            + (association.associated == false ? ": \(association.reason ?? association.code)" : ""))
                    }
                }
                if let size = state.approvedSize {
                    console.out("  last approved  \(size) bytes, confirmed \(state.approvedAt.map(Timestamp.string) ?? "?")"
                        + (state.validators.etag.map { ", ETag \($0)" } ?? "") + (state.validators.lastModified.map { ", Last-Modified \($0)" } ?? ""))
                } else {
                    console.out("  last approved  none")
                }
                if let since = state.unneededSince {
                    console.out("  unneeded since \(Timestamp.string(since)): no entry needs it any more; not refreshed, removed by refresh after --prune-after (default 30d)")
                } else {
                    console.out("  next check     \(Timestamp.string(state.nextCheck))\(state.nextCheck <= record.now ? " (due)" : "")")
                }
                console.out("  failures       \(state.consecutiveFailures) in a row")
                if let lease = state.lease, lease.expires > record.now {
                    console.out("  leased by      \(lease.owner) until \(Timestamp.string(lease.expires))")
                }
                for entry in record.entries ?? [] {
                    console.out("  entry          \(entry.entry)\(entry.appIDs.isEmpty ? "" : " for \(entry.appIDs.joined(separator: ", "))")")
                }
                let history = record.history ?? []
                console.out(history.isEmpty ? "  history        none" : "  history")
                for event in history {
                    console.out("    \(Timestamp.string(event.at))")
                    ChangeRenderer(console: console).render(event, indent: "      ")
                }
            }
        }

        /// `show HOST --versions`: per route, the kept approved files, latest first.
        private func renderVersions(_ records: [HostRecord], console: Console) {
            for record in records {
                let key = record.state.key
                let kept = record.versions ?? []
                console.out("\(key.description)  \(Plural.count(kept.count, "approved file")) kept (at most \(StoreRetention.keptVersions), latest first)")
                guard !kept.isEmpty else { continue }
                let header = ["VERSION", "FETCHED", "LAST APPROVED", "BYTES", "SHA-256", "ETAG"]
                let rows = kept.map { version -> [String] in
                    [String(version.index), Timestamp.string(version.fetchedAt), Timestamp.string(version.approvedAt), String(version.size),
                     String(version.digest.prefix(16)), version.etag ?? "-"]
                }
                let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
                for cells in [header] + rows {
                    console.out("  " + zip(cells, widths).enumerated().map { column, cell in
                        column == cells.count - 1 ? cell.0 : cell.0 + String(repeating: " ", count: cell.1 - cell.0.count + 2)
                    }.joined())
                }
            }
            // How to compare, for the first route with two files or more.
            if let key = records.first(where: { ($0.versions?.count ?? 0) > 1 })?.state.key {
                let route = key.route == .origin ? "" : " --route \(key.route.rawValue)"
                console.out("compare with: aasa-fetch diff --stored \(key.host)@-1 \(key.host)\(route)")
            }
        }
    }

    /// `aasa-fetch forget HOST`: removes a host (every route), its entries, its history and its kept approved files.
    ///
    /// Exit status: 0 removed, 1 the host was not in the store, 2 the store is missing or unusable.
    /// JSON: `{"schemaVersion","host","removed"}` (`removed`: how many host records, one per route).
    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Remove a host, its entries, history and kept approved files from the store.",
            discussion: HelpText.discussion(examples: CommandHelp.forget, exitCodes: CommandHelp.forgetExitCodes))

        @Argument(help: "The host to forget.") var host: String
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print JSON.") var json = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        private struct Output: Encodable {
            var schemaVersion = JSONSchemaVersion.current
            var host: String
            var removed: Int
        }

        func run() async throws {
            let console = Console.standard
            let name = AASAFetchCommand.Refresh.normalizedHost(host) ?? host.lowercased()
            let removed: Int
            do {
                removed = try await store.open(create: false).forget(host: name)
            } catch {
                throw CommandFailure(storeCall: error)
            }
            if json {
                try console.json(Output(host: name, removed: removed))
            } else if removed > 0 {
                console.out("forgot \(name)")
            }
            if removed == 0 {
                throw CommandFailure(code: "host-unknown", message: "\(name) is not in the store \(store.location)", status: ExitStatus.failure)
            }
        }
    }

    /// `aasa-fetch export [--out DIR]`: writes each host's last approved file to
    /// `DIR/ROUTE/HOST.json` (`DIR/origin/…`, `DIR/cdn/…`: a host's two routes never share a name).
    /// Default `DIR`: `export` inside the cache folder. A host name that is not a plain lower-case
    /// DNS name (a tampered or shared store can hold `../escape` or `/abs/x`) names no file: it is
    /// skipped with a warning (`export-unsafe-host`), and nothing is written outside `DIR`.
    ///
    /// Exit status: 0 written, 1 some hosts were skipped, 2 the store is unusable or a file cannot
    /// be written. JSON: `{"schemaVersion","out","files":[{"host","route","path","bytes","approvedAt"}],
    /// "skipped":[{"host","route","reason"}]}`.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write the last approved file of every host, one file per host and route.",
            discussion: HelpText.discussion(examples: CommandHelp.export, exitCodes: CommandHelp.exportExitCodes))

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The folder to write to (default: export inside the cache folder).", valueName: "dir"), completion: .directory)
        var out: String?
        @Flag(help: "Print JSON.") var json = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        private struct File: Encodable {
            var host: String
            var route: Route
            var path: String
            var bytes: Int
            var approvedAt: Date?
        }

        private struct Skipped: Encodable {
            var host: String
            var route: Route
            var reason: String
        }

        private struct Output: Encodable {
            var schemaVersion = JSONSchemaVersion.current
            var out: String
            var files: [File]
            var skipped: [Skipped]
        }

        /// Whether a stored host name can name a file inside the export folder: a lower-case DNS
        /// name (letters, digits, hyphens, dots between labels), as the entry parser stores them.
        static func isPlainHostName(_ host: String) -> Bool {
            guard !host.isEmpty, host.utf8.count <= 253 else { return false }
            return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
                !label.isEmpty && label.utf8.count <= 63 && label.utf8.allSatisfy { byte in
                    (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D
                }
            }
        }

        /// The longest file name, in bytes (`NAME_MAX` of the usual file systems).
        static let maxFileNameBytes = 255

        /// The file of a host on a route, relative to the export folder.
        static func relativePath(host: String, route: Route) -> String {
            "\(route.rawValue)/\(host).json"
        }

        /// Creates `folder` and its parents, or fails with `export-unwritable` and the system's reason.
        private static func createFolder(_ folder: String) throws(CommandFailure) {
            if let failure = SystemReason.createFolder(folder, parents: true) {
                throw CommandFailure(code: "export-unwritable", message: "cannot create \(folder): \(SystemReason.text(errno: failure))")
            }
        }

        func run() async throws {
            let console = Console.standard
            let folder = out ?? (store.directory as NSString).appendingPathComponent("export")
            var files: [File] = []
            var skipped: [Skipped] = []
            do {
                let database = try await store.open(create: false, readOnly: true)
                try Self.createFolder(folder)
                var routeFolders: Set<Route> = []
                // A page of hosts at a time: memory does not grow with the store.
                try await database.forEachHostPage { page in
                    let chunk = page.filter { $0.approvedSize != nil }.map(\.key)
                    guard !chunk.isEmpty else { return }
                    let states = try await database.states(of: chunk)
                    for key in chunk {
                        guard let state = states[key], let body = state.approvedBody else { continue }
                        // A plain name, and one short enough for HOST.json to be a file name (255
                        // bytes: a valid host has up to 253).
                        let reason = !Self.isPlainHostName(key.host) ? "not a plain host name, so it names no file"
                            : key.host.utf8.count + ".json".utf8.count > Self.maxFileNameBytes ? "too long for a file name (\(key.host.utf8.count) bytes and .json, over \(Self.maxFileNameBytes))"
                            : nil
                        if let reason {
                            console.err("aasa-fetch: warning: export-unsafe-host: skipped \(key.host.debugDescription) (\(key.route.rawValue)): \(reason)")
                            skipped.append(Skipped(host: key.host, route: key.route, reason: reason))
                            continue
                        }
                        let routeFolder = (folder as NSString).appendingPathComponent(key.route.rawValue)
                        if routeFolders.insert(key.route).inserted {
                            try Self.createFolder(routeFolder)
                        }
                        let path = (folder as NSString).appendingPathComponent(Self.relativePath(host: key.host, route: key.route))
                        do {
                            try Data(body).write(to: URL(fileURLWithPath: path), options: .atomic)
                        } catch {
                            throw CommandFailure(code: "export-unwritable", message: "cannot write \(path): \(SystemReason.of(error))")
                        }
                        files.append(File(host: key.host, route: key.route, path: path, bytes: body.count,
                                          approvedAt: state.approvedAt))
                    }
                }
            } catch let error as StoreError {
                throw CommandFailure(code: error.code, message: error.message)
            } catch let error as CommandFailure {
                throw error
            } catch {
                throw CommandFailure(code: "export-unwritable", message: "cannot write to \(folder): \(SystemReason.of(error))")
            }
            if json {
                try console.json(Output(out: folder, files: files, skipped: skipped))
            } else {
                let width = files.map(\.path.count).max() ?? 0
                let digits = files.map { String($0.bytes).count }.max() ?? 0
                for file in files {
                    let size = String(file.bytes)
                    console.out(file.path + String(repeating: " ", count: width - file.path.count + 2 + digits - size.count) + "\(Plural.count(file.bytes, "byte"))")
                }
                console.out("\(Plural.count(files.count, "approved file")) written to \(folder)"
                            + (skipped.isEmpty ? "" : "; \(Plural.count(skipped.count, "host")) skipped (see the warnings)"))
            }
            if !skipped.isEmpty { throw ExitStatus.failure }
        }
    }
}

/// `show --json` without a host, host by host: byte for byte what ``JSONOutput/string(_:)`` writes
/// for the whole ``ShowReport``. The document waits in a temporary file and is copied to standard
/// output once every host was read, so a store that fails halfway gets the error document, not
/// half a document; memory does not grow with the store.
struct ShowJSONStream {
    private let writer = ReportJSONWriter(style: .pretty)
    private let spool = SpoolFile(for: "the JSON document")
    private var hosts = JSONArrayPieces()

    /// Starts the document (its head and the `hosts` array).
    init(store: String, now: Date) {
        let store = (try? writer.string(store, depth: 1)) ?? "null"
        let time = (try? writer.string(now, depth: 1)) ?? "null"
        spool.append(Array("{\n  \"schemaVersion\": \(JSONSchemaVersion.current),\n  \"store\": \(store),\n  \"now\": \(time),\n  \"hosts\": [".utf8))
    }

    /// Adds one host.
    mutating func host(_ host: ShowReport.Host) throws {
        spool.append(Array(hosts.element(try writer.string(host, depth: 2)).utf8))
    }

    /// Ends the document and writes it to standard output (`spool-error` when its temporary file
    /// failed: `TMPDIR`).
    func finish(console: Console) throws(CommandFailure) {
        spool.append(Array((hosts.close + "\n}\n").utf8))
        do {
            if let failure = spool.failure { throw failure }
            console.beginDocument()
            try spool.forEachText { console.outJSONFragment($0) }
        } catch {
            throw CommandFailure(code: "spool-error", message: "\(error) (TMPDIR)")
        }
    }
}

/// The table of `show` without a host. Its rows wait in a temporary file (``SpoolFile``: escaped
/// cells, one row a line) until every row is known, since each column is as wide as its longest
/// value: memory stays flat whatever the store holds.
struct HostTable {
    static let header = ["HOST", "STATUS", "LAST APPROVED", "NEXT CHECK", "FAILURES"]
    private let spool = SpoolFile(for: "the table")
    private var widths = header.map(HostTable.width)
    private var rows = 0

    /// The columns an escaped cell takes on a terminal (its bytes when it is ASCII).
    static func width(_ cell: String) -> Int {
        cell.utf8.allSatisfy { $0 < 0x80 } ? cell.utf8.count : HumanRenderer.columns(cell)
    }

    /// Adds a host's row.
    mutating func add(_ record: HostRecord) {
        let state = record.state
        let status = state.lastResult.map { "\(record.verdict.code ?? $0.code) \($0.httpStatus.map(String.init) ?? "---")" } ?? "not fetched"
        let next = state.unneededSince.map { "unneeded since \(Timestamp.string($0))" }
            ?? Timestamp.string(state.nextCheck) + (state.nextCheck <= record.now ? "*" : "")
        // Escaped here, so a cell holds no control character: no field or line separator, and
        // the widths are those the terminal shows.
        let cells = [state.key.description, status, state.approvedAt.map(Timestamp.string) ?? "never", next, "\(state.consecutiveFailures)"]
            .map(TerminalText.escaped)
        for (column, cell) in cells.enumerated() { widths[column] = max(widths[column], Self.width(cell)) }
        let mark = state.lastResult == nil ? "?" : record.verdict.associated.map { $0 ? "1" : "0" } ?? "-"
        spool.append(Array((([mark] + cells).joined(separator: "\u{1F}") + "\n").utf8))
        rows += 1
    }

    /// Prints the table (or that the store holds no host); `spool-error` when its temporary file
    /// failed (`TMPDIR`).
    func print(console: Console, emptyStore store: String) throws(CommandFailure) {
        guard rows > 0 else {
            console.out("the store \(store) holds no host")
            return
        }
        if let failure = spool.failure { throw CommandFailure(code: "spool-error", message: "\(failure) (TMPDIR)") }
        let renderer = HumanRenderer(console: console)
        // Two spaces between columns; the host column starts after the mark. The cells are
        // escaped already.
        func line(_ cells: ArraySlice<String>) -> String {
            var text = ""
            for (column, cell) in cells.enumerated() {
                text += cell
                if column < cells.count - 1 { text += String(repeating: " ", count: max(0, widths[column] - Self.width(cell)) + 2) }
            }
            return text
        }
        console.out("  " + line(Self.header[...]))
        var printed = 0
        var pending: [UInt8] = []
        func printRow(_ bytes: ArraySlice<UInt8>) {
            let fields = String(decoding: bytes, as: UTF8.self).split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == Self.header.count + 1, let mark = fields.first else { return }
            // Never fetched: a plain `?`; fetched but not judged: the painted one.
            let shown = mark == "?" ? "?" : renderer.mark(mark == "1" ? true : mark == "0" ? false : nil)
            console.out("\(shown) " + line(fields.dropFirst()))
            printed += 1
        }
        do {
            try spool.forEachChunk { chunk in
                pending += chunk
                var start = pending.startIndex
                while let end = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    printRow(pending[start..<end])
                    start = end + 1
                }
                pending.removeSubrange(..<start)
            }
        } catch {
            throw CommandFailure(code: "spool-error", message: "\(error) (TMPDIR)")
        }
        guard printed == rows else {
            throw CommandFailure(code: "spool-error", message: "the table's temporary file lost rows (\(printed) of \(rows) read back)")
        }
        console.out("\(Plural.count(rows, "host")); * due now")
    }
}
