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
    /// `--interval` until SIGINT/SIGTERM, then stops cleanly and exits 0.
    /// JSON shape: ``RefreshReport`` (one object; with `--watch`, one compact line per pass).
    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch the due hosts of the store (for cron), record them and report changes."
        )

        @OptionGroup var store: StoreOptions
        @OptionGroup var network: NetworkOptions
        @Option(help: ArgumentHelp("The region whose ccTLDs come second in priority; default from LC_ALL, LC_MESSAGES or LANG.", valueName: "CC"))
        var region: String?
        @Flag(help: "Keep running: a pass every --interval until SIGINT or SIGTERM.") var watch = false
        @Option(help: ArgumentHelp("With --watch: the pause between passes (30s, 15m, 2h, or seconds).", valueName: "duration"))
        var interval: String = "15m"
        @Option(help: .hidden) var now: String?
        @Option(help: .hidden) var batchSize: Int?
        @Flag(help: "Print JSON.") var json = false
        @Flag(name: .shortAndLong, help: "No progress or notes on standard error.") var quiet = false

        func validate() throws {
            if IntervalParser.seconds(interval) == nil { throw ValidationError("--interval takes a duration such as 30s, 15m or 2h") }
            if let now, Timestamp.parse(now) == nil { throw ValidationError("--now takes an ISO 8601 time or seconds since 1970") }
            if let region, !DomainPrioritizer.isKnownRegion(region) {
                throw ValidationError("'\(region)' is not an ISO 3166-1 region code with a ccTLD")
            }
            if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be positive") }
        }

        func run() async throws {
            let console = Console.standard
            let database: SQLiteAssociationStore
            do {
                database = try store.open(create: false)
            } catch {
                console.err("aasa-fetch: \(error.code): \(error.message)")
                throw ExitStatus.cannotRun
            }
            let stop = StopSignal()
            let signals = SignalStop.install(stop)
            defer { signals.forEach { $0.cancel() } }

            let options = network.fetchOptions
            let fixedNow = now.flatMap(Timestamp.parse)
            let clock: @Sendable () -> Date = { fixedNow ?? Date() }
            let effectiveRegion = region?.uppercased() ?? DomainPrioritizer.region(fromEnvironment: ProcessInfo.processInfo.environment)
            let batch = batchSize ?? max(16, options.concurrency * 4)
            let client = CurlClient(maxConnections: options.concurrency, maxConnectionsPerHost: 1)
            let job = RefreshJob(
                store: database, fetcher: AASAFetcher(transport: client, options: options),
                prioritizer: DomainPrioritizer(region: effectiveRegion), owner: RefreshJob.makeOwner(),
                batchSize: batch, leaseSeconds: Self.leaseSeconds(options: options, batch: batch)
            )
            var broken = false
            var failure: CommandFailure?
            let pause = IntervalParser.seconds(interval) ?? 900
            repeat {
                do {
                    let report = try await job.run(now: clock, stop: stop)
                    broken = broken || report.broken
                    render(report, console: console)
                } catch {
                    failure = CommandFailure(storeCall: error)
                    break
                }
                if !watch || stop.isStopped { break }
            } while !(await stop.sleep(for: .milliseconds(Int(pause * 1000))))
            await client.shutdown()
            if let failure {
                console.err("aasa-fetch: \(failure.code): \(failure.message)")
                throw ExitStatus.cannotRun
            }
            if watch {
                if !quiet { console.err("aasa-fetch refresh: stopped") }
                return
            }
            if broken { throw ExitStatus.failure }
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
            if !quiet && report.leasedElsewhere > 0 {
                let owners = report.otherOwners.joined(separator: ", ")
                console.err("aasa-fetch refresh: \(report.leasedElsewhere) due host(s) are being refreshed by another process (\(owners)); left to it")
            }
            if !quiet && report.abandoned > 0 {
                console.err("aasa-fetch refresh: stopped; \(report.abandoned) host(s) in flight were abandoned and released")
            }
            if json {
                if let text = try? (watch ? JSONOutput.line(report) : JSONOutput.string(report)) { console.out(text) }
                return
            }
            let changed = report.hosts.filter { !$0.events.isEmpty }
            guard !changed.isEmpty else { return }
            let count = report.changes.count
            console.out("aasa-fetch refresh \(Timestamp.string(report.now)): \(report.hosts.count) host(s) fetched, \(count) change\(count == 1 ? "" : "s")\(report.broken ? ", association broken" : "")")
            for host in changed {
                for event in host.events {
                    ChangeRenderer(console: console).render(event, host: host)
                }
            }
        }
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

/// SIGINT and SIGTERM fire a ``StopSignal`` instead of killing the process.
enum SignalStop {
    static func install(_ stop: StopSignal) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.stop() }
            source.resume()
            return source
        }
    }
}
