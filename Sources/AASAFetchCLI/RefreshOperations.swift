import AASAFetchCore
import ArgumentParser
import Foundation

/// The hosts a forced refresh fetches: named ones, or every host (`hosts` is `nil`).
struct ForcedSelection {
    var hosts: [String]?
}

extension AASAFetchCommand.Refresh {
    /// The usage rules of `--host`, `--all` and `--metrics`.
    func validateOperations() throws {
        if all && !hosts.isEmpty { throw ValidationError("--host and --all both choose the hosts to fetch; pick one") }
        if (all || !hosts.isEmpty) && (watch || worker) {
            throw ValidationError("--host and --all fetch once, now; they do not go with --watch or --worker")
        }
        for host in hosts where Self.normalizedHost(host) == nil {
            throw ValidationError("--host takes a host name such as www.example.com ('\(host)' is not one)")
        }
        if let metrics {
            if metrics.isEmpty { throw ValidationError("--metrics takes a file name") }
            if worker {
                throw ValidationError("--metrics describes one refresh pass over the store; workers sharing a store would each write every host: use it with a plain or --watch refresh")
            }
        }
    }

    /// A `--host` value as the store keys it: the ASCII host of `applinks:VALUE` (Unicode hosts
    /// through IDNA, lower case), or of VALUE when it is a whole entry (`webcredentials:HOST`).
    static func normalizedHost(_ value: String) -> String? {
        let parser = EntryParser()
        for candidate in ["applinks:\(value)", value] {
            let entry = parser.parse(candidate, index: 0)
            // A Unicode host is an error in an entitlement (devices compare Punycode), not here.
            if entry.errorCode == nil || entry.errorCode == "entitlement-not-punycode", let host = entry.host { return host }
        }
        return nil
    }

    /// `--metrics`: fails at once (exit 2, `metrics-unwritable`) when the file cannot be written,
    /// rather than after a long pass.
    func checkMetricsPath() throws(CommandFailure) {
        guard let metrics, let problem = AtomicFile.checkWritable(metrics) else { return }
        throw CommandFailure(code: "metrics-unwritable", message: "--metrics \(metrics): \(problem)")
    }

    /// What `--host`/`--all` select, `nil` for a due pass. A named host the store does not hold is
    /// `host-unknown` (exit 2), before anything is fetched.
    func forcedSelection(in database: any AssociationStore) async throws(CommandFailure) -> ForcedSelection? {
        if all { return ForcedSelection(hosts: nil) }
        guard !hosts.isEmpty else { return nil }
        var names: [String] = []
        for host in hosts {
            if let name = Self.normalizedHost(host), !names.contains(name) { names.append(name) }
        }
        let known: [HostKey: HostState]
        do {
            known = try await database.states(of: names.flatMap { name in Route.allCases.map { HostKey(host: name, route: $0) } })
        } catch {
            throw CommandFailure(storeCall: error)
        }
        let present = Set(known.keys.map(\.host))
        let unknown = names.filter { !present.contains($0) }
        if !unknown.isEmpty {
            throw CommandFailure(code: "host-unknown", message: "\(unknown.joined(separator: ", ")) \(unknown.count == 1 ? "is" : "are") not in the store \(store.location); record \(unknown.count == 1 ? "it" : "them") with a fetch run first")
        }
        return ForcedSelection(hosts: names)
    }

    /// `--metrics FILE`: the store's hosts after the pass and the pass's totals, written atomically.
    func writeMetrics(_ report: RefreshReport, store database: any AssociationStore, started: ContinuousClock.Instant, now: Date) async throws {
        guard let metrics else { return }
        let hosts = try await RefreshMetrics.hosts(of: database)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let text = RefreshMetrics(report: report, hosts: hosts, duration: seconds, finishedAt: now).exposition
        do {
            try AtomicFile.write(Array(text.utf8), to: metrics)
        } catch {
            throw CommandFailure(code: "metrics-unwritable", message: "--metrics \(metrics): \(error.message)")
        }
    }

    /// The human output of a forced check: always a summary and one line per host fetched (it was
    /// asked for now), then the changes as a due pass prints them.
    func renderForced(_ report: RefreshReport, console: Console) {
        if !quiet { Self.warnLeaseLost(report, console: console) }
        if !quiet && report.leasedElsewhere > 0 {
            let owners = report.otherOwners.joined(separator: ", ")
            console.err("aasa-fetch refresh: \(Plural.count(report.leasedElsewhere, "host is", "hosts are")) being refreshed by another process (\(owners)) right now; left to it")
        }
        if !quiet { Self.noteAbandoned(report, console: console) }
        if json {
            try? console.json(report)
            return
        }
        if !report.pruned.hosts.isEmpty { console.out(Self.prunedLine(report.pruned)) }
        let count = report.changes.count
        console.out("aasa-fetch refresh \(Timestamp.string(report.now)): \(Plural.count(report.hosts.count, "host")) fetched now, \(Plural.count(count, "change"))\(report.broken ? ", association broken" : "")")
        let width = min(40, (report.hosts.map(\.key.description.count).max() ?? 10) + 2)
        for host in report.hosts {
            // What `show` says of the host: a file that does not list an app that needs it fails.
            let good = (host.outcome == .approved || host.outcome == .notModified) && host.associated != false
            let mark = good ? console.paint("✔", .green) : console.paint("✘", .red)
            let name = host.key.description
            let padded = name.count >= width ? name + " " : name + String(repeating: " ", count: width - name.count)
            let (code, reason) = host.notListed.map { ($0.code, $0.message) } ?? (host.code, host.reason)
            console.out("\(mark) \(padded)\(host.httpStatus.map(String.init) ?? "---")  \(code)  \(reason)")
        }
        for host in report.hosts {
            for event in host.events {
                ChangeRenderer(console: console).render(event, host: host)
            }
        }
    }
}
