import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation
import Synchronization

extension AASAFetchCommand {
    /// `aasa-fetch [fetch]`: downloads every associated domain's file the way the OS does and says
    /// whether each entry associates the app. The default command.
    ///
    /// Exit status: 0 every entry associates (or could not be judged for want of an app ID),
    /// 1 at least one fails, 2 the input could not be read, 64 usage error.
    /// JSON shape: ``RunReport`` (README, "JSON shapes").
    struct Fetch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download every associated domain's file as Apple's downloader does, and judge association (default command)."
        )

        @OptionGroup var input: InputOptions
        @OptionGroup var network: NetworkOptions
        @OptionGroup var routing: RouteOptions
        @OptionGroup var store: StoreOptions
        @Flag(name: .customLong("no-store"), help: "Record nothing in the store (a pure run).") var noStore = false
        @Flag(help: "Print JSON.") var json = false
        @Flag(name: .shortAndLong, help: "No progress on standard error.") var quiet = false

        func run() async throws {
            let console = Console.standard
            if input.domainsFile != nil, routing.route == .origin, Self.spoolEnabled {
                try await runSpooled(console: console)
                return
            }
            let loaded = try input.loadOrExit(console: console)
            let region = input.effectiveRegion
            let plan = FetchPlan(entries: loaded.entries, prioritizer: DomainPrioritizer(region: region))
            // Every fetch with its route (a CDN host is keyed by its route in the store, too).
            let routed = RoutedRun.split(plan, route: routing.route).plan
            if routing.route != .both {
                // Stream results (judge, print, record) instead of keeping them all; `both` needs
                // each host's two answers side by side, so it keeps them.
                try await runStreaming(source: PlanSource(plan: routed), settled: loaded.settled, region: region, console: console) { store throws(CommandFailure) in
                    try await StoreSession.registerInChunks(plan: routed, appIDs: loaded.appIDs, in: store, now: Date())
                }
                return
            }
            // The store: opened before any download, so an unusable one stops the run at once.
            var recording: (store: any AssociationStore, previous: [HostKey: HostState])?
            if !noStore {
                do {
                    let opened = try await store.open(create: true)
                    recording = (opened, try await StoreSession.register(plan: routed, appIDs: loaded.appIDs, in: opened, now: Date()))
                } catch {
                    console.err("aasa-fetch: \(error.code): \(error.message) (--no-store runs without it)")
                    throw ExitStatus.cannotRun
                }
            }
            let options = network.fetchOptions
            // One connection to the CDN, which HTTP/2 multiplexes (without the limit libcurl 7.88
            // opens one per transfer started before the first connection is up).
            let client = CurlClient(maxConnections: options.concurrency, maxConnectionsPerHost: 1)
            let fetcher = AASAFetcher(transport: client, options: options)
            let progress = ProgressReporter(total: plan.fetches.count, enabled: !quiet && console.stderrIsTerminal && plan.fetches.count > 1)
            let cdn = CDNFetcher(transport: client, options: options, base: routing.cdnBase)
            let run = await RoutedRun.fetch(plan, route: routing.route, origin: fetcher, cdn: cdn) { done, result in
                progress.update(done: done, result: result)
            }
            progress.finish()
            await client.shutdown()
            // Recorded while the report is judged and printed (another core).
            let recordingTask = recording.map { recording in
                Task { () -> CommandFailure? in
                    do throws(CommandFailure) {
                        try await StoreSession.record(run.results, previous: recording.previous, in: recording.store, now: Date())
                        return nil
                    } catch {
                        return error
                    }
                }
            }

            let report = run.report(appIDs: loaded.appIDs, appIDSource: loaded.appIDSource, region: region, findings: loaded.findings)
            if json {
                try console.json(report)
            } else {
                HumanRenderer(console: console).renderRun(report)
            }
            var storeFailure = await recordingTask?.value ?? nil
            let shortages = run.results.filter { $0.code == "descriptors-exhausted" }.count
            if storeFailure == nil, shortages > 0 { storeFailure = .descriptorsExhausted(hosts: shortages) }
            if let storeFailure {
                console.err("aasa-fetch: \(storeFailure.code): \(storeFailure.message)")
                throw ExitStatus.cannotRun
            }
            if !report.succeeded { throw ExitStatus.failure }
        }

        /// Whether `--domains` runs go through the run spool: yes unless `AASA_FETCH_SPOOL=off`
        /// (which keeps the whole list in memory, as runs over small inputs do; for comparisons).
        static var spoolEnabled: Bool {
            ProcessInfo.processInfo.environment["AASA_FETCH_SPOOL"]?.lowercased() != "off"
        }

        /// A `--domains` run on the origin route through a ``RunSpool``: the list is read line by
        /// line into a temporary database, hosts are registered, fetched, judged and printed a page
        /// at a time, and the entries section is read back from it; the spool is deleted at the end,
        /// on failure and on SIGINT/SIGTERM.
        private func runSpooled(console: Console) async throws {
            let region = input.effectiveRegion
            let spool: RunSpool
            do {
                spool = try RunSpool(prioritizer: DomainPrioritizer(region: region))
            } catch {
                console.err("aasa-fetch: \(error.code): \(error.message)")
                throw ExitStatus.cannotRun
            }
            let signals = SpoolCleanup.install(spool)
            defer {
                signals.forEach { $0.cancel() }
                spool.remove()
            }
            let settled: InputOptions.Settled
            let source: SpoolSource
            do {
                settled = try input.loadSpooled(into: spool)
                source = try SpoolSource(spool: spool)
            } catch {
                let failure = CommandFailure(spool: error)
                console.err("aasa-fetch: \(failure.code): \(failure.message)")
                throw ExitStatus.cannotRun
            }
            try await runStreaming(source: source, settled: settled, region: region, console: console) { store throws(CommandFailure) in
                try await StoreSession.registerInChunks(spool: spool, appIDs: settled.appIDs, in: store, now: Date())
            }
        }

        /// The origin or CDN route, streamed: opens the store and registers the run's hosts with
        /// `register`, fetches, judges, prints and records each host, and sets the exit status.
        private func runStreaming(
            source: any RunSource, settled: InputOptions.Settled, region: String?, console: Console,
            register: (any AssociationStore) async throws(CommandFailure) -> Void
        ) async throws {
            // The store: opened before any download, so an unusable one stops the run at once.
            var recordIn: (any AssociationStore)?
            if !noStore {
                do {
                    let opened = try await store.open(create: true)
                    // The streaming run loads each batch's stored states when it records it.
                    try await register(opened)
                    recordIn = opened
                } catch {
                    console.err("aasa-fetch: \(error.code): \(error.message) (--no-store runs without it)")
                    throw ExitStatus.cannotRun
                }
            }
            let options = network.fetchOptions
            // With the CDN route, one connection to the CDN, which HTTP/2 multiplexes.
            let client = CurlClient(maxConnections: options.concurrency, maxConnectionsPerHost: routing.route == .cdn ? 1 : 0)
            let fetcher = AASAFetcher(transport: client, options: options)
            if routing.route == .cdn, let plan = source as? PlanSource {
                plan.cdn = CDNFetcher(transport: client, options: options, base: routing.cdnBase)
            }
            let hosts = source.hostCount
            let progress = ProgressReporter(total: hosts, enabled: !quiet && console.stderrIsTerminal && hosts > 1)
            let streaming = StreamingRun(
                source: source, fetcher: fetcher, settled: settled, region: region, json: json,
                console: console, store: recordIn, progress: progress
            )
            let (summary, failure) = await streaming.run()
            await client.shutdown()
            if let failure {
                console.err("aasa-fetch: \(failure.code): \(failure.message)")
                throw ExitStatus.cannotRun
            }
            if let summary, summary.failed > 0 { throw ExitStatus.failure }
        }
    }
}

/// SIGINT and SIGTERM during a spooled run delete the spool before the process ends (as the
/// signal would have ended it, exit 128 + signal). The folder is unlinked without waiting for the
/// database (a write may be under way); the process ends at once.
enum SpoolCleanup {
    static func install(_ spool: RunSpool) -> [any DispatchSourceSignal] {
        let directory = spool.directory
        return [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                try? FileManager.default.removeItem(atPath: directory)
                _exit(128 + number)
            }
            source.setCancelHandler { signal(number, SIG_DFL) }
            source.resume()
            return source
        }
    }
}

/// Progress on standard error while hosts download: done/total, rate, failures by code, ETA.
/// Only on a terminal; one line rewritten in place.
final class ProgressReporter: Sendable {
    private struct State {
        var done = 0
        var failures: [String: Int] = [:]
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let total: Int
    private let enabled: Bool
    private let started = ContinuousClock.now
    private let state = Mutex(State())

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func update(done: Int, result: HostFetchResult) {
        guard enabled else { return }
        let line: String? = state.withLock { state in
            state.done = done
            if result.code != "ok" { state.failures[result.code, default: 0] += 1 }
            let now = ContinuousClock.now
            guard now - state.lastDraw >= .milliseconds(100) || done == total else { return nil }
            state.lastDraw = now
            let elapsed = Double((now - started).components.seconds) + Double((now - started).components.attoseconds) / 1e18
            let rate = elapsed > 0 ? Double(done) / elapsed : 0
            let eta = rate > 0 ? Int(Double(total - done) / rate) : 0
            let failures = state.failures.sorted { $0.value > $1.value }.prefix(3).map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "\(done)/\(total) hosts · \(String(format: "%.1f", rate))/s · ETA \(eta)s" + (failures.isEmpty ? "" : " · \(failures)")
        }
        if let line {
            Console.standard.errControl("\r\u{1B}[K" + TerminalText.escaped(line))
        }
    }

    func finish() {
        guard enabled else { return }
        Console.standard.errControl("\r\u{1B}[K")
    }
}
