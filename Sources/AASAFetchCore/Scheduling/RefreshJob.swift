import Foundation

/// One host a refresh (or a recorded run) fetched: its outcome and the changes it brought.
public struct RefreshedHost: Sendable, Encodable {
    /// Host and route.
    public var key: HostKey
    /// How the download was classified.
    public var outcome: RefreshOutcome
    /// `ok` or the failure code.
    public var code: String
    /// One line on what happened.
    public var reason: String
    /// The HTTP status (304 when not modified).
    public var httpStatus: Int?
    /// The code of the result before, `nil` for a first download.
    public var previousCode: String?
    /// Failures in a row now.
    public var consecutiveFailures: Int
    /// When the host is due again.
    public var nextCheck: Date
    /// Whether a stored approved file is kept (or confirmed).
    public var hasApprovedFile: Bool
    /// The changes recorded in the history.
    public var events: [HistoryEvent]
    /// Whether every app ID that needs the host is listed for its entry's service in the file:
    /// `false` after a failed download, `nil` when no app ID is recorded for the host.
    public var associated: Bool? = nil
    /// The first app ID the approved file does not list (`app-not-listed`), or the error of an
    /// entry recorded with one (`entitlement-not-punycode`).
    public var notListed: Finding? = nil
    /// The fix of the download's failure, as a live run gives it (`nil` when it did not fail or
    /// has no clear fix). Not in the JSON shape (the CI formats show it).
    public var fix: String? = nil

    /// Fills ``associated`` and ``notListed`` from the download and the entries that need the
    /// host, as a run judges it: a failure associates nothing; an approved file lists each app ID
    /// for its entry's service, or the first it does not is `app-not-listed`.
    mutating func judge(_ result: HostFetchResult, needs: [EntryNeed]) {
        // An entry recorded with its error fails whatever the file says and whether an app ID is
        // known (``StoredVerdict``).
        let errors = StoredVerdict.entryErrors(of: needs)
        if let error = errors.keys.sorted().first.flatMap({ errors[$0] }) {
            associated = false
            // A failed download's own code comes first, as `show` gives it.
            if outcome == .approved || outcome == .notModified { notListed = error }
            return
        }
        let apps = needs.filter { !$0.appID.isEmpty }
        guard !apps.isEmpty else { return }
        guard outcome == .approved || outcome == .notModified, let document = result.document else {
            associated = false
            return
        }
        if let missing = apps.first(where: { !document.appIDs(for: $0.service).contains($0.appID) }) {
            associated = false
            notListed = AssociationJudge.notListed(missing.appID, service: missing.service, document: document, host: key.host, location: missing.entry)
        } else {
            associated = true
        }
    }

    /// Whether one of its changes means an association broke.
    public var isBreaking: Bool { events.contains { $0.kind.isBreaking } }

    /// The JSON shape: host and route side by side with the outcome.
    struct Record: Encodable {
        var host: String
        var route: Route
        var outcome: RefreshOutcome
        var code: String
        var reason: String
        var httpStatus: Int?
        var previousCode: String?
        var consecutiveFailures: Int
        var nextCheck: Date
        var approvedFileKept: Bool
        var associated: Bool?
        var events: [HistoryEvent]

        init(_ host: RefreshedHost) {
            self.host = host.key.host
            route = host.key.route
            outcome = host.outcome
            code = host.code
            reason = host.reason
            httpStatus = host.httpStatus
            previousCode = host.previousCode
            consecutiveFailures = host.consecutiveFailures
            nextCheck = host.nextCheck
            approvedFileKept = host.hasApprovedFile
            associated = host.associated
            events = host.events
        }
    }

    /// Encodes ``Record``, the flat JSON shape.
    public func encode(to encoder: any Encoder) throws {
        try Record(self).encode(to: encoder)
    }
}

/// What one `aasa-fetch refresh` pass did: `refresh --json` prints it.
public struct RefreshReport: Sendable, Encodable {
    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// The time the pass ran at.
    public var now: Date
    /// The lease owner this process used.
    public var owner: String
    /// Every host fetched and recorded, in the order downloads started.
    public var hosts: [RefreshedHost] = []
    /// Due hosts left alone because another process held their lease.
    public var leasedElsewhere = 0
    /// The lease owners of those hosts.
    public var otherOwners: [String] = []
    /// Leased hosts released unrecorded because the job was stopped.
    public var abandoned = 0
    /// Hosts whose lease lapsed while they were fetched and that another process took over: their
    /// downloads were not recorded, so they never overwrite the newer result.
    public var leaseLost: [HostKey] = []
    /// Whether the job was stopped (SIGINT/SIGTERM/SIGHUP) before it finished.
    public var stopped = false
    /// The earliest next check in the store after the pass.
    public var nextDue: Date?
    /// Hosts not fetched because this process ran short of descriptors or threads, or libcurl
    /// refused the request, by code (``HostFetchResult/shortageCodes``): released unrecorded
    /// (counted in ``abandoned`` too), a failure of the run (not in the JSON document).
    public var shortages: [String: Int] = [:]
    /// What the pass pruned after it (``RetentionPolicy``): hosts unneeded past their grace
    /// period, and old history events.
    public var pruned = PruneReport()
    /// With `--notify`: the delivery run after the pass (a worker's: after the batch); `nil` without.
    public var notifications: NotifyReport?

    /// Creates an empty report.
    public init(now: Date, owner: String) {
        self.now = now
        self.owner = owner
    }

    /// Adds what one batch of the pass did: its hosts, those it abandoned or lost, its shortages.
    mutating func add(batch: RefreshReport) {
        hosts += batch.hosts
        abandoned += batch.abandoned
        leaseLost += batch.leaseLost
        shortages.merge(batch.shortages, uniquingKeysWith: +)
    }

    /// Whether an association broke (approved → failing, or an app no longer listed): exit 1.
    public var broken: Bool { hosts.contains { $0.isBreaking } }
    /// Every change recorded.
    public var changes: [HistoryEvent] { hosts.flatMap(\.events) }

    /// The JSON shape: the counts beside the hosts.
    struct Record: Encodable {
        var schemaVersion: Int
        var now: Date
        var owner: String
        var fetched: Int
        var notModified: Int
        var approved: Int
        var failed: Int
        var changes: Int
        var broken: Bool
        var leasedElsewhere: Int
        var otherOwners: [String]
        var abandoned: Int
        var leaseLost: [String]
        var stopped: Bool
        var nextDue: Date?
        var pruned: PruneReport
        var notifications: NotifyReport?
        var hosts: [RefreshedHost]

        init(_ report: RefreshReport) {
            schemaVersion = report.schemaVersion
            now = report.now
            owner = report.owner
            fetched = report.hosts.count
            notModified = report.hosts.filter { $0.outcome == .notModified }.count
            approved = report.hosts.filter { $0.outcome == .approved || $0.outcome == .notModified }.count
            failed = report.hosts.filter { $0.outcome == .transient || $0.outcome == .denied }.count
            changes = report.changes.count
            broken = report.broken
            leasedElsewhere = report.leasedElsewhere
            otherOwners = report.otherOwners
            abandoned = report.abandoned
            leaseLost = report.leaseLost.map(\.description)
            stopped = report.stopped
            nextDue = report.nextDue
            pruned = report.pruned
            notifications = report.notifications
            hosts = report.hosts
        }
    }

    /// Encodes ``Record``: the counts are computed from the hosts.
    public func encode(to encoder: any Encoder) throws {
        try Record(self).encode(to: encoder)
    }
}

extension HistoryEvent: Encodable {
    /// The JSON shape: `{"host","route","at","kind", …every field of the detail}` (`null` where a
    /// field does not apply to the kind).
    struct Record: Encodable {
        var host: String
        var route: Route
        var at: Date
        var kind: HistoryKind
        var code: String?
        var previousCode: String?
        var reason: String?
        var httpStatus: Int?
        var changes: [AASAChange]?
        var appID: String?
        var entry: String?
        var service: Service?

        init(_ event: HistoryEvent) {
            host = event.key.host
            route = event.key.route
            at = event.at
            kind = event.kind
            code = event.detail.code
            previousCode = event.detail.previousCode
            reason = event.detail.reason
            httpStatus = event.detail.httpStatus
            changes = event.detail.changes
            appID = event.detail.appID
            entry = event.detail.entry
            service = event.detail.service
        }
    }

    /// Encodes ``Record``, the flat JSON shape.
    public func encode(to encoder: any Encoder) throws {
        try Record(self).encode(to: encoder)
    }
}

/// Records downloads in a store: the refresh policy applied to each result, one store call per host.
public struct StoreRecorder: Sendable {
    /// The store.
    public let store: any AssociationStore
    /// The policy.
    public let policy: RefreshPolicy
    /// Whether each change recorded is also queued for delivery (`refresh --notify`), in the same
    /// transaction (``HostUpdate/notifications``).
    public var notify = false

    /// Creates a recorder.
    public init(store: any AssociationStore, policy: RefreshPolicy = RefreshPolicy()) {
        self.store = store
        self.policy = policy
    }

    /// Records every result (cancelled ones are released instead) and returns what each changed.
    ///
    /// - Parameters:
    ///   - results: the downloads, in start order.
    ///   - previous: the stored states before them.
    ///   - owner: the lease owner to release, when the hosts were leased.
    ///   - now: the time recorded.
    /// - Returns: the hosts recorded; those released unrecorded (cancelled); and those whose lease
    ///   another process took over meanwhile (not recorded, see ``AssociationStore/record(_:owner:)``).
    public func record(
        _ results: [HostFetchResult], previous: [HostKey: HostState], owner: String?, now: Date
    ) async throws -> (recorded: [RefreshedHost], abandoned: [HostKey], leaseLost: [HostKey]) {
        let keys = results.map { HostKey(host: $0.host, route: $0.route) }
        let needs = try await store.needs(for: keys)
        var recorded: [RefreshedHost] = []
        var abandoned: [HostKey] = []
        var lost: [HostKey] = []
        var planned: [(key: HostKey, result: HostFetchResult, update: HostUpdate)] = []
        for (key, result) in zip(keys, results) {
            guard var update = policy.update(for: result, previous: previous[key], needs: needs[key] ?? [], now: now) else {
                abandoned.append(key)
                continue
            }
            if notify && !update.events.isEmpty {
                update.notifications = NotificationEvent.events(
                    for: update.events, result: result, previousCode: previous[key]?.lastResult?.code, needs: needs[key] ?? [])
            }
            planned.append((key, result, update))
        }
        // One store call (one transaction in SQLite) for the whole batch.
        let outcomes = try await store.recordAll(planned.map(\.update), owner: owner)
        for (item, outcome) in zip(planned, outcomes) {
            switch outcome {
            case .recorded: break
            case .leaseLost: lost.append(item.key); continue
            case .hostMissing: continue
            }
            let (key, result, update) = item
            let before = previous[key]
            var host = RefreshedHost(
                key: key, outcome: update.outcome, code: result.code, reason: result.reason, httpStatus: result.httpStatus,
                previousCode: before?.lastResult?.code, consecutiveFailures: update.consecutiveFailures,
                nextCheck: update.nextCheck, hasApprovedFile: update.approvedBody != nil || before?.approvedSize != nil,
                events: update.events,
                fix: result.findings.first { $0.code == result.code && $0.severity == .error }?.fix
            )
            host.judge(result, needs: needs[key] ?? [])
            recorded.append(host)
        }
        if let owner, !abandoned.isEmpty {
            try await store.release(abandoned, owner: owner)
        }
        return (recorded, abandoned, lost)
    }
}

/// `aasa-fetch refresh`: fetches the due hosts of a store, batch by batch, with conditional
/// requests, and records the results. Hosts are leased in the store before they are fetched, so two
/// jobs on one store never fetch the same host; a stopped job abandons its in-flight batch and
/// releases the leases of what it did not record.
public struct RefreshJob: Sendable {
    /// The store.
    public let store: any AssociationStore
    /// The downloader of origin rows (admission in priority order, global concurrency).
    public let fetcher: AASAFetcher
    /// The downloader of CDN rows (those recorded by `fetch --route cdn`).
    public let cdn: CDNFetcher
    /// The refresh policy.
    public let policy: RefreshPolicy
    /// Orders each batch (tier of the current region, then the store's order).
    public let prioritizer: DomainPrioritizer
    /// This job's lease owner.
    public let owner: String
    /// Hosts leased per batch.
    public let batchSize: Int
    /// How long a lease lasts; must outlast a batch's downloads.
    public let leaseSeconds: TimeInterval
    /// What each pass prunes after it (a worker: when it starts, then hourly).
    public let retention: RetentionPolicy
    /// Whether changes are queued for delivery to a webhook (`refresh --notify`); see
    /// ``StoreRecorder/notify`` and ``Notifier``.
    public var notify = false

    /// Creates a job. Each leased row is fetched over its own route: origin rows with `fetcher`,
    /// CDN rows with `cdn` (by default Apple's CDN over `fetcher`'s transport and options).
    public init(
        store: any AssociationStore, fetcher: AASAFetcher, cdn: CDNFetcher? = nil, policy: RefreshPolicy = RefreshPolicy(),
        prioritizer: DomainPrioritizer, owner: String, batchSize: Int, leaseSeconds: TimeInterval,
        retention: RetentionPolicy = RetentionPolicy()
    ) {
        self.retention = retention
        self.store = store
        self.fetcher = fetcher
        self.cdn = cdn ?? CDNFetcher(transport: fetcher.transport, options: fetcher.options)
        self.policy = policy
        self.prioritizer = prioritizer
        self.owner = owner
        self.batchSize = max(1, batchSize)
        self.leaseSeconds = leaseSeconds
    }

    /// How often a worker prunes the store: hourly.
    public static let workerPruneInterval: TimeInterval = 3600

    /// A lease owner name for this process: `hostname:pid:random`.
    public static func makeOwner() -> String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Runs one pass: claims due hosts until none is left (or `stop` fires, or a batch held hosts
    /// this process could not fetch: ``RefreshReport/shortages``), fetches and records them.
    ///
    /// - Parameters:
    ///   - now: the clock (tests and `--now` pass a fixed time).
    ///   - stop: fired by SIGINT/SIGTERM/SIGHUP; the in-flight batch is abandoned and its leases released.
    ///   - progress: called after each host finishes.
    public func run(
        now: @escaping @Sendable () -> Date,
        stop: StopSignal = StopSignal(),
        progress: @escaping @Sendable (Int, HostFetchResult) -> Void = { _, _ in }
    ) async throws -> RefreshReport {
        var report = RefreshReport(now: now(), owner: owner)
        var first = true
        while !stop.isStopped {
            let batch = try await runBatch(now: now, stop: stop, progress: progress)
            if first {
                report.leasedElsewhere = batch.claim.leasedElsewhere
                report.otherOwners = batch.claim.otherOwners
                first = false
            }
            guard !batch.claim.hosts.isEmpty else { break }
            report.add(batch: batch.report)
            // Hosts this process could not fetch are released due as they were: the next claim
            // would take them again at once. The pass ends; the run fails with the shortage.
            guard batch.report.shortages.isEmpty else { break }
        }
        report.stopped = stop.isStopped
        if !report.stopped { report.pruned = try await retention.prune(store, now: now(), stop: stop) }
        report.nextDue = try await Task { try await store.nextDue() }.value
        return report
    }

    /// Claims one batch of due hosts, fetches and records them. The report covers that batch only
    /// (`nextDue` is not filled); the claim says what was leased and what was left to others.
    public func runBatch(
        now: @escaping @Sendable () -> Date,
        stop: StopSignal = StopSignal(),
        progress: @escaping @Sendable (Int, HostFetchResult) -> Void = { _, _ in }
    ) async throws -> (claim: DueClaim, report: RefreshReport) {
        let time = now()
        let claim = try await store.claimDue(now: time, limit: batchSize, leaseSeconds: leaseSeconds, owner: owner)
        return (claim, try await fetchAndRecord(claim, at: time, now: now, stop: stop, progress: progress))
    }

    /// Fetches and records the hosts of a claim (leased to this job), releasing what it did not
    /// record; the report covers them (`nextDue` is not filled). A store that cannot be reached
    /// when the downloads end (a database server restarting, a SQLite file another process holds
    /// locked: ``transientStoreCodes``) is asked again after 2, 4 and 8 s
    /// before the batch is given up (``recordRetryDelays``): the downloads are not lost to a
    /// short outage. A stop ends the waiting.
    func fetchAndRecord(
        _ claim: DueClaim, at time: Date, now: @escaping @Sendable () -> Date, stop: StopSignal,
        progress: @escaping @Sendable (Int, HostFetchResult) -> Void
    ) async throws -> RefreshReport {
        let batch = await fetch(claim, at: time, now: now, stop: stop, progress: progress)
        var delays = Self.recordRetryDelays[...]
        while true {
            do {
                return try await record(batch)
            } catch let error as StoreError where Self.transientStoreCodes.contains(error.code) {
                guard let delay = delays.popFirst(), !stop.isStopped, !(await stop.sleep(for: delay)) else { throw error }
            }
        }
    }

    /// The waits before recording a fetched batch again when the store could not be reached.
    static let recordRetryDelays: [Duration] = [.seconds(2), .seconds(4), .seconds(8)]

    /// Store failures that pass: a PostgreSQL server restarting or out of reach
    /// (`store-unreachable`), a store held locked by another process for longer than the wait for
    /// it (`store-locked`, a SQLite file's writer). A fetched batch is kept and recorded again,
    /// a worker retries, and a `--watch` job runs its next pass; any other store error ends the job.
    public static let transientStoreCodes: Set<String> = ["store-unreachable", "store-locked"]

    /// A claim's downloads, done and not yet recorded.
    struct FetchedBatch: Sendable {
        /// When the batch was leased (the report's `now`).
        var claimed: Date
        /// When the downloads ended: the results are recorded as of then, however late.
        var fetched: Date
        var leasedElsewhere: Int
        var otherOwners: [String]
        var previous: [HostKey: HostState]
        var results: [HostFetchResult]
        var stopped: Bool
    }

    /// Downloads the hosts of a claim, each over its own route, with conditional requests.
    func fetch(
        _ claim: DueClaim, at time: Date, now: @escaping @Sendable () -> Date, stop: StopSignal,
        progress: @escaping @Sendable (Int, HostFetchResult) -> Void
    ) async -> FetchedBatch {
        var batch = FetchedBatch(claimed: time, fetched: time, leasedElsewhere: claim.leasedElsewhere, otherOwners: claim.otherOwners,
                                 previous: [:], results: [], stopped: false)
        guard !claim.hosts.isEmpty else { return batch }
        // A stored name that is no host name (a store edited by hand or by another tool) is never
        // made into a URL: `x.example/evil?` fetched a path of its own, `user:pw@x.example` sent
        // credentials, and a name libcurl refuses failed every refresh. It gets a recorded result
        // of its own, so it waits for its next check like any failure.
        var refused: [HostFetchResult] = []
        let hosts = claim.hosts.filter { state in
            guard let problem = EntryParser.hostSyntaxProblem(state.key.host) else { return true }
            batch.previous[state.key] = state
            let reason = "the store names the host \(state.key.host.debugDescription), which is no host name (\(problem)): not fetched"
            refused.append(HostFetchResult(host: state.key.host, route: state.key.route, url: "", code: "entitlement-invalid-host", reason: reason,
                                           findings: [.error("entitlement-invalid-host", reason, fix: "aasa-fetch forget the host, and record its entry again")]))
            return false
        }
        let ordered = hosts.enumerated()
            .sorted { (prioritizer.tier(of: $0.element.key.host), $0.offset) < (prioritizer.tier(of: $1.element.key.host), $1.offset) }
            .map(\.element)
        // Validators per host and route: a CDN copy and the origin's file are different responses.
        var conditions: [HostKey: ConditionalRequest] = [:]
        for state in ordered {
            batch.previous[state.key] = state
            // Only while the last result is the approved response: after a failure, which URL
            // served the file and with which headers is not known, and a 304 would be judged
            // without them (a signed file's media type, its Cache-Control).
            if let body = state.approvedBody, !state.validators.isEmpty, let last = state.lastResult, last.code == "ok" {
                conditions[state.key] = ConditionalRequest(validators: state.validators, body: body, headers: last.headers, url: last.url)
            }
        }
        // Each row over its own route, so its result lands on that row (key = host and route).
        let fetches = ordered.map { PlannedFetch(host: $0.key.host, route: $0.key.route, tier: prioritizer.tier(of: $0.key.host), entryIndexes: []) }
        let fetcher = RouteFetcher(origin: self.fetcher, cdn: cdn)
        let download = Task { await fetcher.fetchAll(fetches, conditions: conditions, progress: progress) }
        let handler = stop.whenStopped { download.cancel() }
        batch.results = refused + (await download.value)
        stop.removeHandler(handler)  // a worker runs many batches: keep no finished download alive
        batch.fetched = now()
        batch.stopped = stop.isStopped
        return batch
    }

    /// Records a fetched batch, releasing what it did not record. Throws the store's error with
    /// nothing recorded (one transaction), so the same batch can be recorded again later.
    func record(_ batch: FetchedBatch) async throws -> RefreshReport {
        var report = RefreshReport(now: batch.claimed, owner: owner)
        report.leasedElsewhere = batch.leasedElsewhere
        report.otherOwners = batch.otherOwners
        guard !batch.results.isEmpty else { return report }
        // Record in a task of its own: the store must not see the stop as a cancellation.
        var recorder = StoreRecorder(store: store, policy: policy)
        recorder.notify = notify
        let owner = self.owner
        let (recorded, abandoned, lost) = try await Task {
            try await recorder.record(batch.results, previous: batch.previous, owner: owner, now: batch.fetched)
        }.value
        report.hosts = recorded
        report.abandoned = abandoned.count
        report.leaseLost = lost
        report.stopped = batch.stopped
        for result in batch.results where HostFetchResult.shortageCodes.contains(result.code) {
            report.shortages[result.code, default: 0] += 1
        }
        return report
    }

    /// What a worker does between batches.
    public enum WorkerEvent: Sendable {
        /// A batch was fetched and recorded (its report; `nextDue` filled).
        case batch(RefreshReport)
        /// Nothing was due for this worker; it sleeps until `until` (or a stop).
        case idle(until: Date, leasedElsewhere: Int)
        /// A store call failed with `store-unreachable` or `store-locked` (``transientStoreCodes``);
        /// the worker retries after `retryIn` seconds (`nil`: it is stopping). `unrecorded`:
        /// results of a fetched batch kept to be recorded first.
        case storeUnavailable(StoreError, retryIn: TimeInterval?, unrecorded: Int)
        /// The worker pruned the store (``RetentionPolicy``; when it starts, then hourly) and removed something.
        case pruned(PruneReport)
        /// Queued notifications were delivered, or one failed, or some were dropped (`--notify`).
        case notified(NotifyReport)
    }

    /// `refresh --worker`: claims a batch, fetches and records it, and again, until `stop` fires.
    /// When nothing is due it sleeps until the next check in the store or the first lapse of
    /// another worker's lease on a due host (that worker may have died), at most `interval`
    /// seconds. A store that cannot be reached or stays locked (``transientStoreCodes``) is
    /// retried after at most `interval` seconds; any other store error ends the loop (thrown).
    ///
    /// A batch fetched while the store is unreachable is kept and recorded as soon as the store
    /// answers, before anything else, as of when it was fetched: its hosts are not fetched again.
    /// A host whose lease another worker took over in the meantime keeps the newer result
    /// (`leaseLost`). Stopped with such a batch, the worker tries once more to record it, then
    /// throws the store's error, saying how many results were lost (their leases lapse).
    ///
    /// - Parameters:
    ///   - sync: run before each batch and idle wake (``StoreClock/sync(with:)``: `now` follows the
    ///     store's server); its store errors count as the batch's.
    ///   - onEvent: called after each batch, before each sleep, and on each retry.
    public func work(
        now: @escaping @Sendable () -> Date,
        stop: StopSignal,
        interval: TimeInterval,
        notifier: Notifier? = nil,
        sync: (@Sendable () async throws -> Void)? = nil,
        onEvent: @escaping @Sendable (WorkerEvent) -> Void
    ) async throws {
        var nextPrune = Date.distantPast
        var unrecorded: FetchedBatch?
        while !stop.isStopped {
            let pause: TimeInterval
            do {
                try await sync?()
                var report: RefreshReport
                var claim: DueClaim?
                if let batch = unrecorded {
                    report = try await record(batch)
                    unrecorded = nil
                } else {
                    if now() >= nextPrune {
                        let pruned = try await retention.prune(store, now: now(), stop: stop)
                        nextPrune = now().addingTimeInterval(Self.workerPruneInterval)
                        if !pruned.isEmpty { onEvent(.pruned(pruned)) }
                    }
                    let time = now()
                    let claimed = try await store.claimDue(now: time, limit: batchSize, leaseSeconds: leaseSeconds, owner: owner)
                    let batch = await fetch(claimed, at: time, now: now, stop: stop, progress: { _, _ in })
                    do {
                        report = try await record(batch)
                    } catch let error as StoreError where Self.transientStoreCodes.contains(error.code) {
                        unrecorded = batch
                        throw error
                    }
                    claim = claimed
                }
                try await deliver(notifier, into: &report, now: now, stop: stop, onEvent: onEvent)
                if let claim, claim.hosts.isEmpty {
                    let time = now()
                    var wake = time.addingTimeInterval(interval)
                    if let due = try await store.nextDue(), due > time { wake = min(wake, due) }
                    if let expiry = claim.nextLeaseExpiry { wake = min(wake, expiry) }
                    pause = min(interval, max(0.05, wake.timeIntervalSince(time)))
                    onEvent(.idle(until: time.addingTimeInterval(pause), leasedElsewhere: claim.leasedElsewhere))
                } else {
                    report.nextDue = try await Task { try await store.nextDue() }.value
                    onEvent(.batch(report))
                    // Out of descriptors or threads: the hosts were released; wait before taking them again.
                    guard !report.shortages.isEmpty else { continue }
                    pause = min(interval, 5)
                }
            } catch let error as StoreError where Self.transientStoreCodes.contains(error.code) {
                pause = min(interval, 5)
                onEvent(.storeUnavailable(error, retryIn: stop.isStopped ? nil : pause, unrecorded: unrecorded?.results.count ?? 0))
            }
            await stop.sleep(for: .milliseconds(Int(pause * 1000)))
        }
        guard let batch = unrecorded else { return }
        do {
            var report = try await record(batch)
            report.nextDue = try await Task { try await store.nextDue() }.value
            onEvent(.batch(report))
        } catch let error as StoreError {
            let count = batch.results.count
            throw StoreError(code: error.code, message: "\(error.message); \(count) fetched \(count == 1 ? "result was" : "results were") not recorded (their leases lapse)")
        }
    }

    /// After each batch and each idle wake: the notification queue, oldest first (one worker at a time).
    private func deliver(
        _ notifier: Notifier?, into report: inout RefreshReport, now: @escaping @Sendable () -> Date, stop: StopSignal,
        onEvent: @Sendable (WorkerEvent) -> Void
    ) async throws {
        guard let notifier else { return }
        let delivery = try await notifier.deliver(store: store, owner: owner, now: now, stop: stop)
        report.notifications = delivery
        if delivery.delivered > 0 || delivery.failure != nil || delivery.dropped > 0 { onEvent(.notified(delivery)) }
    }
}

