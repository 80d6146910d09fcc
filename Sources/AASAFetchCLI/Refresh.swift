import AASAFetchCore
import ArgumentParser
import CurlTransport
import Dispatch
import Foundation

extension AASAFetchCommand {
    /// `aasa-fetch refresh`: the cron job. Fetches only the hosts of the store that are due, with
    /// conditional requests, records the results under the refresh policy and reports changes.
    ///
    /// Quiet when nothing changed. Exit status: 0 nothing broke, 1 an association broke (a host
    /// that served an approved file now fails, or an app that needs a host is no longer listed),
    /// 2 the store is missing or unusable, 64 usage. With `--watch` it runs a pass every
    /// `--interval` until SIGINT/SIGTERM/SIGHUP, then stops cleanly and exits 0.
    /// With `--worker` (for a PostgreSQL store shared by many machines, or a SQLite one) it leases
    /// a batch of due hosts, fetches and records it, and again; when nothing is due it sleeps until
    /// the next check (or the lapse of a lease another worker may have died with), at most
    /// `--interval` (default 60 s); on SIGINT/SIGTERM/SIGHUP it releases its leases and exits 0.
    /// JSON shape: ``RefreshReport`` (one object; with `--watch`, one compact line per pass; with
    /// `--worker`, one per batch).
    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Fetch the due hosts of the store (for cron), record them and report changes.",
            discussion: HelpText.discussion(examples: CommandHelp.refresh, exitCodes: CommandHelp.refreshExitCodes)
        )

        @OptionGroup var store: StoreOptions
        @OptionGroup var network: NetworkOptions
        @Option(name: .customLong("cdn-base"), help: ArgumentHelp("The CDN's base URL for hosts recorded through the CDN (fetch --route cdn); the host is appended.", valueName: "url"))
        var cdnBase: String = CDNFetcher.defaultBase
        @Option(help: ArgumentHelp("The region whose ccTLDs come second in priority; default from LC_ALL, LC_MESSAGES or LANG.", valueName: "CC"))
        var region: String?
        @Flag(help: "Keep running: a pass every --interval until SIGINT, SIGTERM or SIGHUP.") var watch = false
        @Flag(help: "Keep running as one of many workers on a shared store (--store postgres://…): lease due hosts batch by batch until SIGINT, SIGTERM or SIGHUP.")
        var worker = false
        @Option(help: ArgumentHelp("With --watch: the pause between passes (default 15m); with --worker: the longest sleep when nothing is due (default 60s). 30s, 15m, 2h, or seconds.", valueName: "duration"))
        var interval: String?
        @Option(help: ArgumentHelp("How long a leased batch stays this process's before other workers may take it over (default: enough for the batch's worst case). 90s, 10m, or seconds.", valueName: "duration"))
        var lease: String?
        @Option(help: ArgumentHelp("The lease owner name, unique per worker (default: host:pid:random).", valueName: "name"))
        var owner: String?
        @Option(help: .hidden) var now: String?
        @Option(help: ArgumentHelp("Hosts leased per batch (default: 4 × --concurrency, at least 16).", valueName: "n"))
        var batchSize: Int?
        @Option(name: .customLong("host"), help: ArgumentHelp("Fetch this host now, whatever is due (repeatable; every route of it).", valueName: "host"))
        var hosts: [String] = []
        @Flag(help: "Fetch every host of the store that an entry needs now, whatever is due.") var all = false
        @Option(help: ArgumentHelp("After the pass, write Prometheus metrics (per host and route, and the pass's totals) to this file, atomically, for node_exporter's textfile collector.", valueName: "file"))
        var metrics: String?
        @Option(name: .customLong("prune-after"), help: ArgumentHelp("Remove a host that no entry needs any more (its app's entitlements were recorded again without it) this long after; 0 or never keeps it (default 30d).", valueName: "duration"))
        var pruneAfter: String?
        @Option(name: .customLong("keep-history"), help: ArgumentHelp("Remove history events older than this; 0 or never keeps them all (default 180d).", valueName: "duration"))
        var keepHistory: String?
        @OptionGroup var notify: NotifyOptions
        @OptionGroup var output: FormatOptions
        @Flag(name: .shortAndLong, help: "No progress or notes on standard error.") var quiet = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        /// `--json` or `--format json`.
        var json: Bool { output.format == .json }

        func validate() throws {
            if output.format.isCI, watch || worker {
                throw ValidationError("--format \(output.format.rawValue) writes one document for one pass; with --watch or --worker use --json (one line per pass or batch)")
            }
            if let interval, IntervalParser.seconds(interval) == nil { throw ValidationError("--interval takes a duration such as 30s, 15m or 2h (at most 366 days)") }
            if let lease, IntervalParser.seconds(lease) == nil { throw ValidationError("--lease takes a duration such as 90s, 10m or seconds (at most 366 days)") }
            if let owner, owner.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--owner takes a non-empty name") }
            if worker && watch { throw ValidationError("--worker and --watch are two ways to keep running; pick one") }
            if worker && now != nil { throw ValidationError("--worker runs on the real clock (no --now)") }
            if let now, Timestamp.parse(now) == nil { throw ValidationError("--now takes an ISO 8601 time or seconds since 1970, between the years 1970 and 9999") }
            if let region, !DomainPrioritizer.isKnownRegion(region) {
                throw ValidationError("'\(region)' is not an ISO 3166-1 region code with a ccTLD")
            }
            if let batchSize, batchSize < 1 || batchSize > 100_000 { throw ValidationError("--batch-size must be between 1 and 100000") }
            guard CDNFetcher.isValidBase(cdnBase) else {
                throw ValidationError("--cdn-base takes an https:// URL without query, e.g. \(CDNFetcher.defaultBase), not '\(cdnBase)'")
            }
            try validateOperations()
            if let pruneAfter, RetentionInterval.parse(pruneAfter) == nil {
                throw ValidationError("--prune-after takes a duration such as 30d or 12h (at most 366 days), or 0 or never to keep unneeded hosts")
            }
            if let keepHistory, RetentionInterval.parse(keepHistory) == nil {
                throw ValidationError("--keep-history takes a duration such as 180d (at most 366 days), or 0 or never to keep all history")
            }
        }

        /// What each pass prunes: the options, else the documented defaults.
        var retention: RetentionPolicy {
            func choice(_ text: String?, _ fallback: TimeInterval) -> TimeInterval? {
                guard let text, let parsed = RetentionInterval.parse(text) else { return fallback }
                return parsed
            }
            return RetentionPolicy(pruneAfter: choice(pruneAfter, StoreRetention.defaultPruneAfter),
                                   keepHistory: choice(keepHistory, StoreRetention.defaultKeepHistory))
        }

        func run() async throws {
            let console = Console.standard
            if json { console.expectJSON(lines: watch || worker) }
            try checkMetricsPath()
            let database = try await store.open(create: false)
            let forced = try await forcedSelection(in: database)
            let stop = StopSignal()
            let signals = SignalStop.install(stop)
            defer { signals.cancel() }
            // Stopping: what is left to record gets a bounded time, even from a frozen server.
            let bounded = stop.whenStopped { database.finish(within: SignalStop.storeGrace) }
            defer { stop.removeHandler(bounded) }

            let options = try network.fetchOptions()
            // With a PostgreSQL store, the server's clock: leases are compared across machines.
            let storeClock = StoreClock(fixed: now.flatMap(Timestamp.parse))
            do {
                if let offset = try await storeClock.sync(with: database), abs(offset) >= StoreClock.noteworthyOffset, !quiet {
                    console.err("aasa-fetch refresh: this machine's clock is \(StoreClock.describe(offset)) the store's server; leases and due times follow the server's clock")
                }
            } catch {
                throw CommandFailure(storeCall: error)
            }
            let clock: @Sendable () -> Date = { storeClock.now() }
            let effectiveRegion = region?.uppercased() ?? DomainPrioritizer.region(fromEnvironment: ProcessInfo.processInfo.environment)
            let batch = batchSize ?? max(16, options.concurrency * 4)
            // Rows recorded through the CDN are refreshed through it, on a client of its own.
            let clients = RouteClients(options: options, usesCDN: true)
            let routes = clients.fetcher(cdnBase: cdnBase)
            // The webhook gets a client of its own: none of the hosts' network options apply to it.
            if notify.url != nil, let caFile = notify.caFile { try CAFile.check(caFile, option: "--notify-cacert") }
            let notifyClient = notify.url == nil ? nil : CurlClient(maxConnections: 2, threads: 1)
            let notifier = notifyClient.map { notify.notifier(client: $0) } ?? nil
            var job = RefreshJob(
                store: database, fetcher: routes.origin, cdn: routes.cdn,
                prioritizer: DomainPrioritizer(region: effectiveRegion), owner: owner ?? RefreshJob.makeOwner(),
                batchSize: batch, leaseSeconds: lease.flatMap(IntervalParser.seconds) ?? Self.leaseSeconds(options: options, batch: batch),
                retention: retention
            )
            job.notify = notifier != nil
            if worker {
                do {
                    try await runWorker(job, notifier: notifier, stop: stop, clock: clock, location: store.location, console: console) {
                        try await storeClock.sync(with: database)
                    }
                } catch {
                    await clients.shutdown()
                    await notifyClient?.shutdown()
                    throw error
                }
                await clients.shutdown()
                await notifyClient?.shutdown()
                return
            }
            var broken = false
            var failure: CommandFailure?
            let pause = interval.flatMap(IntervalParser.seconds) ?? 900
            let repeats = watch ? NotifyRepeats() : nil
            repeat {
                do {
                    let started = ContinuousClock.now
                    try await storeClock.sync(with: database)  // a --watch pass: measured again when stale
                    let report = if let forced {
                        try await job.runForced(hosts: forced.hosts, now: clock, stop: stop)
                    } else {
                        try await job.run(now: clock, stop: stop)
                    }
                    broken = broken || report.broken
                    // After the pass: this pass's changes and any a previous run could not deliver,
                    // in order. The JSON document tells how that went, so it waits for the delivery
                    // (bounded by the webhook's attempts and timeouts); people see the changes first.
                    var shown = report
                    let deliver = { try await deliverNotifications(notifier, store: database, owner: job.owner, now: clock, stop: stop,
                                                                   console: console, repeats: repeats) }
                    // A store failure while delivering still lets the pass's report out first.
                    var deliveryFailure: (any Error)?
                    if json {
                        do { shown.notifications = try await deliver() } catch { deliveryFailure = error }
                    }
                    if output.format.isCI {
                        var writer = CIWriters.standardOutput(output.format, console: console)
                        RefreshCI.render(shown, cdnBase: cdnBase, to: &writer)
                    } else if forced != nil {
                        renderForced(shown, console: console)
                    } else {
                        render(shown, console: console)
                    }
                    try await writeMetrics(report, store: database, started: started, now: clock())
                    if let deliveryFailure { throw deliveryFailure }
                    if !json { _ = try await deliver() }
                    if let shortage = CommandFailure.shortage(report.shortages) {
                        failure = shortage
                        break
                    }
                } catch let error as StoreError where watch && RefreshJob.transientStoreCodes.contains(error.code) && !stop.isStopped {
                    // A long-running job outlives a database restart or a lock held for a while:
                    // this pass is lost (hosts it leased come back when their leases lapse).
                    if !quiet { console.diagnostic(error.code, "\(error.message); the next pass in \(Self.spoken(pause))") }
                } catch {
                    failure = CommandFailure(storeCall: error)
                    break
                }
                // Nobody reads the reports any more: stop as a signal would.
                if console.outputFailed { stop.stop() }
                if !watch || stop.isStopped { break }
            } while !(await stop.sleep(for: .milliseconds(Int(pause * 1000))))
            await clients.shutdown()
            await notifyClient?.shutdown()
            if let failure { throw failure }
            if watch {
                if !quiet { console.err("aasa-fetch refresh: stopped") }
                return
            }
            if broken { throw ExitStatus.failure }
        }

        /// The worker loop: batches until SIGINT/SIGTERM/SIGHUP; exit 0 when stopped, 2 on a store failure.
        private func runWorker(
            _ job: RefreshJob, notifier: Notifier?, stop: StopSignal, clock: @escaping @Sendable () -> Date, location: String, console: Console,
            sync: @escaping @Sendable () async throws -> Void
        ) async throws {
            let (json, quiet) = (self.json, self.quiet)
            let repeats = NotifyRepeats()
            if !quiet {
                console.err("aasa-fetch refresh: worker \(job.owner) on \(location): batches of \(job.batchSize), lease \(Int(job.leaseSeconds)) s")
            }
            do {
                try await job.work(now: clock, stop: stop, interval: interval.flatMap(IntervalParser.seconds) ?? 60, notifier: notifier,
                                   sync: sync) { event in
                    switch event {
                    case .batch(let report):
                        Self.render(report, json: json, quiet: quiet, lines: true, worker: true, console: console)
                        if let failure = CommandFailure.shortage(report.shortages) {
                            console.err("aasa-fetch refresh: \(failure.code): \(failure.message); they were released for the next batch")
                        }
                        // Nobody reads the reports any more: stop as a signal would.
                        if console.outputFailed { stop.stop() }
                    case .idle:
                        break
                    case .notified(let report):
                        if let notifier { NotifyOptions.render(report, url: notifier.url, quiet: quiet, console: console, repeats: repeats, now: clock()) }
                    case .storeUnavailable(let error, let retry, let unrecorded):
                        guard !quiet else { break }
                        let kept = unrecorded > 0 ? "; \(Plural.count(unrecorded, "fetched result is", "fetched results are")) kept to be recorded first" : ""
                        let next = retry.map { "retrying in \(Int($0.rounded(.up))) s" } ?? "stopping"
                        console.diagnostic(error.code, "\(error.message)\(kept); \(next)")
                    case .pruned(let pruned):
                        if !quiet, !pruned.hosts.isEmpty { console.err(Self.prunedLine(pruned)) }
                    }
                }
            } catch {
                throw CommandFailure(storeCall: error)
            }
            if !quiet { console.err("aasa-fetch refresh: worker \(job.owner) stopped") }
        }

        /// A lease long enough for a batch's worst case: every host timing out on both paths,
        /// with every retry and the system-store retry of `--cacert`, plus a minute.
        static func leaseSeconds(options: FetchOptions, batch: Int) -> TimeInterval {
            let attempts = Double(options.retryDelays.count + 1) * (options.extraCAFile == nil ? 1 : 2)
            let perHost = 2 * (attempts * (options.connectTimeout + options.maxTime) + options.retryDelays.reduce(0, +))
            let rounds = (Double(batch) / Double(max(1, options.concurrency))).rounded(.up)
            return rounds * perHost + 60
        }

        private func render(_ report: RefreshReport, console: Console) {
            Self.render(report, json: json, quiet: quiet, lines: watch, worker: false, console: console)
        }

        /// `lines`: one compact JSON line per report; `worker`: no note on hosts leased elsewhere
        /// (sharing them is what workers do).
        private static func render(_ report: RefreshReport, json: Bool, quiet: Bool, lines: Bool, worker: Bool, console: Console) {
            if !quiet { warnLeaseLost(report, console: console) }
            if !quiet && report.leasedElsewhere > 0 && !worker {
                let owners = report.otherOwners.joined(separator: ", ")
                console.err("aasa-fetch refresh: \(Plural.count(report.leasedElsewhere, "due host is", "due hosts are")) being refreshed by another process (\(owners)); left to it")
            }
            if !quiet { noteAbandoned(report, console: console) }
            if json {
                if lines { try? console.jsonLine(report) } else { try? console.json(report) }
                return
            }
            if !report.pruned.hosts.isEmpty { console.out(prunedLine(report.pruned)) }
            let changed = report.hosts.filter { !$0.events.isEmpty }
            guard !changed.isEmpty else { return }
            let count = report.changes.count
            console.out("aasa-fetch refresh \(Timestamp.string(report.now)): \(Plural.count(report.hosts.count, "host")) fetched, \(Plural.count(count, "change"))\(report.broken ? ", association broken" : "")")
            for host in changed {
                for event in host.events {
                    ChangeRenderer(console: console).render(event, host: host)
                }
            }
        }
    }
}

extension AASAFetchCommand.Refresh {
    /// The `lease-lost` warning on standard error: hosts whose results were not recorded because
    /// another process took them over (every human and JSON report of a pass says it the same way).
    static func warnLeaseLost(_ report: RefreshReport, console: Console) {
        guard !report.leaseLost.isEmpty else { return }
        console.diagnostic("lease-lost", "\(leaseLostText(report)) (if leases lapse, raise --lease): \(report.leaseLost.map(\.description).joined(separator: ", "))")
    }

    /// What `lease-lost` says, on standard error and in the CI formats alike.
    static func leaseLostText(_ report: RefreshReport) -> String {
        "\(Plural.count(report.leaseLost.count, "host was", "hosts were")) recorded by another process meanwhile (a run, or a refresh that took over after this one's lease lapsed); their results were not recorded, the newer ones stand"
    }

    /// The note of a stopped pass on the hosts it abandoned in flight (their leases released).
    static func noteAbandoned(_ report: RefreshReport, console: Console) {
        // Hosts released for a shortage are named by the run's failure instead.
        guard report.abandoned > 0, report.stopped || report.shortages.isEmpty else { return }
        console.err("aasa-fetch refresh: stopped; \(Plural.count(report.abandoned, "host", "hosts")) in flight \(report.abandoned == 1 ? "was" : "were") abandoned and released")
    }

    /// The line naming the hosts a pass removed after their grace period.
    static func prunedLine(_ pruned: PruneReport) -> String {
        let shown = pruned.hosts.prefix(20).map(\.description).joined(separator: ", ")
        let more = pruned.hosts.count > 20 ? " and \(pruned.hosts.count - 20) more" : ""
        return "aasa-fetch refresh: removed \(Plural.count(pruned.hosts.count, "host")) no entry needs any more (past --prune-after): \(shown)\(more)"
    }
}

/// `--prune-after` and `--keep-history`: a duration (``IntervalParser``), or `0`/`never` to keep.
enum RetentionInterval {
    /// `.some(nil)` for keep (`0`, `never`), `.some(seconds)` for a duration, `nil` when invalid.
    static func parse(_ text: String) -> TimeInterval?? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        // Keep: `never`, or a zero written as a number with at most one unit after it (`0`,
        // `0d`, `0.0h`); `hd0s` or `1e-400` are no way of writing a duration.
        let number = trimmed.last.map { "smhd".contains($0) } == true ? String(trimmed.dropLast()) : trimmed
        let zero = !number.isEmpty && number.first != "." && number.allSatisfy { $0 == "0" || $0 == "." }
            && number.filter { $0 == "." }.count <= 1
        if trimmed == "never" || zero { return .some(nil) }
        return IntervalParser.seconds(trimmed).map { .some($0) }
    }
}

/// Human lines for history events (refresh and show).
struct ChangeRenderer {
    let console: Console

    func render(_ event: HistoryEvent, host: RefreshedHost? = nil, indent: String = "") {
        let name = event.key.description
        let detail = event.detail
        switch event.kind {
        case .broke:
            console.out("\(indent)\(console.paint("✘", .red)) \(name) broke: \(detail.code ?? "?") — \(detail.reason ?? ""); the last approved file is kept"
                + (host.map { "; next check \(Timestamp.string($0.nextCheck))" } ?? ""))
        case .associationLost:
            console.out("\(indent)\(console.paint("✘", .red)) \(name) association-lost: \(detail.reason ?? "") (\(detail.entry ?? ""))")
        case .associationGained:
            console.out("\(indent)\(console.paint("✔", .green)) \(name) association-gained: \(detail.reason ?? "") (\(detail.entry ?? ""))")
        case .approved:
            let was = detail.previousCode.map { " (was \($0))" } ?? " (first approved file)"
            console.out("\(indent)\(console.paint("✔", .green)) \(name) approved\(was)")
        case .failed:
            let was = detail.previousCode.map { " (was \($0))" } ?? ""
            console.out("\(indent)\(console.paint("✘", .red)) \(name) failed: \(detail.code ?? "?") — \(detail.reason ?? "")\(was)")
        case .changed:
            console.out("\(indent)\(console.paint("~", .yellow)) \(name) changed:")
            for change in detail.changes ?? [] {
                console.out("\(indent)    \(change.kind): \(change.description)")
            }
        }
    }
}

/// The stopping signals (``StoppingSignals``) fire a ``StopSignal`` instead of killing the process.
extension AASAFetchCommand.Refresh {
    /// "15 min", "90 s": a pause for people.
    static func spoken(_ seconds: TimeInterval) -> String {
        seconds >= 60 && seconds.truncatingRemainder(dividingBy: 60) == 0 ? "\(Int(seconds / 60)) min" : "\(Int(seconds.rounded(.up))) s"
    }
}

enum SignalStop {
    /// How long a stopping `refresh` waits for its store's answers (a PostgreSQL server) before
    /// it gives up on them.
    static let storeGrace: TimeInterval = 10

    static func install(_ stop: StopSignal) -> StoppingSignals.Installed {
        StoppingSignals.install { _ in stop.stop() }
    }
}
