import AASAFetchCore
import ArgumentParser
import Foundation

/// One host as `show` prints it.
struct HostRecord: Encodable {
    struct EntryRecord: Encodable {
        var entry: String
        var service: Service
        var appIDs: [String]
    }

    var state: HostState
    var now: Date
    var entries: [EntryRecord]?
    var history: [HistoryEvent]?

    private enum CodingKeys: String, CodingKey {
        case host, route, tier, code, reason, httpStatus, fetchedAt, approved, lastApprovedAt, approvedBytes, etag
        case lastModified, consecutiveFailures, nextCheck, due, lease, entries, history
    }

    private struct Lease: Encodable {
        var owner: String
        var expires: String
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(state.key.host, forKey: .host)
        try c.encode(state.key.route, forKey: .route)
        try c.encode(state.tier, forKey: .tier)
        try c.encode(state.lastResult?.code, forKey: .code)
        try c.encode(state.lastResult?.reason, forKey: .reason)
        try c.encode(state.lastResult?.httpStatus, forKey: .httpStatus)
        try c.encode(state.lastResult.map { Timestamp.string($0.fetchedAt) }, forKey: .fetchedAt)
        try c.encode(state.isApproved, forKey: .approved)
        try c.encode(state.approvedAt.map(Timestamp.string), forKey: .lastApprovedAt)
        try c.encode(state.approvedSize, forKey: .approvedBytes)
        try c.encode(state.validators.etag, forKey: .etag)
        try c.encode(state.validators.lastModified, forKey: .lastModified)
        try c.encode(state.consecutiveFailures, forKey: .consecutiveFailures)
        try c.encode(Timestamp.string(state.nextCheck), forKey: .nextCheck)
        try c.encode(state.nextCheck <= now, forKey: .due)
        let lease = state.lease.flatMap { $0.expires > now ? Lease(owner: $0.owner, expires: Timestamp.string($0.expires)) : nil }
        try c.encode(lease, forKey: .lease)
        try c.encode(entries, forKey: .entries)
        try c.encode(history, forKey: .history)
    }
}

/// What `show --json` prints.
struct ShowReport: Encodable {
    var schemaVersion = 1
    var store: String
    var now: String
    var hosts: [HostRecord]
}

extension AASAFetchCommand {
    /// `aasa-fetch show [HOST]`: what the store knows. Without a host, one line per host (status,
    /// last approved file, next check, failures); with one, its entries and history too.
    ///
    /// Exit status: 0 shown, 1 the host is not in the store, 2 the store is missing or unusable.
    /// JSON: `{"schemaVersion","store","now","hosts":[{"host","route","tier","code","reason",
    /// "httpStatus","fetchedAt","approved","lastApprovedAt","approvedBytes","etag","lastModified",
    /// "consecutiveFailures","nextCheck","due","lease","entries","history"}]}` (`entries` and
    /// `history` are `null` without a host).
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what the store knows: status, last approved file, next check, failures, history."
        )

        @Argument(help: "A host to show in detail (its entries and history).") var host: String?
        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("With a host: how many history events (latest).", valueName: "n")) var historyLimit = 50
        @Option(help: .hidden) var now: String?
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let console = Console.standard
            let now = self.now.flatMap(Timestamp.parse) ?? Date()
            let records: [HostRecord]
            let path = store.location
            do {
                let database = try await store.open(create: false, readOnly: true)
                if let host {
                    let name = host.lowercased()
                    let states = try await database.states(of: Route.allCases.map { HostKey(host: name, route: $0) })
                    let keys = states.keys.sorted()
                    let needs = try await database.needs(for: keys)
                    var found: [HostRecord] = []
                    for key in keys {
                        guard var state = states[key] else { continue }
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
                        let history = try await database.history(of: key, limit: max(0, historyLimit))
                        found.append(HostRecord(state: state, now: now, entries: order.compactMap { byEntry[$0] }, history: history))
                    }
                    records = found
                } else {
                    records = try await database.allHosts().map { HostRecord(state: $0, now: now) }
                }
            } catch {
                let failure = CommandFailure(storeCall: error)
                console.err("aasa-fetch: \(failure.code): \(failure.message)")
                throw ExitStatus.cannotRun
            }
            if json {
                try console.json(ShowReport(store: path, now: Timestamp.string(now), hosts: records))
            } else {
                render(records, console: console)
            }
            if let host, records.isEmpty {
                console.err("aasa-fetch: host-unknown: \(host) is not in the store \(path)")
                throw ExitStatus.failure
            }
        }

        private func render(_ records: [HostRecord], console: Console) {
            if host == nil {
                if records.isEmpty {
                    console.out("the store \(store.location) holds no host")
                    return
                }
                let width = min(40, (records.map(\.state.key.description.count).max() ?? 10) + 2)
                func pad(_ text: String, _ n: Int) -> String { text.count >= n ? text + " " : text + String(repeating: " ", count: n - text.count) }
                console.out(pad("HOST", width) + pad("STATUS", 24) + pad("LAST APPROVED", 22) + pad("NEXT CHECK", 22) + "FAILURES")
                for record in records {
                    let state = record.state
                    let status = state.lastResult.map { "\($0.code) \($0.httpStatus.map(String.init) ?? "---")" } ?? "not fetched"
                    let mark = state.lastResult == nil ? "?" : (state.isApproved ? console.paint("✔", .green) : console.paint("✘", .red))
                    let next = Timestamp.string(state.nextCheck) + (state.nextCheck <= record.now ? "*" : "")
                    console.out("\(mark) " + pad(state.key.description, width - 2) + pad(status, 24)
                        + pad(state.approvedAt.map(Timestamp.string) ?? "never", 22) + pad(next, 22) + "\(state.consecutiveFailures)")
                }
                console.out("\(records.count) host(s); * due now")
                return
            }
            for record in records {
                let state = record.state
                console.out("\(state.key.description)  tier \(state.tier)")
                if let last = state.lastResult {
                    console.out("  last result    \(last.code)\(last.httpStatus.map { " (HTTP \($0))" } ?? "") at \(Timestamp.string(last.fetchedAt)): \(last.reason)")
                } else {
                    console.out("  last result    not fetched yet")
                }
                if let size = state.approvedSize {
                    console.out("  last approved  \(size) bytes, confirmed \(state.approvedAt.map(Timestamp.string) ?? "?")"
                        + (state.validators.etag.map { ", ETag \($0)" } ?? "") + (state.validators.lastModified.map { ", Last-Modified \($0)" } ?? ""))
                } else {
                    console.out("  last approved  none")
                }
                console.out("  next check     \(Timestamp.string(state.nextCheck))\(state.nextCheck <= record.now ? " (due)" : "")")
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
    }

    /// `aasa-fetch forget HOST`: removes a host (every route), its entries and its history.
    ///
    /// Exit status: 0 removed, 1 the host was not in the store, 2 the store is missing or unusable.
    /// JSON: `{"host","removed"}` (`removed`: how many host records, one per route).
    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a host, its entries and its history from the store.")

        @Argument(help: "The host to forget.") var host: String
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print JSON.") var json = false

        private struct Output: Encodable {
            var host: String
            var removed: Int
        }

        func run() async throws {
            let console = Console.standard
            let name = host.lowercased()
            let removed: Int
            do {
                removed = try await store.open(create: false).forget(host: name)
            } catch {
                let failure = CommandFailure(storeCall: error)
                console.err("aasa-fetch: \(failure.code): \(failure.message)")
                throw ExitStatus.cannotRun
            }
            if json {
                try console.json(Output(host: name, removed: removed))
            } else if removed > 0 {
                console.out("forgot \(name)")
            }
            if removed == 0 {
                console.err("aasa-fetch: host-unknown: \(name) is not in the store \(store.location)")
                throw ExitStatus.failure
            }
        }
    }

    /// `aasa-fetch export [--out DIR]`: writes each host's last approved file to `DIR/HOST.json`
    /// (`DIR/HOST.cdn.json` for the CDN route). Default `DIR`: `export` inside the cache folder.
    ///
    /// Exit status: 0 written, 2 the store is unusable or a file cannot be written.
    /// JSON: `{"out","files":[{"host","route","path","bytes","approvedAt"}]}`.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write the last approved file of every host, one file per host.")

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The folder to write to (default: export inside the cache folder).", valueName: "dir"))
        var out: String?
        @Flag(help: "Print JSON.") var json = false

        private struct File: Encodable {
            var host: String
            var route: Route
            var path: String
            var bytes: Int
            var approvedAt: String?
        }

        private struct Output: Encodable {
            var out: String
            var files: [File]
        }

        func run() async throws {
            let console = Console.standard
            let folder = out ?? (store.directory as NSString).appendingPathComponent("export")
            var files: [File] = []
            do {
                let database = try await store.open(create: false, readOnly: true)
                let keys = try await database.allHosts().filter { $0.approvedSize != nil }.map(\.key)
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                for chunk in stride(from: 0, to: keys.count, by: 500).map({ Array(keys[$0..<min($0 + 500, keys.count)]) }) {
                    let states = try await database.states(of: chunk)
                    for key in chunk {
                        guard let state = states[key], let body = state.approvedBody else { continue }
                        let name = key.route == .origin ? "\(key.host).json" : "\(key.host).\(key.route.rawValue).json"
                        let path = (folder as NSString).appendingPathComponent(name)
                        try Data(body).write(to: URL(fileURLWithPath: path), options: .atomic)
                        files.append(File(host: key.host, route: key.route, path: path, bytes: body.count,
                                          approvedAt: state.approvedAt.map(Timestamp.string)))
                    }
                }
            } catch let error as StoreError {
                console.err("aasa-fetch: \(error.code): \(error.message)")
                throw ExitStatus.cannotRun
            } catch let error as CommandFailure {
                console.err("aasa-fetch: \(error.code): \(error.message)")
                throw ExitStatus.cannotRun
            } catch {
                console.err("aasa-fetch: export-unwritable: cannot write to \(folder): \(error.localizedDescription)")
                throw ExitStatus.cannotRun
            }
            if json {
                try console.json(Output(out: folder, files: files))
            } else {
                for file in files { console.out("\(file.path)  \(file.bytes) bytes") }
                console.out("\(files.count) approved file(s) written to \(folder)")
            }
        }
    }
}
