import Foundation
import GRDB
import Synchronization

/// A failure of the run spool (the temporary database of a large run): exit 2, code `spool-error`.
public struct SpoolError: Error, Sendable, CustomStringConvertible {
    /// `spool-error`, or `descriptors-exhausted` when the process had no descriptor left for it.
    public var code: String
    /// What happened.
    public var message: String

    /// Creates an error.
    public init(_ message: String, code: String = "spool-error") {
        self.message = message
        self.code = code
    }

    public var description: String { "\(code): \(message)" }
}

/// Counts over a run's entry verdicts, for ``AssociationJudge/summary(counts:domains:domainWarnings:runFindings:)``.
public struct EntryCounts: Sendable, Hashable {
    /// Entries.
    public var entries = 0
    /// Entries that associate.
    public var associated = 0
    /// Entries that fail.
    public var failed = 0
    /// Entries not judged (no app ID).
    public var unjudged = 0
    /// The entries' own warnings (`entitlement-…` codes).
    public var entitlementWarnings = 0

    /// Creates counts.
    public init(entries: Int = 0, associated: Int = 0, failed: Int = 0, unjudged: Int = 0, entitlementWarnings: Int = 0) {
        self.entries = entries
        self.associated = associated
        self.failed = failed
        self.unjudged = unjudged
        self.entitlementWarnings = entitlementWarnings
    }

    /// Counts a list of verdicts.
    public init(_ verdicts: some Sequence<EntryVerdict>) {
        for verdict in verdicts { add(verdict) }
    }

    /// Adds one verdict.
    public mutating func add(_ verdict: EntryVerdict) {
        entries += 1
        switch verdict.associated {
        case true?: associated += 1
        case false?: failed += 1
        case nil: unjudged += 1
        }
        entitlementWarnings += RunSpool.entitlementWarnings(verdict.findings)
    }
}

/// Which verdicts ``RunSpool/forEachVerdict(_:_:)`` visits, always in entry order.
public enum VerdictSelection: Sendable {
    /// Every entry.
    case all
    /// Entries that name no host to fetch.
    case unfetchable
    /// Fetchable entries that carry `entitlement-…` findings.
    case fetchableWithOwnFindings
}

/// The entries and hosts of a run kept in a temporary SQLite database instead of memory, so a run
/// over a list of any length (`--domains` with 100,000 hosts) holds only a window of it.
///
/// Pass 1 (``append(definitions:_:)``) parses each entry as it is read with the rules of
/// ``EntryParser/parse(_:)`` (duplicates found through an index, not a dictionary) and keeps every
/// distinct host once with its priority tier, first appearance and whether it serves entries
/// without and with a mode (what ``RouteChoice/downloads(servesPlain:servesModes:)`` routes by).
/// ``hostCursor(pageSize:)`` gives the hosts in start order (tier, then first appearance:
/// ``FetchPlan``'s order) a page at a time; ``judge(_:tier:entries:comparison:appIDs:)`` judges
/// one result (with `--route both`, the pair) against its entries and writes their verdicts back;
/// ``forEachVerdict(_:_:)`` and ``counts()`` read the verdicts at the end.
///
/// The database lives in its own folder under `parent` (the system's temporary folder, `TMPDIR`),
/// without a journal (it is thrown away, never recovered); ``remove()`` deletes the folder. The
/// folder stays open and locked (`flock`) while the spool lives, so that a folder left by a run that
/// could not remove it (SIGKILL, a crash, the out-of-memory killer) is told from a live one and
/// removed by the next spool made in the same parent (``removeAbandoned(in:)``).
public final class RunSpool: Sendable {
    /// The spool's folder.
    public let directory: String
    /// The folder's descriptor, holding its lock until ``remove()`` (-1 once closed).
    private let ownerLock: Mutex<Int32>
    /// The start of every spool folder's name, followed by the process ID, `-` and 8 characters.
    static let folderPrefix = "aasa-fetch-spool-"
    /// The database file.
    public var path: String { (directory as NSString).appendingPathComponent("spool.sqlite") }
    /// The priorities of the run.
    public let prioritizer: DomainPrioritizer
    private let queue: DatabaseQueue
    /// Verdicts judged and not yet written: written ``verdictBatch`` at a time in one transaction,
    /// and before anything reads verdicts back (each entry is judged once, so the judge never
    /// needs a pending verdict: the second download of a host split over two routes, `--route
    /// cdn`, reads the first one's entries with the host's but neither judges nor writes them).
    private let pendingVerdicts = Mutex<[PendingVerdict]>([])
    /// The verdicts of the hosts read ahead for judging (``hostCursor(pageSize:forJudging:)``),
    /// until each is judged: as they were parsed, which is what a judge reads (each entry is
    /// judged once, and its verdict written back only after).
    private let readVerdicts = Mutex<[String: [EntryVerdict]]>([:])
    /// Verdicts written per transaction.
    static let verdictBatch = 512
    /// The spool's SQLite page cache, in KiB (`PRAGMA cache_size`).
    static let pageCacheKiB = 256

    /// A judged verdict waiting to be written.
    private struct PendingVerdict: Sendable {
        var position: Int
        var associated: Bool?
        var code: String?
        var findings: Data?
        var ownFindings: Int
        var entitlementWarnings: Int
    }

    /// Creates a spool in a new folder under `parent` (default: the system's temporary folder).
    public init(parent: String? = nil, prioritizer: DomainPrioritizer) throws(SpoolError) {
        let base = parent ?? FileManager.default.temporaryDirectory.path
        Self.removeAbandoned(in: base)
        directory = (base as NSString).appendingPathComponent("\(Self.folderPrefix)\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))")
        self.prioritizer = prioritizer
        // Only the spool's own folder: a missing TMPDIR is an error, not something to create.
        if let failure = SystemReason.createFolder(directory, parents: false, mode: 0o700) {
            throw SpoolError("cannot create the run spool in \(base): \(SystemReason.text(errno: failure)) (set TMPDIR to a writable folder)")
        }
        // Locked from here to the end of the process (or remove()); between mkdir and flock the
        // folder is unlocked, but this process lives, so removeAbandoned leaves it.
        let lock = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if lock < 0 {
            let failure = errno
            try? FileManager.default.removeItem(atPath: directory)
            throw SpoolError("cannot open the run spool \(directory): \(SystemReason.text(errno: failure))")
        }
        // Without flock (some network file systems) the folder is only removed by this run.
        _ = flock(lock, LOCK_EX | LOCK_NB)
        ownerLock = Mutex(lock)
        var configuration = Configuration()
        configuration.label = "aasa-fetch.spool"
        configuration.prepareDatabase { db in
            // Throwaway data: no journal, no syncing. The spool is written once and read in order,
            // so a small page cache is enough (SQLite's default, 2 MiB, fills with a large run).
            // One connection of one process: the file lock is taken once and kept, instead of
            // two fcntl calls and a journal lookup per transaction (a host's judging is one).
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            try db.execute(sql: "PRAGMA journal_mode = OFF")
            try db.execute(sql: "PRAGMA synchronous = OFF")
            try db.execute(sql: "PRAGMA temp_store = FILE")
            try db.execute(sql: "PRAGMA cache_size = -\(Self.pageCacheKiB)")
        }
        do {
            queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent("spool.sqlite"), configuration: configuration)
            try queue.inDatabase { db in
                try db.execute(sql: """
                    CREATE TABLE entries (
                        position INTEGER PRIMARY KEY,
                        raw TEXT,
                        service TEXT,
                        domain TEXT,
                        host TEXT,
                        wildcard INTEGER NOT NULL,
                        mode TEXT,
                        entry_findings BLOB,
                        associated INTEGER,
                        code TEXT NOT NULL,
                        findings BLOB,
                        own_findings INTEGER NOT NULL,
                        entitlement_warnings INTEGER NOT NULL,
                        line INTEGER,
                        judged INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX entries_host ON entries(host, position) WHERE host IS NOT NULL;
                    CREATE TABLE hosts (
                        host TEXT PRIMARY KEY,
                        tier INTEGER NOT NULL,
                        ordinal INTEGER NOT NULL,
                        plain INTEGER NOT NULL,
                        moded INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX hosts_order ON hosts(tier, ordinal);
                    CREATE TABLE seen (normalized TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
                    """)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            close(lock)
            if SystemReason.descriptorsExhaustedNow {
                throw SpoolError("cannot create the run spool \(directory): this process ran out of file descriptors (\(error)); raise the limit (ulimit -n)",
                                 code: "descriptors-exhausted")
            }
            throw SpoolError("cannot create the run spool \(directory): \(error)")
        }
    }

    deinit {
        ownerLock.withLock { if $0 >= 0 { close($0) } }
    }

    /// Deletes the spool's folder. The spool must not be used afterwards.
    public func remove() {
        try? queue.close()
        try? FileManager.default.removeItem(atPath: directory)
        ownerLock.withLock { lock in
            if lock >= 0 { close(lock) }
            lock = -1
        }
    }

    /// Removes the spool folders in `parent` that runs left behind when they ended without
    /// removing them (SIGKILL, a crash, the out-of-memory killer), so that a cron job killed night
    /// after night does not fill the temporary folder. A folder is removed when its name is a
    /// spool's (`aasa-fetch-spool-PID-…`), it is a folder of this user's (not a link), no process
    /// holds its lock, and process PID is gone. A live run's spool is always locked, or (in the
    /// moment between creating and locking it, or from a version without the lock) its process
    /// lives; a PID used again by another process keeps the folder until that process ends.
    /// Failures are ignored: this is housekeeping, never a reason to stop a run.
    /// - Returns: How many folders were removed.
    @discardableResult
    public static func removeAbandoned(in parent: String) -> Int {
        // readdir, not FileManager: the folder may hold thousands of names (`/tmp`), and this
        // runs before every spooled run.
        guard let listing = opendir(parent) else { return 0 }
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = entryName(entry)
            if name.hasPrefix(folderPrefix) { names.append(name) }
        }
        closedir(listing)
        var removed = 0
        for name in names {
            let rest = name.dropFirst(folderPrefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0 else { continue }
            let path = (parent as NSString).appendingPathComponent(name)
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == getuid() else { continue }
            let folder = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard folder >= 0 else { continue }
            defer { close(folder) }
            // Held: its run goes on (here or in another PID namespace sharing the folder).
            guard flock(folder, LOCK_EX | LOCK_NB) == 0 else { continue }
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }
            if (try? FileManager.default.removeItem(atPath: path)) != nil { removed += 1 }
        }
        return removed
    }

    /// Where `d_name` starts in a `dirent` record.
    private static let entryNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// The name of an entry that `readdir` returned, read from the entry's own record only. The
    /// kernel packs the records of a listing at their length (`d_reclen`, as short as 24 bytes), so
    /// copying a whole `dirent` or its 256-byte `d_name` out of the last record of the buffer
    /// reads past the buffer's end, and crashed a run now and then where that end met unmapped
    /// memory.
    package static func entryName(_ entry: UnsafePointer<dirent>) -> String {
        String(cString: (UnsafeRawPointer(entry) + entryNameOffset).assumingMemoryBound(to: CChar.self))
    }

    // MARK: - Pass 1: entries

    /// Parses entries as `produce` hands them over (in entry order, after those already added) and
    /// keeps them and their hosts, in one transaction. Errors thrown by `produce` pass through.
    public func append(definitions: [String: String], _ produce: (_ add: (String?) throws -> Void) throws -> Void) throws {
        try append(definitions: definitions, lines: { add in
            try withoutActuallyEscaping(add) { add in
                try produce { string in try add(string, nil) }
            }
        })
    }

    /// ``append(definitions:_:)`` with each entry's line in its file (``AssociatedDomainEntry/line``).
    public func append(definitions: [String: String], lines produce: (_ add: (String?, Int?) throws -> Void) throws -> Void) throws {
        let parser = EntryParser(definitions: definitions)
        let prioritizer = prioritizer
        do {
            try queue.inDatabase { db in
                try db.inTransaction {
                    var position = try Int.fetchOne(db, sql: "SELECT count(*) FROM entries") ?? 0
                    let insertEntry = try db.makeStatement(sql: """
                        INSERT INTO entries (position, raw, service, domain, host, wildcard, mode, entry_findings,
                                             associated, code, findings, own_findings, entitlement_warnings, line)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """)
                    // A host seen again keeps its tier and first appearance; it only learns that it
                    // serves entries with or without a mode too (the row is written only then).
                    let insertHost = try db.makeStatement(sql: """
                        INSERT INTO hosts (host, tier, ordinal, plain, moded) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (host) DO UPDATE SET plain = max(plain, excluded.plain), moded = max(moded, excluded.moded)
                        WHERE excluded.plain > hosts.plain OR excluded.moded > hosts.moded
                        """)
                    let insertSeen = try db.makeStatement(sql: "INSERT OR IGNORE INTO seen (normalized, position) VALUES (?, ?)")
                    let firstSeen = try db.makeStatement(sql: "SELECT position FROM seen WHERE normalized = ?")
                    try produce { string, line in
                        var entry = parser.parse(string, index: position)
                        if let key = entry.normalized {
                            // EntryParser.parse(_:)'s duplicate rule, through the index.
                            try insertSeen.execute(arguments: [key, position])
                            if db.changesCount == 0, let first = try Int.fetchOne(firstSeen, arguments: [key]) {
                                entry.findings.append(EntryParser.duplicateFinding(key: key, first: first, position: position))
                            }
                        }
                        let verdict = EntryVerdict(parsed: entry)
                        let findings = Self.encode(entry.findings)
                        try insertEntry.execute(arguments: [
                            position, entry.raw.map { Data($0.utf8) }, entry.service?.name, entry.domain, entry.host, entry.isWildcard,
                            entry.mode?.rawValue, findings, verdict.associated, verdict.code, findings,
                            Self.ownFindings(verdict.findings), Self.entitlementWarnings(verdict.findings), line,
                        ])
                        if let host = entry.host {
                            let moded = entry.mode != nil
                            try insertHost.execute(arguments: [host, prioritizer.tier(of: host), position, !moded, moded])
                        }
                        position += 1
                    }
                    return .commit
                }
            }
        } catch let error as DatabaseError {
            throw SpoolError("\(path): \(error.message ?? "\(error)")")
        }
    }

    /// How many entries and hosts the spool holds, how many downloads `route` makes of those hosts
    /// (``RouteChoice/downloads(servesPlain:servesModes:)`` counted over the hosts of each kind),
    /// and the longest host's length.
    public func sizes(route: RouteChoice = .origin) throws(SpoolError) -> (entries: Int, hosts: Int, fetches: Int, longestHost: Int?) {
        try access { db in
            let entries = try Int.fetchOne(db, sql: "SELECT count(*) FROM entries") ?? 0
            var (hosts, fetches, longest) = (0, 0, nil as Int?)
            for row in try Row.fetchAll(db, sql: """
                SELECT plain, moded, count(*) AS hosts, max(length(host)) AS longest FROM hosts GROUP BY plain, moded
                """) {
                let count: Int = row["hosts"]
                hosts += count
                fetches += count * route.downloads(servesPlain: row["plain"], servesModes: row["moded"]).count
                let length: Int? = row["longest"]
                longest = [longest, length].compactMap { $0 }.max()
            }
            return (entries, hosts, fetches, longest)
        }
    }

    // MARK: - Pass 2: hosts in start order, judged one by one

    /// A host to fetch, in start order.
    public struct SpooledHost: Sendable, Hashable {
        /// The ASCII host.
        public var host: String
        /// Its priority tier.
        public var tier: Int
        /// First appearance (the position of the first entry that needs it).
        public var ordinal: Int
        /// Whether it serves entries without a mode (the ones `--route cdn|both` fetch through the CDN).
        public var servesPlain: Bool
        /// Whether it serves `?mode=developer`/`managed` entries (always fetched from the origin).
        public var servesModes: Bool

        /// The host's downloads on `choice`, in start order
        /// (``RouteChoice/downloads(servesPlain:servesModes:)``). The fetch stage and the store's
        /// registration both use it.
        public func downloads(on choice: RouteChoice) -> [RoutedDownload] {
            choice.downloads(servesPlain: servesPlain, servesModes: servesModes)
        }
    }

    /// Reads the hosts in start order (tier, then first appearance) a page at a time.
    public struct HostCursor {
        let spool: RunSpool
        let pageSize: Int
        /// Whether each page's verdicts are read with it, for ``RunSpool/judge(_:tier:entries:comparison:appIDs:)``.
        let forJudging: Bool
        private var page: [SpooledHost] = []
        private var index = 0
        private var last: (tier: Int, ordinal: Int)?
        private var exhausted = false

        init(spool: RunSpool, pageSize: Int, forJudging: Bool) {
            self.spool = spool
            self.pageSize = max(1, pageSize)
            self.forJudging = forJudging
        }

        /// The next host, or `nil` after the last.
        public mutating func next() throws(SpoolError) -> SpooledHost? {
            if index == page.count {
                guard !exhausted else { return nil }
                page = try spool.hostPage(after: last, limit: pageSize)
                index = 0
                if page.count < pageSize { exhausted = true }
                guard let first = page.first, let tail = page.last else { return nil }
                last = (tail.tier, tail.ordinal)
                if forJudging { try spool.readAhead(from: (first.tier, first.ordinal), through: (tail.tier, tail.ordinal)) }
            }
            defer { index += 1 }
            return page[index]
        }

        /// The next page of hosts (up to the page size), empty after the last.
        public mutating func nextPage() throws(SpoolError) -> [SpooledHost] {
            var hosts: [SpooledHost] = []
            while hosts.count < pageSize, let host = try next() { hosts.append(host) }
            return hosts
        }
    }

    /// A cursor over the hosts in start order, reading `pageSize` hosts per query. `forJudging`:
    /// the hosts are fetched and judged (``judge(_:tier:entries:comparison:appIDs:)``), so the
    /// verdicts of a page's entries are read with the page, in one query, and kept until each
    /// host is judged (a query per host was a tenth of the judging task's work).
    public func hostCursor(pageSize: Int = 1000, forJudging: Bool = false) -> HostCursor {
        HostCursor(spool: self, pageSize: pageSize, forJudging: forJudging)
    }

    /// Reads the verdicts of the entries of the hosts from `first` through `last` in start order
    /// (a page of ``HostCursor``) into ``readVerdicts``.
    fileprivate func readAhead(from first: (tier: Int, ordinal: Int), through last: (tier: Int, ordinal: Int)) throws(SpoolError) {
        let read = try access { db in
            var byHost: [String: [EntryVerdict]] = [:]
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(Self.verdictColumns) FROM entries JOIN hosts USING (host)
                WHERE (hosts.tier, hosts.ordinal) >= (?, ?) AND (hosts.tier, hosts.ordinal) <= (?, ?)
                ORDER BY entries.position
                """, arguments: [first.tier, first.ordinal, last.tier, last.ordinal])
            while let row = try rows.next() {
                let verdict = try Self.verdict(row)
                if let host = verdict.entry.host { byHost[host, default: []].append(verdict) }
            }
            return byHost
        }
        readVerdicts.withLock { $0.merge(read) { _, new in new } }
    }

    fileprivate func hostPage(after last: (tier: Int, ordinal: Int)?, limit: Int) throws(SpoolError) -> [SpooledHost] {
        try access { db in
            let rows: [Row]
            if let last {
                rows = try Row.fetchAll(db, sql: """
                    SELECT host, tier, ordinal, plain, moded FROM hosts WHERE (tier, ordinal) > (?, ?) ORDER BY tier, ordinal LIMIT ?
                    """, arguments: [last.tier, last.ordinal, limit])
            } else {
                rows = try Row.fetchAll(db, sql: "SELECT host, tier, ordinal, plain, moded FROM hosts ORDER BY tier, ordinal LIMIT ?", arguments: [limit])
            }
            return rows.map { SpooledHost(host: $0[0], tier: $0[1], ordinal: $0[2], servesPlain: $0[3], servesModes: $0[4]) }
        }
    }

    /// The entries of each host of `page` (in the page's order; each host's in entry order), without
    /// their findings or verdicts, read in one pass: what registering the page in the store needs.
    public func entries(of page: [SpooledHost]) throws(SpoolError) -> [[AssociatedDomainEntry]] {
        guard !page.isEmpty else { return [] }
        // One query for the whole page (the hosts as one JSON array), not one per host: each
        // query's set-up cost more than reading a host's few rows.
        let hosts: String
        do {
            hosts = String(decoding: try JSONEncoder().encode(page.map(\.host)), as: UTF8.self)
        } catch {
            throw SpoolError("cannot list the hosts of a page: \(error)")
        }
        let byHost = try access { db in
            var byHost: [String: [AssociatedDomainEntry]] = [:]
            let rows = try Row.fetchCursor(db, sql: """
                SELECT host, position, raw, service, domain, wildcard, mode FROM entries
                WHERE host IS NOT NULL AND host IN (SELECT value FROM json_each(?)) ORDER BY position
                """, arguments: [hosts])
            while let row = try rows.next() {
                let host: String = row[0]
                byHost[host, default: []].append(AssociatedDomainEntry(
                    index: row[1], raw: Self.text(row[2]), service: (row[3] as String?).map(Service.init(name:)), domain: row[4],
                    host: host, isWildcard: row[5], mode: (row[6] as String?).flatMap(AlternateMode.init(rawValue:))))
            }
            return byHost
        }
        return page.map { byHost[$0.host] ?? [] }
    }

    /// The entries a host serves, with their current verdicts, in entry order.
    public func verdicts(of host: String, _ selection: DownloadEntries = .all) throws(SpoolError) -> [EntryVerdict] {
        try flushVerdicts()
        return try access { db in try Self.verdicts(db, host: host).filter { selection.includes($0.entry) } }
    }

    /// Judges one download (``AssociationJudge/judgeHost(_:result:verdicts:appIDs:)``) against the
    /// host's `entries` as the in-memory run's source does: the `cdn` sub-record of a CDN download
    /// (``RoutedRun/attachCDNRecord(to:result:)``); with `comparison` (`--route both`), the CDN's
    /// answer judged on a throwaway copy of the plain entries' verdicts, so only `result` decides
    /// them, and compared with it (``RoutedRun/attachComparison(to:origin:cdnDomain:cdnResult:)``).
    /// The judged verdicts (only those of `entries`: a host split over two routes is judged twice,
    /// each of its entries once) are written back in batches (``flushVerdicts()``, before any read
    /// of them). Returns the host's record.
    public func judge(
        _ result: HostFetchResult, tier: Int, entries selection: DownloadEntries = .all, comparison: HostFetchResult? = nil, appIDs: [String]
    ) throws(SpoolError) -> DomainReport {
        // A host split over two routes (`--route cdn`) is judged twice: the second time from the spool.
        let readAhead = readVerdicts.withLock { $0.removeValue(forKey: result.host) }
        let (domain, judged) = try access { db in
            var verdicts = try readAhead ?? Self.verdicts(db, host: result.host)
            // Not judged yet (each entry is judged once): the verdicts the comparison starts from.
            let unjudged = comparison == nil ? [] : verdicts
            let indexes = verdicts.indices.filter { selection.includes(verdicts[$0].entry) }
            let planned = PlannedFetch(host: result.host, route: result.route, tier: tier, entryIndexes: indexes)
            var domain = AssociationJudge.judgeHost(planned, result: result, verdicts: &verdicts, appIDs: appIDs)
            RoutedRun.attachCDNRecord(to: &domain, result: result)
            if let comparison {
                let viaCDN = unjudged.indices.filter { unjudged[$0].entry.mode == nil }
                if !viaCDN.isEmpty {
                    var throwaway = unjudged
                    let cdnPlanned = PlannedFetch(host: result.host, route: .cdn, tier: tier, entryIndexes: viaCDN)
                    let cdnDomain = AssociationJudge.judgeHost(cdnPlanned, result: comparison, verdicts: &throwaway, appIDs: appIDs)
                    RoutedRun.attachComparison(to: &domain, origin: result, cdnDomain: cdnDomain, cdnResult: comparison)
                }
            }
            let judged = indexes.map { index in
                let verdict = verdicts[index]
                return PendingVerdict(position: verdict.entry.index, associated: verdict.associated, code: verdict.code,
                                      findings: Self.encode(verdict.findings), ownFindings: Self.ownFindings(verdict.findings),
                                      entitlementWarnings: Self.entitlementWarnings(verdict.findings))
            }
            return (domain, judged)
        }
        let full = pendingVerdicts.withLock { pending in
            pending.append(contentsOf: judged)
            return pending.count >= Self.verdictBatch
        }
        if full { try flushVerdicts() }
        return domain
    }

    /// Writes the pending verdicts in one transaction.
    public func flushVerdicts() throws(SpoolError) {
        let batch = pendingVerdicts.withLock { pending in
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
        guard !batch.isEmpty else { return }
        try access { db in
            try db.inTransaction {
                let update = try db.cachedStatement(sql: """
                    UPDATE entries SET associated = ?, code = ?, findings = ?, own_findings = ?, entitlement_warnings = ?, judged = 1
                    WHERE position = ?
                    """)
                for verdict in batch {
                    try update.execute(arguments: [
                        verdict.associated, verdict.code, verdict.findings, verdict.ownFindings, verdict.entitlementWarnings, verdict.position,
                    ])
                }
                return .commit
            }
        }
    }

    /// A run stopped by a signal: every entry whose host was not judged fails with `finding`
    /// (`cancelled`), so the verdicts written after it say what was never fetched.
    public func cancelUnjudged(_ finding: Finding) throws(SpoolError) {
        try flushVerdicts()
        try access { db in
            try db.inTransaction {
                let rows = try Row.fetchAll(db, sql: "SELECT position, findings FROM entries WHERE host IS NOT NULL AND judged = 0")
                let update = try db.cachedStatement(sql: """
                    UPDATE entries SET associated = 0, code = ?, findings = ?, judged = 1 WHERE position = ?
                    """)
                for row in rows {
                    let findings = try Self.decodeFindings(row["findings"]) + [finding]
                    try update.execute(arguments: [finding.code, Self.encode(findings), row["position"] as Int64])
                }
                return .commit
            }
        }
    }

    // MARK: - Pass 3: verdicts in entry order

    /// Calls `body` with each selected verdict, in entry order, reading them one at a time.
    public func forEachVerdict(_ selection: VerdictSelection, _ body: (EntryVerdict) throws -> Void) throws {
        try flushVerdicts()
        let condition = switch selection {
        case .all: ""
        case .unfetchable: "WHERE host IS NULL"
        case .fetchableWithOwnFindings: "WHERE host IS NOT NULL AND own_findings > 0"
        }
        do {
            try queue.inDatabase { db in
                let rows = try Row.fetchCursor(db, sql: "SELECT \(Self.verdictColumns) FROM entries \(condition) ORDER BY position")
                while let row = try rows.next() {
                    try body(try Self.verdict(row))
                }
            }
        } catch let error as DatabaseError {
            throw SpoolError("\(path): \(error.message ?? "\(error)")")
        }
    }

    /// The counts over every verdict.
    public func counts() throws(SpoolError) -> EntryCounts {
        try flushVerdicts()
        return try access { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT count(*) AS entries,
                       coalesce(sum(associated = 1), 0) AS associated,
                       coalesce(sum(associated = 0), 0) AS failed,
                       coalesce(sum(associated IS NULL), 0) AS unjudged,
                       coalesce(sum(entitlement_warnings), 0) AS warnings
                FROM entries
                """)
            guard let row else { return EntryCounts() }
            return EntryCounts(entries: row["entries"], associated: row["associated"], failed: row["failed"],
                               unjudged: row["unjudged"], entitlementWarnings: row["warnings"])
        }
    }

    // MARK: - Rows

    /// The entry's own findings (`entitlement-…` codes, any severity): what human output lists under the entry.
    static func ownFindings(_ findings: [Finding]) -> Int {
        findings.filter { $0.code.hasPrefix("entitlement-") }.count
    }

    /// The entry's own warnings, as ``AssociationJudge/summary(verdicts:domains:domainWarnings:runFindings:)`` counts them.
    static func entitlementWarnings(_ findings: [Finding]) -> Int {
        findings.filter { $0.severity == .warning && $0.code.hasPrefix("entitlement-") }.count
    }

    private static func encode(_ findings: [Finding]) -> Data? {
        findings.isEmpty ? nil : Data(spoolBytes(findings))
    }

    /// Findings as the spool keeps them: a compact JSON array of objects with the fields
    /// ``parsedFindings(_:)`` reads, written directly (the `Encodable` path through
    /// ``ReportJSONWriter`` was a third of the time spent judging a host on a spooled run).
    static func spoolBytes(_ findings: [Finding]) -> [UInt8] {
        var bytes: [UInt8] = [0x5B]
        bytes.reserveCapacity(128 * findings.count)
        func field(_ name: StaticString, first: Bool = false) {
            if !first { bytes.append(0x2C) }
            bytes.append(0x22)
            bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            bytes.append(contentsOf: [0x22, 0x3A])
        }
        for (index, finding) in findings.enumerated() {
            if index > 0 { bytes.append(0x2C) }
            bytes.append(0x7B)
            field("code", first: true)
            JSONByteSink.appendQuoted(finding.code, to: &bytes)
            field("severity")
            JSONByteSink.appendQuoted(finding.severity.rawValue, to: &bytes)
            field("message")
            JSONByteSink.appendQuoted(finding.message, to: &bytes)
            if let location = finding.location {
                field("location")
                JSONByteSink.appendQuoted(location, to: &bytes)
            }
            if let line = finding.line {
                field("line")
                bytes.append(contentsOf: String(line).utf8)
            }
            if let column = finding.column {
                field("column")
                bytes.append(contentsOf: String(column).utf8)
            }
            if let fix = finding.fix {
                field("fix")
                JSONByteSink.appendQuoted(fix, to: &bytes)
            }
            bytes.append(0x7D)
        }
        bytes.append(0x5D)
        return bytes
    }

    /// Findings read back from the spool: parsed by the project's ``JSONParser`` (the spool holds
    /// only what ``spoolBytes(_:)`` wrote: an array of ``Finding`` objects), not by a Foundation
    /// `JSONDecoder` per entry; text of any other shape still goes to `JSONDecoder`, as before.
    static func decodeFindings(_ data: Data?) throws -> [Finding] {
        guard let data else { return [] }
        if let findings = parsedFindings(Array(data)) { return findings }
        return try JSONDecoder().decode([Finding].self, from: data)
    }

    /// The findings of an array of ``Finding`` objects (every key optional but `code`, `severity`
    /// and `message`; `null` for an absent one; unknown keys ignored, as `JSONDecoder` does), or
    /// `nil` for anything else.
    static func parsedFindings(_ bytes: [UInt8]) -> [Finding]? {
        guard let document = try? JSONParser.parse(bytes), let items = document.root.arrayValue else { return nil }
        var findings: [Finding] = []
        findings.reserveCapacity(items.count)
        for item in items {
            guard let members = item.objectMembers else { return nil }
            var code: String?, severity: Severity?, message: String?
            var location: String?, line: Int?, column: Int?, fix: String?
            for member in members {
                let value = member.value
                switch member.key {
                case "code": guard let text = value.stringValue else { return nil }; code = text
                case "severity": guard let text = value.stringValue, let level = Severity(rawValue: text) else { return nil }; severity = level
                case "message": guard let text = value.stringValue else { return nil }; message = text
                case "location": guard optionalString(value, &location) else { return nil }
                case "fix": guard optionalString(value, &fix) else { return nil }
                case "line": guard optionalInteger(value, &line) else { return nil }
                case "column": guard optionalInteger(value, &column) else { return nil }
                default: break
                }
            }
            guard let code, let severity, let message else { return nil }
            findings.append(Finding(code: code, severity: severity, message: message, location: location, line: line, column: column, fix: fix))
        }
        return findings
    }

    private static func optionalString(_ value: JSONValue, _ field: inout String?) -> Bool {
        switch value.kind {
        case .null: field = nil
        case .string(let text): field = text
        default: return false
        }
        return true
    }

    private static func optionalInteger(_ value: JSONValue, _ field: inout Int?) -> Bool {
        switch value.kind {
        case .null: field = nil
        case .number(let number):
            guard let integer = Int(number.text) else { return false }
            field = integer
        default: return false
        }
        return true
    }

    /// The columns ``verdict(_:)`` reads, by position.
    private static let verdictColumns = "position, raw, service, domain, host, wildcard, mode, entry_findings, associated, code, findings, line"

    /// The entries of `host` with their verdicts, in entry order, read in place through a cursor.
    private static func verdicts(_ db: Database, host: String) throws -> [EntryVerdict] {
        let statement = try db.cachedStatement(sql: "SELECT \(verdictColumns) FROM entries WHERE host = ? ORDER BY position")
        return try Array(Row.fetchCursor(statement, arguments: [host]).map { try Self.verdict($0) })
    }

    /// An entry as written, kept as bytes: a NUL in it (an entry error of its own) would end a
    /// text value there, and the entry would be shown cut short.
    private static func text(_ value: Data?) -> String? {
        value.map { String(decoding: $0, as: UTF8.self) }
    }

    /// A verdict from a row of ``verdictColumns`` (read by position: a name is looked up by
    /// lowercasing column names).
    private static func verdict(_ row: Row) throws -> EntryVerdict {
        var entry = AssociatedDomainEntry(
            index: row[0],
            raw: Self.text(row[1]),
            service: (row[2] as String?).map(Service.init(name:)),
            domain: row[3],
            host: row[4],
            isWildcard: row[5],
            mode: (row[6] as String?).flatMap(AlternateMode.init(rawValue:)),
            findings: try decodeFindings(row[7])
        )
        entry.line = row[11]
        return EntryVerdict(entry: entry, associated: row[8], code: row[9], findings: try decodeFindings(row[10]))
    }

    /// The page cache limit as SQLite reports it (`PRAGMA cache_size`; negative: KiB).
    func pageCacheSetting() throws(SpoolError) -> Int {
        try access { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? 0 }
    }

    /// Runs `body` on the database, mapping its errors to ``SpoolError``.
    private func access<T>(_ body: (Database) throws -> T) throws(SpoolError) -> T {
        do {
            return try queue.inDatabase(body)
        } catch let error as SpoolError {
            throw error
        } catch let error as DatabaseError {
            throw SpoolError("\(path): \(error.message ?? "\(error)")")
        } catch {
            throw SpoolError("\(path): \(error)")
        }
    }
}
