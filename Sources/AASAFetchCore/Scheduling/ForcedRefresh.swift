import Foundation

extension RefreshJob {
    /// `refresh --host H` / `refresh --all`: fetches the named hosts (every route of each; every
    /// host of the store when `hosts` is `nil`) now, whatever their next check, batch by batch in
    /// order of addition, and records them under the same policy as a due pass (conditional
    /// requests, next check, history). Each batch is leased first
    /// (``AssociationStore/claimForced(hosts:after:now:limit:leaseSeconds:owner:)``), so a host
    /// another process is fetching at that moment is left to it and counted in
    /// ``RefreshReport/leasedElsewhere``, and two processes never fetch one host at once.
    ///
    /// - Parameters:
    ///   - hosts: ASCII host names as the store keeps them, or `nil` for every host.
    ///   - now: the clock.
    ///   - stop: fired by SIGINT/SIGTERM/SIGHUP; the in-flight batch is abandoned and its leases released.
    public func runForced(
        hosts: [String]?,
        now: @escaping @Sendable () -> Date,
        stop: StopSignal = StopSignal(),
        progress: @escaping @Sendable (Int, HostFetchResult) -> Void = { _, _ in }
    ) async throws -> RefreshReport {
        var report = RefreshReport(now: now(), owner: owner)
        var cursor: Int64 = 0
        var first = true
        while !stop.isStopped {
            let time = now()
            let forced = try await store.claimForced(
                hosts: hosts, after: cursor, now: time, limit: batchSize, leaseSeconds: leaseSeconds, owner: owner)
            if first {
                // The first claim looks at the whole selection: what others hold of it.
                report.leasedElsewhere = forced.claim.leasedElsewhere
                report.otherOwners = forced.claim.otherOwners
                first = false
            }
            guard let next = forced.cursor, !forced.claim.hosts.isEmpty else { break }
            cursor = next
            report.add(batch: try await fetchAndRecord(forced.claim, at: time, now: now, stop: stop, progress: progress))
            // As a due pass: hosts this process could not fetch end it (the run fails with them).
            guard report.shortages.isEmpty else { break }
        }
        report.stopped = stop.isStopped
        if !report.stopped { report.pruned = try await retention.prune(store, now: now(), stop: stop) }
        report.nextDue = try await Task { try await store.nextDue() }.value
        return report
    }
}
