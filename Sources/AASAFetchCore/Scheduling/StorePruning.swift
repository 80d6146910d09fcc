import Foundation

/// What `refresh` removes from the store, and after how long: hosts that no entry needs any more
/// after `pruneAfter` (`--prune-after`, default 30 days), history events older than `keepHistory`
/// (`--keep-history`, default 180 days). `nil` keeps them (`0` or `never`).
public struct RetentionPolicy: Sendable, Hashable {
    /// The grace period of an unneeded host; `nil` keeps unneeded hosts.
    public var pruneAfter: TimeInterval?
    /// How long history is kept; `nil` keeps it all.
    public var keepHistory: TimeInterval?
    /// Rows removed per transaction.
    public var batchSize: Int

    /// Creates a policy (by default the documented defaults).
    public init(
        pruneAfter: TimeInterval? = StoreRetention.defaultPruneAfter, keepHistory: TimeInterval? = StoreRetention.defaultKeepHistory,
        batchSize: Int = StoreRetention.batchSize
    ) {
        self.pruneAfter = pruneAfter
        self.keepHistory = keepHistory
        self.batchSize = max(1, batchSize)
    }

    /// Removes what the policy no longer keeps at `now`, in transactions of at most
    /// ``batchSize`` rows each (a large store is never locked for long), until nothing is left to
    /// remove or `stop` fires.
    public func prune(_ store: any AssociationStore, now: Date, stop: StopSignal = StopSignal()) async throws -> PruneReport {
        var report = PruneReport()
        if let pruneAfter {
            let before = now.addingTimeInterval(-pruneAfter)
            while !stop.isStopped {
                let removed = try await store.pruneUnneeded(before: before, now: now, limit: batchSize)
                report.hosts += removed
                if removed.count < batchSize { break }
            }
        }
        if let keepHistory {
            let before = now.addingTimeInterval(-keepHistory)
            while !stop.isStopped {
                let removed = try await store.pruneHistory(before: before, limit: batchSize)
                report.historyEvents += removed
                if removed < batchSize { break }
            }
        }
        return report
    }
}

/// What one pruning removed.
public struct PruneReport: Sendable, Hashable, Encodable {
    /// Hosts (with their history and kept files) removed after their grace period.
    public var hosts: [HostKey] = []
    /// History events removed for their age (not counting those of removed hosts).
    public var historyEvents = 0

    /// Creates an empty report.
    public init() {}

    /// Whether nothing was removed.
    public var isEmpty: Bool { hosts.isEmpty && historyEvents == 0 }

    private enum CodingKeys: String, CodingKey { case hosts, historyEvents }

    /// `{"hosts": ["example.com", "example.net (cdn)"], "historyEvents": 3}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(hosts.map(\.description), forKey: .hosts)
        try container.encode(historyEvents, forKey: .historyEvents)
    }
}
