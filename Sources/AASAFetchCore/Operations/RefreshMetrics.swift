import Foundation

extension StoredVerdict {
    /// Reads every host of a store in order of addition, `chunk` hosts at a time (a page of
    /// ``AssociationStore/hosts(after:limit:)``, then their needs, bodies and, with `historyLimit`
    /// > 0, their last history events), judges each (``init(state:needs:)``) and hands each chunk
    /// to `body`; bodies are dropped after it, so memory stays bounded by the chunk, whatever the
    /// store holds.
    ///
    /// `allBodies`: every host's stored bodies are read (the status page shows the approved file);
    /// without it only those a verdict reads (the last download was `ok` and some app ID needs the
    /// host), and the other hosts keep their page's summary.
    public static func walk(
        _ store: any AssociationStore, chunk: Int = 500, historyLimit: Int = 0, allBodies: Bool = true,
        _ body: ([(verdict: StoredVerdict, history: [HistoryEvent])]) throws -> Void
    ) async throws {
        try await store.forEachHostPage(limit: chunk) { page in
            let keys = page.map(\.key)
            let needs = try await store.needs(for: keys)
            let read = allBodies ? keys : page.filter { summary in
                summary.lastResult?.code == "ok" && (needs[summary.key] ?? []).contains { !$0.appID.isEmpty }
            }.map(\.key)
            let states = read.isEmpty ? [:] : try await store.states(of: read)
            let histories = historyLimit > 0 ? try await store.histories(of: keys, limit: historyLimit) : [:]
            // With every body read, a host forgotten between the page and this read is skipped.
            let judged = page.compactMap { summary -> (verdict: StoredVerdict, history: [HistoryEvent])? in
                guard let state = states[summary.key] ?? (allBodies ? nil : summary) else { return nil }
                return (StoredVerdict(state: state, needs: needs[summary.key] ?? []), histories[summary.key] ?? [])
            }
            try body(judged)
        }
    }
}

/// What `refresh --metrics FILE` writes: per host and route, and for the pass, in Prometheus's
/// text exposition format (``PrometheusExposition``) for node_exporter's textfile collector.
///
/// Per host and route (labels `host`, `route`): `aasa_fetch_host_associates` (1 when the last
/// download gave an approved file listing every app that needs the host, or any approved file when
/// no app ID is known; 0 when it failed, an app is not listed, or the host was never fetched),
/// `aasa_fetch_host_last_code_info` (value 1, the last code as label `code`; absent before the
/// first download), `aasa_fetch_host_last_success_timestamp_seconds` and
/// `aasa_fetch_host_last_check_timestamp_seconds` (Unix times; 0 when never),
/// `aasa_fetch_host_consecutive_failures`. For the store: `aasa_fetch_store_hosts` by `status`.
/// For the pass: `aasa_fetch_refresh_hosts_checked`, `_changed`, `_failed`, `_duration_seconds`
/// and `aasa_fetch_refresh_last_run_timestamp_seconds`.
public struct RefreshMetrics: Sendable {
    /// One host and route, as the metrics describe it.
    public struct Host: Sendable, Hashable {
        /// Host and route.
        public var key: HostKey
        /// The stored verdict's status.
        public var status: StoredVerdict.Status
        /// The last code, `nil` before the first download.
        public var code: String?
        /// When an approved file was last confirmed.
        public var lastSuccess: Date?
        /// When the host was last downloaded.
        public var lastCheck: Date?
        /// Failures in a row.
        public var consecutiveFailures: Int

        /// The summary of a verdict.
        public init(_ verdict: StoredVerdict) {
            key = verdict.state.key
            status = verdict.status
            code = verdict.state.lastResult?.code
            lastSuccess = verdict.state.approvedAt
            lastCheck = verdict.state.lastResult?.fetchedAt
            consecutiveFailures = verdict.state.consecutiveFailures
        }

        /// The 0/1 of `aasa_fetch_host_associates`.
        public var associates: Bool { status == .associates || status == .unjudged }
    }

    /// Every host of the store after the pass.
    public var hosts: [Host]
    /// Hosts downloaded and recorded by the pass.
    public var checked: Int
    /// Of those, hosts whose download recorded a change in the history.
    public var changed: Int
    /// Of those, hosts whose download failed.
    public var failed: Int
    /// How long the pass took, in seconds.
    public var duration: Double
    /// When the pass ended.
    public var finishedAt: Date

    /// The metrics of a pass over a store whose hosts are `hosts`.
    public init(report: RefreshReport, hosts: [Host], duration: Double, finishedAt: Date) {
        self.hosts = hosts
        checked = report.hosts.count
        changed = report.hosts.filter { !$0.events.isEmpty }.count
        failed = report.hosts.filter { $0.outcome == .transient || $0.outcome == .denied }.count
        self.duration = duration
        self.finishedAt = finishedAt
    }

    /// Every host of a store that an entry needs, judged (``StoredVerdict/walk(_:chunk:historyLimit:allBodies:_:)``,
    /// reading only the bodies a verdict reads);
    /// unneeded hosts are no longer refreshed, so they have no series (no stale alerts).
    public static func hosts(of store: any AssociationStore) async throws -> [Host] {
        var hosts: [Host] = []
        try await StoredVerdict.walk(store, allBodies: false) { chunk in
            hosts += chunk.filter { $0.verdict.state.unneededSince == nil }.map { Host($0.verdict) }
        }
        return hosts
    }

    /// The text of the metrics file.
    public var exposition: String {
        var out = PrometheusExposition()
        func perHost(_ name: String, _ help: String, _ value: (Host) -> Double?) {
            out.family(name, type: .gauge, help: help)
            for host in hosts {
                guard let number = value(host) else { continue }
                out.sample(name, ["host": host.key.host, "route": host.key.route.rawValue], number)
            }
        }
        perHost("aasa_fetch_host_associates",
                "1 when the last download gave an approved file that lists every app that needs the host (any approved file when no app ID is known), else 0.") {
            $0.associates ? 1 : 0
        }
        out.family("aasa_fetch_host_last_code_info", type: .gauge,
                   help: "The code of the last download (ok or a failure code) as the label code; always 1.")
        for host in hosts {
            guard let code = host.code else { continue }
            out.sample("aasa_fetch_host_last_code_info", ["host": host.key.host, "route": host.key.route.rawValue, "code": code], 1)
        }
        perHost("aasa_fetch_host_last_success_timestamp_seconds",
                "When an approved file was last downloaded or confirmed (Unix time; 0 when never).") {
            $0.lastSuccess?.timeIntervalSince1970 ?? 0
        }
        perHost("aasa_fetch_host_last_check_timestamp_seconds", "When the host was last downloaded (Unix time; 0 when never).") {
            $0.lastCheck?.timeIntervalSince1970 ?? 0
        }
        perHost("aasa_fetch_host_consecutive_failures", "Failed downloads in a row since the last approved file.") {
            Double($0.consecutiveFailures)
        }
        out.family("aasa_fetch_store_hosts", type: .gauge,
                   help: "Hosts and routes in the store by status: associates, fails, unjudged (no app ID known), pending (never downloaded).")
        for status in StoredVerdict.Status.allCases {
            out.sample("aasa_fetch_store_hosts", ["status": status.rawValue], Double(hosts.filter { $0.status == status }.count))
        }
        out.family("aasa_fetch_refresh_hosts_checked", type: .gauge, help: "Hosts downloaded and recorded by the last refresh pass.")
        out.sample("aasa_fetch_refresh_hosts_checked", Double(checked))
        out.family("aasa_fetch_refresh_hosts_changed", type: .gauge, help: "Hosts of the last refresh pass whose download recorded a change.")
        out.sample("aasa_fetch_refresh_hosts_changed", Double(changed))
        out.family("aasa_fetch_refresh_hosts_failed", type: .gauge, help: "Hosts of the last refresh pass whose download failed.")
        out.sample("aasa_fetch_refresh_hosts_failed", Double(failed))
        out.family("aasa_fetch_refresh_duration_seconds", type: .gauge, help: "How long the last refresh pass took.")
        out.sample("aasa_fetch_refresh_duration_seconds", (duration * 1000).rounded() / 1000)
        out.family("aasa_fetch_refresh_last_run_timestamp_seconds", type: .gauge, help: "When the last refresh pass ended (Unix time).")
        out.sample("aasa_fetch_refresh_last_run_timestamp_seconds", finishedAt.timeIntervalSince1970.rounded())
        return out.text
    }
}
