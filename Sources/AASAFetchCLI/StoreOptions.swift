import AASAFetchCore
import ArgumentParser
import Foundation

/// Where the store is: `--store postgres://…` (default `$AASA_FETCH_STORE`) for a PostgreSQL
/// store shared by many machines; else `--cache DIR` (default `$AASA_FETCH_CACHE`, else `cache`),
/// file `DIR/aasa-fetch.sqlite`.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("cache"), help: ArgumentHelp("The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).", valueName: "dir"), completion: .directory)
    var cacheDirectory: String?

    @Option(name: .customLong("store"), help: ArgumentHelp(
        "A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).",
        valueName: "url"))
    var storeURL: String?

    /// The PostgreSQL URL in use, if any (`AASA_FETCH_STORE` arrives as `--store`, see ``OptionSources``).
    var url: String? { storeURL }

    /// Where the store is, for messages: the file, or the URL without its password.
    var location: String { url.map(PostgresAssociationStore.redacted) ?? path }

    /// The folder in use (`AASA_FETCH_CACHE` arrives as `--cache`, see ``OptionSources``).
    var directory: String { cacheDirectory ?? "cache" }

    /// The database file.
    var path: String { (directory as NSString).appendingPathComponent(SQLiteAssociationStore.fileName) }

    /// Opens the store: connects to PostgreSQL (creating its tables when missing) with `--store`,
    /// else opens the SQLite file; with `create`, makes the folder and file when missing; with
    /// `readOnly` (commands that only read), opens the SQLite file read-only.
    func open(create: Bool, readOnly: Bool = false) async throws(CommandFailure) -> any AssociationStore {
        if let url {
            do {
                return try await PostgresAssociationStore.connect(url: url)
            } catch let error as StoreError {
                throw CommandFailure(store: error)
            } catch {
                throw CommandFailure(code: "store-error", message: "\(location): \(error)")
            }
        }
        do {
            return try SQLiteAssociationStore(path: path, create: create, readOnly: readOnly)
        } catch let error as StoreError {
            throw CommandFailure(store: error)
        } catch {
            throw CommandFailure(code: "store-error", message: "\(path): \(error)")
        }
    }
}

/// The store grammar of a run that can go without a store (`fetch`, `match`): ``StoreOptions``
/// and `--no-store`.
struct RunStoreOptions: ParsableArguments {
    @OptionGroup var store: StoreOptions

    @Flag(name: .customLong("no-store"), help: "Use no store: read no stored file and record nothing (a pure run).")
    var noStore = false

    func validate() throws {
        if noStore, let given = store.cacheDirectory.map({ _ in "--cache" }) ?? store.storeURL.map({ _ in "--store" }) {
            throw ValidationError("--no-store uses no store; drop \(given)")
        }
    }
}

extension CommandFailure {
    /// A store failure as a command failure (exit 2).
    init(store error: StoreError) {
        self.init(code: error.code, message: error.message)
    }

    /// Any error of a store call as a command failure.
    init(storeCall error: any Error) {
        if let error = error as? StoreError {
            self.init(store: error)
        } else if let error = error as? CommandFailure {
            self = error
        } else {
            self.init(code: "store-error", message: "\(error)")
        }
    }
}

/// What runs that download (the default command, `match`) record in the store.
enum StoreSession {
    /// The entry a need records, which the store's verdict parses again: its normalized form, or
    /// as written when it has an error or is written in Unicode (`applinks:bücher.example` is
    /// fetched under its Punycode name and fails `entitlement-not-punycode`; recorded normalized,
    /// `show`, the page and the metrics called the host fine). An entry read back from a run's
    /// spool has no findings; the Unicode text is what marks it there.
    static func recordedName(of entry: AssociatedDomainEntry) -> String? {
        let asWritten = entry.findings.contains { $0.severity == .error } || entry.raw?.utf8.contains { $0 >= 0x80 } == true
        return asWritten ? entry.raw ?? entry.normalized : entry.normalized ?? entry.raw
    }

    /// The hosts of a plan and the entries and app IDs that need them.
    static func registrations(plan: FetchPlan, appIDs: [String]) -> (hosts: [HostRegistration], needs: [EntryNeed]) {
        var hosts: [HostRegistration] = []
        var needs: [EntryNeed] = []
        for fetch in plan.fetches {
            hosts.append(HostRegistration(key: HostKey(host: fetch.host, route: fetch.route), tier: fetch.tier))
            for index in fetch.entryIndexes {
                let entry = plan.entries[index]
                guard let service = entry.service, let name = Self.recordedName(of: entry) else { continue }
                for appID in appIDs.isEmpty ? [""] : appIDs {
                    needs.append(EntryNeed(entry: name, service: service, host: fetch.host, route: fetch.route, appID: appID))
                }
            }
        }
        return (hosts, needs)
    }

    /// Registers a plan's hosts and needs; returns their stored states.
    /// Registers a plan in chunks of `chunk` hosts and keeps none of the returned states, so a
    /// large crawl does not hold every stored file in memory (a streaming run loads the states of
    /// each batch just before recording it).
    static func registerInChunks(plan: FetchPlan, appIDs: [String], in store: any AssociationStore, now: Date, chunk: Int = 1000) async throws(CommandFailure) {
        var start = 0
        while start < plan.fetches.count {
            var part = plan
            part.fetches = Array(plan.fetches[start..<min(plan.fetches.count, start + chunk)])
            _ = try await register(plan: part, appIDs: appIDs, in: store, now: now, returningStates: false)
            start += chunk
        }
    }

    /// ``registerInChunks(plan:appIDs:in:now:chunk:)`` from a run spool: `chunk` hosts at a time
    /// in start order, each with the entries that need it, so the list is never held whole. Hosts
    /// are keyed by the route they are fetched on (``RouteChoice/downloads(servesPlain:servesModes:)``):
    /// with `cdn`, a host's entries without a mode on (host, cdn) and its `?mode=` entries on
    /// (host, origin); with `origin` and `both`, every entry on (host, origin).
    static func registerInChunks(spool: RunSpool, route: RouteChoice, appIDs: [String], in store: any AssociationStore, now: Date,
                                 chunk: Int = 1000) async throws(CommandFailure) {
        var cursor = spool.hostCursor(pageSize: chunk)
        while true {
            var hosts: [HostRegistration] = []
            var needs: [EntryNeed] = []
            do {
                let page = try cursor.nextPage()
                if page.isEmpty { return }
                for (host, entries) in zip(page, try spool.entries(of: page)) {
                    for download in host.downloads(on: route) {
                        let route = download.route
                        hosts.append(HostRegistration(key: HostKey(host: host.host, route: route), tier: host.tier))
                        for entry in entries where download.entries.includes(entry) {
                            guard let service = entry.service, let name = Self.recordedName(of: entry) else { continue }
                            for appID in appIDs.isEmpty ? [""] : appIDs {
                                needs.append(EntryNeed(entry: name, service: service, host: host.host, route: route, appID: appID))
                            }
                        }
                    }
                }
            } catch {
                throw CommandFailure(spool: error)
            }
            do {
                _ = try await store.register(hosts: hosts, needs: needs, now: now, returningStates: false)
            } catch {
                throw CommandFailure(storeCall: error)
            }
        }
    }

    static func register(plan: FetchPlan, appIDs: [String], in store: any AssociationStore, now: Date,
                         returningStates: Bool = true) async throws(CommandFailure) -> [HostKey: HostState] {
        let (hosts, needs) = registrations(plan: plan, appIDs: appIDs)
        do {
            return try await store.register(hosts: hosts, needs: needs, now: now, returningStates: returningStates)
        } catch {
            throw CommandFailure(storeCall: error)
        }
    }

    /// After a fetch run registered every host at `registeredAt`: its needs become the whole set
    /// of its app IDs (none: the set without an app ID) in the scopes the run registers
    /// (``RouteChoice/needScopes``), so entries and hosts the app no longer has stop being needed
    /// (``AssociationStore/retireNeeds(appIDs:scopes:registeredBefore:now:)``), and the needs
    /// another route registered stay. Hosts that became unneeded are named in a note on standard
    /// error (`console`, unless quiet).
    static func replaceSets(
        appIDs: [String], route: RouteChoice, registeredAt: Date, in store: any AssociationStore, console: Console?
    ) async throws(CommandFailure) {
        let retired: RetiredNeeds
        do {
            retired = try await store.retireNeeds(appIDs: appIDs.isEmpty ? [""] : appIDs, scopes: route.needScopes,
                                                  registeredBefore: registeredAt, now: registeredAt)
        } catch {
            throw CommandFailure(storeCall: error)
        }
        guard let console, !retired.unneededHosts.isEmpty else { return }
        let shown = retired.unneededHosts.prefix(10).map(\.description).joined(separator: ", ")
        let more = retired.unneededHosts.count > 10 ? " and \(retired.unneededHosts.count - 10) more" : ""
        console.err("aasa-fetch: note: \(Plural.count(retired.unneededHosts.count, "host is", "hosts are")) no longer needed by the entitlements recorded: \(shown)\(more); not refreshed any more, removed by refresh after its grace period (--prune-after, default 30d)")
    }

    /// Records downloads; returns the hosts another process recorded since `previous` was read
    /// (or with a newer download), whose stored result stands.
    @discardableResult
    static func record(_ results: [HostFetchResult], previous: [HostKey: HostState], in store: any AssociationStore, now: Date) async throws(CommandFailure) -> [HostKey] {
        do {
            return try await StoreRecorder(store: store).record(results, previous: previous, owner: nil, now: now).leaseLost
        } catch {
            throw CommandFailure(storeCall: error)
        }
    }
}

/// Parses `15m`, `30s`, `2h`, `1d` or plain seconds: finite, above 0 and at most
/// ``maxSeconds`` (a non-finite or absurd duration is a usage error, never a crash later).
enum IntervalParser {
    /// The longest duration accepted: 366 days.
    static let maxSeconds: Double = 366 * 86_400

    static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var value: Double?
        if let (suffix, factor) = units.first(where: { trimmed.hasSuffix($0.0) }) {
            value = Double(trimmed.dropLast(suffix.count)).map { $0 * factor }
        } else {
            value = Double(trimmed)
        }
        guard let value, value.isFinite, value > 0, value <= maxSeconds else { return nil }
        return value
    }
}
