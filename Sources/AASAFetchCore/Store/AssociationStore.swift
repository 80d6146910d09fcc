import Foundation

/// Where association results live between runs: hosts with their last result, last approved
/// file, validators, failure count, next check and lease; the entries and app IDs that need each
/// host; and a history of changes.
///
/// Every operation is one transaction. Errors are ``StoreError`` values with a stable code.
/// ``SQLiteAssociationStore`` (one file, one machine) and ``PostgresAssociationStore`` (one
/// server, workers on many machines) implement it with the same semantics.
public protocol AssociationStore: Sendable {
    /// Where the store is, for messages (a file path or a connection description).
    var location: String { get }

    /// For a stopping process: the store call in progress, and every later one, must end within
    /// `seconds`, or fail with `store-unreachable`, so a database server that stopped answering
    /// cannot keep the process from ending. A SQLite store ignores it (its waits for a lock are
    /// bounded already).
    func finish(within seconds: TimeInterval)

    /// The time on the store's server (`clock_timestamp()` for PostgreSQL), for ``StoreClock``;
    /// `nil` for a store without a server (SQLite).
    func serverTime() async throws -> Date?

    /// Adds hosts (kept as they are when already present, due at `now` when new) and the entries
    /// and app IDs that need them, and returns the stored state of every registered host (none
    /// without `returningStates`: a run that records in batches reads each batch's states then).
    func register(hosts: [HostRegistration], needs: [EntryNeed], now: Date, returningStates: Bool) async throws -> [HostKey: HostState]

    /// Leases up to `limit` due hosts (`next_check <= now`, no unexpired lease) to `owner` until
    /// `now + leaseSeconds`, in one write transaction, so two refreshes never fetch the same host.
    /// Hosts come back in priority order (tier, then order of addition) with their stored state.
    func claimDue(now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String) async throws -> DueClaim

    /// Leases hosts for a forced check, whatever their next check (`refresh --host`, `--all`): up
    /// to `limit` of the hosts named in `hosts` (every route; every host when `nil`) that come after
    /// `cursor` in order of addition and that no other process holds an unexpired lease on, to
    /// `owner` until `now + leaseSeconds`, in one write transaction as ``claimDue(now:limit:leaseSeconds:owner:)``
    /// does, so two processes never fetch one host at once. Pass the returned cursor to get the next
    /// batch; a host leased elsewhere is left to that process (counted, not waited for).
    func claimForced(hosts: [String]?, after cursor: Int64, now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String) async throws -> ForcedClaim

    /// The last `limit` history events of each of these hosts, oldest first, in one transaction
    /// (the status page reads thousands of hosts at once).
    func histories(of keys: [HostKey], limit: Int) async throws -> [HostKey: [HistoryEvent]]

    /// Records one download: last result, approved body and validators when approved, failure
    /// count, next check, history events; releases `owner`'s lease on the host. One transaction.
    ///
    /// With an `owner`, the download is recorded only while that owner still holds the host's
    /// lease (expired or not): when the lease lapsed and another process took the host over, the
    /// result is dropped (``RecordResult/leaseLost(owner:)``) so it never overwrites a newer one.
    /// Without an owner (a direct run), it is recorded only while the host's fetch time is still
    /// ``HostUpdate/judgedAgainst`` and older than this download's: when another process recorded
    /// the host meanwhile, or a newer download, that result stands (``RecordResult/leaseLost(owner:)``,
    /// with the lease's holder, if any), so two runs never record one change twice and an older
    /// download never replaces a newer one.
    @discardableResult
    func record(_ update: HostUpdate, owner: String?) async throws -> RecordResult

    /// Records many downloads, each as ``record(_:owner:)``, in as few transactions as the store
    /// allows; the results are in the order of `updates`.
    func recordAll(_ updates: [HostUpdate], owner: String?) async throws -> [RecordResult]

    /// Releases `owner`'s leases on these hosts without recording anything (an abandoned fetch).
    func release(_ keys: [HostKey], owner: String) async throws

    /// The entries and app IDs that need each of these hosts.
    func needs(for keys: [HostKey]) async throws -> [HostKey: [EntryNeed]]

    /// The stored state of these hosts (those the store knows).
    func states(of keys: [HostKey]) async throws -> [HostKey: HostState]

    /// At most `limit` hosts added after the host at `cursor` (0: from the first), in order of
    /// addition, without bodies (``HostState/approvedBody`` is `nil`; ``HostState/approvedSize``
    /// tells whether there is one). Each page is read on its own: a host added while pages are
    /// read comes in a later page, one forgotten is not in the pages after it. (On SQLite a host
    /// added right after the newest host was forgotten may take its position; a walk that had
    /// passed it then misses the new host, which the next walk lists.)
    func hosts(after cursor: Int64, limit: Int) async throws -> HostPage

    /// The history of a host, oldest first; at most the last `limit` events.
    func history(of key: HostKey, limit: Int) async throws -> [HistoryEvent]

    /// The earliest next check over all hosts, `nil` when the store is empty.
    func nextDue() async throws -> Date?

    /// Removes a host (every route), its entries, history and kept files. Returns how many host rows went.
    func forget(host: String) async throws -> Int

    // MARK: Retention

    /// Makes the needs registered at `registeredAt` the whole set of these app IDs in these scopes
    /// (a route, and entries with a `?mode=`, without, or all; ``RouteChoice/needScopes``): their
    /// needs in those scopes registered earlier (not seen by this registration) are removed, and
    /// hosts that no entry needs any more become unneeded since `now` (not refreshed, removed after
    /// the grace period by ``pruneUnneeded(before:now:limit:)``). Needs outside the scopes stay.
    /// ``register(hosts:needs:now:)`` with `now == registeredAt` marks the needs seen; a host
    /// registered with a need is needed again.
    func retireNeeds(appIDs: [String], scopes: [NeedScope], registeredBefore registeredAt: Date, now: Date) async throws -> RetiredNeeds

    /// Removes up to `limit` hosts unneeded since `before` or earlier (and not leased at `now`),
    /// with their history and kept files, in one transaction; returns them.
    func pruneUnneeded(before: Date, now: Date, limit: Int) async throws -> [HostKey]

    /// Removes up to `limit` history events older than `before`, in one transaction; returns how many.
    func pruneHistory(before: Date, limit: Int) async throws -> Int

    /// The kept approved files of a host and route, latest first (index 0, -1, …); with `bodies`,
    /// their bytes too.
    func versions(of key: HostKey, bodies: Bool) async throws -> [StoredVersion]
    /// Leases the oldest `limit` undelivered notifications to `owner` until `now + leaseSeconds`,
    /// in one write transaction; reads and resets the count of notifications dropped because the
    /// queue was full. Only one process delivers at a time, so events arrive in order: while
    /// another owner holds an unexpired lease on a queued notification, nothing is leased
    /// (``NotificationClaim/heldBy`` names it). A lease that lapsed (a killed process) is taken over.
    func claimNotifications(now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String) async throws -> NotificationClaim

    /// Removes a delivered notification (after a 2xx answer) while `owner` holds its lease;
    /// returns whether it was still there.
    @discardableResult
    func acknowledgeNotification(id: Int64, owner: String) async throws -> Bool

    /// Releases `owner`'s leases on queued notifications, after a delivery that failed on the one
    /// with id `failed` (its attempt count goes up and `error` is kept), or was stopped.
    func releaseNotifications(owner: String, failed: Int64?, error: String?) async throws

    /// The undelivered notifications, in delivery order (tests and diagnostics).
    func queuedNotifications() async throws -> [QueuedNotification]
}

extension AssociationStore {
    /// Nothing to bound by default (see the requirement).
    public func finish(within seconds: TimeInterval) {}

    /// No server by default (see the requirement).
    public func serverTime() async throws -> Date? { nil }

    /// ``register(hosts:needs:now:returningStates:)``, returning the registered hosts' states.
    public func register(hosts: [HostRegistration], needs: [EntryNeed], now: Date) async throws -> [HostKey: HostState] {
        try await register(hosts: hosts, needs: needs, now: now, returningStates: true)
    }

    /// Every host, in order of addition, without bodies: ``hosts(after:limit:)`` page after page,
    /// handed to `body` one page at a time (so memory is bounded by the page, not by the store).
    public func forEachHostPage(limit: Int = 500, _ body: ([HostState]) async throws -> Void) async throws {
        var cursor: Int64 = 0
        while true {
            let page = try await hosts(after: cursor, limit: max(1, limit))
            guard let next = page.cursor, !page.states.isEmpty else { return }
            try await body(page.states)
            cursor = next
        }
    }

    /// Every host, in order of addition, without bodies, in one array (tests and small stores;
    /// commands read the pages of ``forEachHostPage(limit:_:)``).
    public func allHosts() async throws -> [HostState] {
        var all: [HostState] = []
        try await forEachHostPage { all += $0 }
        return all
    }

    /// One ``record(_:owner:)`` per update.
    public func recordAll(_ updates: [HostUpdate], owner: String?) async throws -> [RecordResult] {
        var results: [RecordResult] = []
        results.reserveCapacity(updates.count)
        for update in updates { results.append(try await record(update, owner: owner)) }
        return results
    }
}

/// A page of hosts in order of addition (``AssociationStore/hosts(after:limit:)``).
public struct HostPage: Sendable {
    /// The hosts, without bodies.
    public var states: [HostState]
    /// Where the next page starts (the last host's position), `nil` when the page is empty.
    public var cursor: Int64?

    /// A page.
    public init(states: [HostState], cursor: Int64?) {
        self.states = states
        self.cursor = cursor
    }
}
