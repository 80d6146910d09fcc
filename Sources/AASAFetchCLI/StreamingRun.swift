import AASAFetchCore
import Foundation

/// The origin-route fetch run without holding results: each host is judged, printed (human or
/// JSON) and recorded in the store (in batches) as soon as it and every host planned before it are
/// done, so memory does not grow with the number of hosts beyond the plan's entries.
struct StreamingRun {
    let plan: FetchPlan
    let fetcher: AASAFetcher
    let loaded: InputOptions.Loaded
    let region: String?
    let json: Bool
    let console: Console
    /// Where to record (the plan's hosts are registered there already); `nil` records nothing.
    let store: (any AssociationStore)?
    let progress: ProgressReporter

    /// Results recorded per store transaction.
    static let recordBatch = 256

    /// Runs the plan; returns the summary and the first store failure, if any.
    func run() async -> (summary: RunSummary, storeFailure: CommandFailure?) {
        var verdicts = plan.entries.map(EntryVerdict.init(parsed:))
        var waiting: [Int: HostFetchResult] = [:]
        var next = 0
        var done = 0
        var domainWarnings = 0
        var pending: [HostFetchResult] = []
        var storeFailure: CommandFailure?
        var human = RunRenderer(console: console, hostWidth: RunRenderer.width(for: plan.fetches.map(\.host)))
        var writer = JSONStreamWriter(console: console)

        if json {
            writer.begin(appIDSource: loaded.appIDSource, appIDs: loaded.appIDs)
        } else {
            human.begin(entries: plan.entries.count, hosts: plan.fetches.count, appIDs: loaded.appIDs, findings: loaded.findings)
        }
        func flush() async {
            guard let store, !pending.isEmpty else { return }
            do {
                // The states before this run: nothing else records these hosts during it.
                let previous = try await store.states(of: pending.map { HostKey(host: $0.host, route: $0.route) })
                try await StoreSession.record(pending, previous: previous, in: store, now: Date())
            } catch let error as CommandFailure {
                if storeFailure == nil { storeFailure = error }
            } catch {
                if storeFailure == nil { storeFailure = CommandFailure(storeCall: error) }
            }
            pending.removeAll(keepingCapacity: true)
        }

        await fetcher.fetchEach(plan.fetches) { result in
            done += 1
            progress.update(done: done, result: result)
            waiting[result.startOrder] = result
            // Print in start order: a host waits only for hosts planned before it.
            while let ready = waiting.removeValue(forKey: next) {
                let domain = AssociationJudge.judgeHost(plan.fetches[next], result: ready, verdicts: &verdicts, appIDs: loaded.appIDs)
                domainWarnings += domain.warningCount
                if json { writer.domain(domain) } else { human.domain(domain) }
                if store != nil {
                    // The store keeps the body; this run does not.
                    pending.append(ready)
                    if pending.count >= Self.recordBatch { await flush() }
                }
                next += 1
            }
        }
        await flush()
        progress.finish()

        let summary = AssociationJudge.summary(
            verdicts: verdicts, domains: plan.fetches.count, domainWarnings: domainWarnings, runFindings: loaded.findings
        )
        if json {
            writer.finish(entries: verdicts, findings: loaded.findings, region: region, summary: summary)
        } else {
            human.finish(entries: verdicts, summary: summary)
        }
        return (summary, storeFailure)
    }
}

/// Writes ``RunReport``'s JSON document (same keys, in sorted order) piece by piece.
struct JSONStreamWriter {
    let console: Console
    private var domains = 0

    init(console: Console) {
        self.console = console
    }

    /// A value's pretty JSON, every line after the first indented.
    private func encoded<T: Encodable>(_ value: T, indent: String) -> String {
        let text = (try? JSONOutput.string(value)) ?? "null"
        return text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + indent)
    }

    func begin(appIDSource: AppIDSource, appIDs: [String]) {
        console.out("{")
        console.out("  \"appIDSource\" : \(encoded(appIDSource, indent: "  ")),")
        console.out("  \"appIDs\" : \(encoded(appIDs, indent: "  ")),")
        console.out("  \"domains\" : [")
    }

    mutating func domain(_ domain: DomainReport) {
        let prefix = domains == 0 ? "" : ",\n"
        domains += 1
        FileHandle.standardOutput.write(Data((prefix + "    " + encoded(domain, indent: "    ")).utf8))
    }

    func finish(entries: [EntryVerdict], findings: [Finding], region: String?, summary: RunSummary) {
        console.out(domains == 0 ? "  ]," : "\n  ],")
        // One entry at a time: encoding the whole array at once would hold its text N times over.
        if entries.isEmpty {
            console.out("  \"entries\" : [],")
        } else {
            console.out("  \"entries\" : [")
            for (index, entry) in entries.enumerated() {
                console.out("    " + encoded(entry, indent: "    ") + (index == entries.count - 1 ? "" : ","))
            }
            console.out("  ],")
        }
        console.out("  \"findings\" : \(encoded(findings, indent: "  ")),")
        console.out("  \"region\" : \(encoded(region, indent: "  ")),")
        console.out("  \"schemaVersion\" : 1,")
        console.out("  \"summary\" : \(encoded(summary, indent: "  "))")
        console.out("}")
    }
}
