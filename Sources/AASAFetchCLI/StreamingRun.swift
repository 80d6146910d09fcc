import AASAFetchCore
import Foundation

/// The fetch run (every route) without holding results: each host is fetched by the one fetch
/// stage (``RouteFetcher/fetchEach(next:handle:)``), judged, printed (human or JSON) and recorded
/// in the store (in batches) as soon as it and every host planned before it are done. With a
/// ``PlanSource`` the entries and plan are in memory; with a ``SpoolSource`` (a `--domains` list,
/// on every route) they stay in the run spool, so memory does not grow with the number of hosts. With
/// `--route both` a host's two answers travel together (``FetchedHost``) until it is judged.
struct StreamingRun {
    let source: any RunSource
    let fetcher: RouteFetcher
    let settled: InputOptions.Settled
    let region: String?
    /// The output format.
    let format: OutputFormat
    private var json: Bool { format == .json }
    let console: Console
    /// Where to record (the plan's hosts are registered there already); `nil` records nothing.
    let store: (any AssociationStore)?
    let progress: ProgressReporter
    /// Whether a stopping signal ended the run: what finished is recorded, and the closing
    /// summary (which would count the hosts never fetched) is not written.
    var stopped: @Sendable () -> Bool = { false }
    /// `--quiet`: no notes on standard error.
    var quiet = false

    /// Results recorded per store transaction.
    static let recordBatch = 256

    /// Runs the plan; returns the summary (`nil` when the spool failed) and the first store or
    /// spool failure, if any.
    func run() async -> (summary: RunSummary?, failure: CommandFailure?) {
        let appIDs = settled.appIDs
        var waiting: [Int: FetchedHost] = [:]
        var next = 0
        var done = 0
        var domainWarnings = 0
        var pending: [HostFetchResult] = []
        var storeFailure: CommandFailure?
        var spoolFailure: CommandFailure?
        // On the CDN route, CDN records are labelled "HOST (cdn)".
        let labelSuffix = source.labelsCDN ? RunRenderer.cdnSuffix.count : 0
        var shortages: [String: Int] = [:]
        var stopped = false
        var human = RunRenderer(console: console, hostWidth: RunRenderer.width(longest: source.longestHost.map { $0 + labelSuffix }))
        var writer = JSONStreamWriter(console: console)
        // The CI formats (github, sarif, junit): their own stream, fed at the same three points.
        var ci = format.isCI ? FetchCIStream(writer: CIWriters.standardOutput(format, console: console), sources: settled.sources) : nil

        if ci != nil {
            ci?.begin(findings: settled.findings)
        } else if json {
            do {
                // The head leaves its last line open (`"domains": [`): no progress line after it.
                try progress.output(endsLine: false) {
                    try writer.begin(appIDs: appIDs, appIDSource: settled.appIDSource, region: region, findings: settled.findings)
                }
            } catch {
                return (nil, CommandFailure(code: "internal-error", message: "\(error)"))
            }
        } else {
            human.begin(entries: source.entryCount, hosts: source.hostCount, appIDs: appIDs, findings: settled.findings)
        }
        // One batch is written in the background while the next one fills, so a store write does
        // not hold up the window (admissions happen only between results); batches stay in order.
        var writing: Task<(failure: CommandFailure?, superseded: Int), Never>?
        var superseded = 0
        func awaitWrite() async {
            if let written = await writing?.value {
                if let failure = written.failure, storeFailure == nil { storeFailure = failure }
                superseded += written.superseded
            }
            writing = nil
        }
        func flush() async {
            guard let store, !pending.isEmpty else { return }
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            await awaitWrite()
            writing = Task { await Self.record(batch, in: store) }
        }

        do {
            try await source.fetchEach(with: fetcher) { arrived in
                var fetched = arrived
                fetched.result.finishedAt = Date()
                let result = fetched.result
                done += 1
                if HostFetchResult.shortageCodes.contains(result.code) { shortages[result.code, default: 0] += 1 }
                progress.update(done: done, result: result)
                waiting[result.startOrder] = fetched
                // Print in start order: a host waits only for hosts planned before it.
                while let ready = waiting.removeValue(forKey: next) {
                    next += 1
                    guard spoolFailure == nil else { continue }
                    let domain: DomainReport
                    do {
                        domain = try source.judge(ready, appIDs: appIDs)
                    } catch {
                        spoolFailure = CommandFailure(spool: error)
                        continue
                    }
                    domainWarnings += domain.warningCount
                    // A JSON domain leaves its last line open (the comma comes with the next one).
                    do {
                        try progress.output(endsLine: !(json || format == .sarif)) {
                            if ci != nil { ci?.domain(domain) } else if json { try writer.domain(domain) } else { human.domain(domain) }
                        }
                    } catch {
                        spoolFailure = CommandFailure(code: "internal-error", message: "\(error)")
                        continue
                    }
                    if console.outputFailed && !stopped {
                        // Nobody reads any more (`| head`) or the output cannot be written: start
                        // nothing new and cancel the downloads under way (their results are not
                        // recorded); what finished is still recorded below.
                        stopped = true
                        withUnsafeCurrentTask { $0?.cancel() }
                    }
                    if store != nil {
                        // The store keeps the body; this run does not.
                        pending.append(ready.result)
                        if pending.count >= Self.recordBatch { await flush() }
                    }
                }
            }
        } catch {
            if spoolFailure == nil { spoolFailure = CommandFailure(spool: error) }
        }
        await flush()
        await awaitWrite()
        progress.finish()
        if superseded > 0, !quiet {
            console.diagnostic("note", "\(Plural.count(superseded, "host was", "hosts were")) recorded by another process (a refresh or another run) while this run fetched them; that result stands in the store, and this run's is shown but not recorded")
        }
        if let spoolFailure { return (nil, spoolFailure) }
        if self.stopped() {
            // Stopped by a signal: people get no closing summary (it would count what was never
            // fetched), but a document (JSON, SARIF, JUnit) is closed, so it can be read: the
            // entries whose hosts were not judged say `cancelled`.
            guard json || ci != nil else { return (nil, storeFailure) }
            do {
                try source.cancelUnjudged(Self.stoppedFinding)
            } catch {
                return (nil, CommandFailure(spool: error))
            }
        }

        do {
            let summary = AssociationJudge.summary(
                counts: try source.counts(), domains: source.hostCount, domainWarnings: domainWarnings, runFindings: settled.findings
            )
            if ci != nil {
                try ci?.finish(unfetchable: { body in try source.forEachVerdict(.unfetchable, body) }, summary: summary)
            } else if json {
                try writer.finish(entryCount: summary.entries, entries: { body in try source.forEachVerdict(.all, body) }, summary: summary)
            } else {
                try source.forEachVerdict(.unfetchable) { human.unfetchable($0) }
                try source.forEachVerdict(.fetchableWithOwnFindings) { human.ownFindings($0) }
                human.finish(summary: summary, runErrors: settled.findings.filter { $0.severity == .error }.count)
            }
            return (summary, storeFailure ?? .shortage(shortages))
        } catch {
            return (nil, CommandFailure(spool: error))
        }
    }
}

extension StreamingRun {
    /// Records one batch, each host judged against its stored state; a host another process
    /// recorded since that state was read, or with a download newer than this run's, keeps
    /// that result (see ``AssociationStore/record(_:owner:)``). Returns the failure instead of
    /// throwing it.
    static func record(_ batch: [HostFetchResult], in store: any AssociationStore) async -> (failure: CommandFailure?, superseded: Int) {
        do {
            let previous = try await store.states(of: batch.map { HostKey(host: $0.host, route: $0.route) })
            return (nil, try await StoreSession.record(batch, previous: previous, in: store, now: Date()).count)
        } catch let error as CommandFailure {
            return (error, 0)
        } catch {
            return (CommandFailure(storeCall: error), 0)
        }
    }
}

/// Where a ``StreamingRun``'s entries and hosts come from, and where its verdicts are kept.
protocol RunSource: AnyObject {
    /// The number of entries.
    var entryCount: Int { get }
    /// The number of distinct hosts.
    var hostCount: Int { get }
    /// The longest host's length (`nil` without hosts), for the human table's column.
    var longestHost: Int? { get }
    /// Whether host labels may carry the CDN suffix (`--route cdn`).
    var labelsCDN: Bool { get }
    /// Feeds every host in start order to the fetch stage, handing each fetched host over as it
    /// finishes (``HostFetchResult/startOrder`` is its position).
    func fetchEach(with fetcher: RouteFetcher, handle: (FetchedHost) async -> Void) async throws
    /// Judges a fetched host (called in start order) and updates the verdicts of its entries.
    func judge(_ fetched: FetchedHost, appIDs: [String]) throws -> DomainReport
    /// Calls `body` with the selected verdicts in entry order.
    func forEachVerdict(_ selection: VerdictSelection, _ body: (EntryVerdict) throws -> Void) throws
    /// Counts over every verdict.
    func counts() throws -> EntryCounts
    /// A run stopped by a signal: every fetchable entry whose host was not judged fails with
    /// `finding` (`cancelled`).
    func cancelUnjudged(_ finding: Finding) throws
}

extension StreamingRun {
    /// The finding of an entry whose host a stopped run never judged.
    static let stoppedFinding = Finding.error("cancelled", "the run was stopped before this entry's host was fetched",
                                              fix: "Run the check again.")
}

/// A run's entries, plan and verdicts in memory (entitlements, `--app`, `--domain`: small inputs).
final class PlanSource: RunSource {
    let plan: FetchPlan
    let labelsCDN: Bool
    private var verdicts: [EntryVerdict]
    /// Per entry: whether its host was judged (a stopped run cancels the others).
    private var judged: [Bool]
    /// With `--route both`: per plan position, the CDN fetch compared with it.
    private let comparisons: [PlannedFetch?]
    /// The verdicts the CDN's copies would give (`--route both`), kept apart so the origin alone
    /// decides the entries' verdicts.
    private var comparisonVerdicts: [EntryVerdict]

    /// A source over `plan`; `comparison` (from ``RoutedRun/split(_:route:)`` with `both`) are the
    /// CDN fetches compared with the plan's fetches of the same hosts.
    init(plan: FetchPlan, comparison: [PlannedFetch] = [], labelsCDN: Bool = false) {
        self.plan = plan
        self.labelsCDN = labelsCDN
        verdicts = plan.entries.map(EntryVerdict.init(parsed:))
        judged = Array(repeating: false, count: plan.entries.count)
        if comparison.isEmpty {
            comparisons = []
            comparisonVerdicts = []
        } else {
            var byHost: [String: PlannedFetch] = [:]
            for fetch in comparison where byHost[fetch.host] == nil { byHost[fetch.host] = fetch }
            comparisons = plan.fetches.map { byHost[$0.host] }
            comparisonVerdicts = verdicts
        }
    }

    var entryCount: Int { plan.entries.count }
    var hostCount: Int { plan.fetches.count }
    var longestHost: Int? { plan.fetches.map(\.host.count).max() }

    func fetchEach(with fetcher: RouteFetcher, handle: (FetchedHost) async -> Void) async {
        var position = 0
        await fetcher.fetchEach(next: { () -> RunFetch? in
            guard position < plan.fetches.count else { return nil }
            defer { position += 1 }
            return RunFetch(planned: plan.fetches[position], comparison: comparisons.isEmpty ? nil : comparisons[position])
        }, handle: handle)
    }

    func judge(_ fetched: FetchedHost, appIDs: [String]) -> DomainReport {
        let position = fetched.result.startOrder
        for index in plan.fetches[position].entryIndexes { judged[index] = true }
        var domain = AssociationJudge.judgeHost(plan.fetches[position], result: fetched.result, verdicts: &verdicts, appIDs: appIDs)
        RoutedRun.attachCDNRecord(to: &domain, result: fetched.result)
        if let compared = fetched.comparison, let planned = comparisons[position] {
            let cdnDomain = AssociationJudge.judgeHost(planned, result: compared, verdicts: &comparisonVerdicts, appIDs: appIDs)
            RoutedRun.attachComparison(to: &domain, origin: fetched.result, cdnDomain: cdnDomain, cdnResult: compared)
        }
        return domain
    }

    func forEachVerdict(_ selection: VerdictSelection, _ body: (EntryVerdict) throws -> Void) throws {
        for verdict in verdicts {
            switch selection {
            case .all: try body(verdict)
            case .unfetchable where !verdict.entry.isFetchable: try body(verdict)
            case .fetchableWithOwnFindings where verdict.entry.isFetchable && verdict.findings.contains { $0.code.hasPrefix("entitlement-") }:
                try body(verdict)
            default: break
            }
        }
    }

    func counts() -> EntryCounts { EntryCounts(verdicts) }

    func cancelUnjudged(_ finding: Finding) {
        for index in verdicts.indices where verdicts[index].entry.isFetchable && !judged[index] {
            verdicts[index].associated = false
            verdicts[index].code = finding.code
            verdicts[index].findings.append(finding)
        }
    }
}

/// A run's entries, hosts and verdicts in a ``RunSpool`` (`--domains` lists of any length, every
/// route): hosts are read a page at a time as the window admits them, and each host's entries are
/// loaded, judged and written back when its result comes. The downloads are those of the route
/// rule (``RouteChoice/downloads(servesPlain:servesModes:)``), as for ``PlanSource``: with `cdn`,
/// a host's entries without a mode through the CDN, then its `?mode=` entries from the origin (one
/// or two downloads); with `both`, each host from the origin with its CDN download alongside when
/// it has entries without a mode.
final class SpoolSource: RunSource {
    let spool: RunSpool
    let route: RouteChoice
    let entryCount: Int
    let hostCount: Int
    let longestHost: Int?
    var labelsCDN: Bool { route == .cdn }
    /// Hosts read per query.
    static let pageSize = 1000

    /// A download admitted and not yet judged: its host's tier and the entries it serves.
    private struct Admitted {
        var tier: Int
        var entries: DownloadEntries
    }

    /// The downloads admitted and not yet judged, by start position (bounded by the window and
    /// the results waiting for an earlier host).
    private var admitted: [Int: Admitted] = [:]

    init(spool: RunSpool, route: RouteChoice = .origin) throws(SpoolError) {
        self.spool = spool
        self.route = route
        let sizes = try spool.sizes(route: route)
        entryCount = sizes.entries
        hostCount = sizes.fetches
        longestHost = sizes.longestHost
    }

    /// The downloads of one host on the source's route, in start order.
    private func units(of host: RunSpool.SpooledHost) -> [(RunFetch, DownloadEntries)] {
        host.downloads(on: route).map { download in
            func planned(_ route: Route) -> PlannedFetch {
                PlannedFetch(host: host.host, route: route, tier: host.tier, entryIndexes: [])
            }
            return (RunFetch(planned: planned(download.route), comparison: download.comparedWithCDN ? planned(.cdn) : nil), download.entries)
        }
    }

    func fetchEach(with fetcher: RouteFetcher, handle: (FetchedHost) async -> Void) async throws {
        var cursor = spool.hostCursor(pageSize: Self.pageSize, forJudging: true)
        var position = 0
        // The downloads of the host read last that are not admitted yet (at most one: `cdn`'s origin side).
        var queued: [(RunFetch, DownloadEntries)] = []
        var failure: (any Error)?
        await fetcher.fetchEach(next: { () -> RunFetch? in
            do {
                while queued.isEmpty {
                    guard let host = try cursor.next() else { return nil }
                    queued = units(of: host)
                }
                let (unit, entries) = queued.removeFirst()
                admitted[position] = Admitted(tier: unit.planned.tier, entries: entries)
                position += 1
                return unit
            } catch {
                failure = error
                return nil
            }
        }, handle: handle)
        if let failure { throw failure }
    }

    func judge(_ fetched: FetchedHost, appIDs: [String]) throws -> DomainReport {
        let result = fetched.result
        guard let unit = admitted.removeValue(forKey: result.startOrder) else {
            throw SpoolError("no host admitted at position \(result.startOrder)")
        }
        return try spool.judge(result, tier: unit.tier, entries: unit.entries, comparison: fetched.comparison, appIDs: appIDs)
    }

    func forEachVerdict(_ selection: VerdictSelection, _ body: (EntryVerdict) throws -> Void) throws {
        try spool.forEachVerdict(selection, body)
    }

    func counts() throws -> EntryCounts { try spool.counts() }

    func cancelUnjudged(_ finding: Finding) throws { try spool.cancelUnjudged(finding) }
}

extension CommandFailure {
    /// Hosts that could not be fetched because this process ran short of descriptors or threads,
    /// or libcurl refused the request (`hosts` by code, ``HostFetchResult/shortageCodes``): a
    /// failure of the run (exit 2), never recorded as the hosts' results; `nil` when there were
    /// none. With several, descriptors are named first, then threads.
    static func shortage(_ hosts: [String: Int]) -> CommandFailure? {
        if let count = hosts["descriptors-exhausted"] {
            let limit = ProcessLimits.descriptorLimit.map { " (the limit is \($0))" } ?? ""
            return CommandFailure(
                code: "descriptors-exhausted",
                message: "\(Plural.count(count, "host")) could not be fetched: this process ran out of file descriptors\(limit); their results were not recorded. Raise the open-file limit (ulimit -n) or lower --concurrency"
            )
        }
        if let count = hosts["threads-exhausted"] {
            return CommandFailure(
                code: "threads-exhausted",
                message: "\(Plural.count(count, "host")) could not be fetched: this process could not start a thread (\(ProcessLimits.threadLimitText)); their results were not recorded. Raise the limit or lower --concurrency"
            )
        }
        if let count = hosts["invalid-request"] {
            return CommandFailure(
                code: "invalid-request",
                message: "\(Plural.count(count, "host")) could not be fetched: libcurl refused the request (see each host's reason); their results were not recorded. Check the options given to aasa-fetch (--cacert, --resolve, --connect-to, --cdn-base)"
            )
        }
        return nil
    }

    /// A spool failure (or any error of a spooled run) as a command failure (exit 2).
    init(spool error: any Error) {
        if let error = error as? SpoolError {
            self.init(code: error.code, message: error.message)
        } else if let error = error as? CommandFailure {
            self = error
        } else {
            self.init(code: "spool-error", message: "\(error)")
        }
    }
}

/// The pieces of a pretty-printed JSON array that is a member of the top-level object (elements
/// at nesting level 2), written one element at a time: what `JSONOutput` writes for the whole
/// array, byte for byte. Shared by the streamed documents of `fetch` and `show`.
struct JSONArrayPieces {
    /// Elements written so far.
    private(set) var count = 0

    /// The text that adds an element (the pretty JSON of a value at depth 2).
    mutating func element(_ text: String) -> String {
        defer { count += 1 }
        return (count == 0 ? "\n    " : ",\n    ") + text
    }

    /// The text that closes the array after its opening `[`: `]` when it is empty.
    var close: String { count == 0 ? "]" : "\n  ]" }
}

/// Writes ``RunReport``'s JSON document piece by piece, byte for byte what
/// ``JSONOutput/string(_:)`` writes for the whole report: the head (schema version, app IDs,
/// region, findings) first, each domain as it is judged, then the entries and the summary.
struct JSONStreamWriter {
    private let write: (String) -> Void
    private let started: () -> Void
    private var domains = JSONArrayPieces()
    private let writer = ReportJSONWriter(style: .pretty)

    /// A writer to standard output.
    init(console: Console) {
        self.init(write: console.outJSONFragment, started: console.beginDocument)
    }

    /// A writer to `write` (tests); `started` is called when the document begins.
    init(write: @escaping (String) -> Void, started: @escaping () -> Void = {}) {
        self.write = write
        self.started = started
    }

    /// A value's pretty JSON, placed at nesting level `depth`.
    private func encoded<T: Encodable>(_ value: T, depth: Int) throws -> String {
        try writer.string(value, depth: depth)
    }

    func begin(appIDs: [String], appIDSource: AppIDSource, region: String?, findings: [Finding]) throws {
        started()
        write("""
            {
              "schemaVersion": \(JSONSchemaVersion.current),
              "appIDs": \(try encoded(appIDs, depth: 1)),
              "appIDSource": \(try encoded(appIDSource, depth: 1)),
              "region": \(try encoded(region, depth: 1)),
              "findings": \(try encoded(findings, depth: 1)),
              "domains": [
            """)
    }

    mutating func domain(_ domain: DomainReport) throws {
        write(domains.element(try encoded(domain, depth: 2)))
    }

    /// Ends the document: the `entries` array (`entryCount` verdicts, handed over one at a time by
    /// `entries`) and the summary.
    func finish(entryCount: Int, entries: (_ body: (EntryVerdict) throws -> Void) throws -> Void, summary: RunSummary) throws {
        write(domains.close + ",\n")
        // One entry at a time: encoding the whole array at once would hold its text N times over.
        write("  \"entries\": [")
        var written = JSONArrayPieces()
        if entryCount > 0 {
            try entries { entry in write(written.element(try encoded(entry, depth: 2))) }
        }
        write(written.close + ",\n")
        write("  \"summary\": \(try encoded(summary, depth: 1))\n}\n")
    }
}
