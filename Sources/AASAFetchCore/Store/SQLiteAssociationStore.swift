import Foundation
import GRDB

/// The ``AssociationStore`` over SQLite (GRDB, the system SQLite), in WAL mode, one file
/// (default `cache/aasa-fetch.sqlite`). Several processes may use one file at once: writes wait up
/// to ``busyTimeout`` for each other, and due hosts are leased in an immediate transaction.
/// A process killed at any moment leaves the file consistent (SQLite's journal).
public struct SQLiteAssociationStore: AssociationStore {
    /// The file name inside the cache folder.
    public static let fileName = "aasa-fetch.sqlite"
    /// How long a write waits for another process's write before failing with `store-locked`.
    public static let busyTimeout: TimeInterval = 10
    /// SQLite's page cache of a writing connection, in KiB (`PRAGMA cache_size`; SQLite's default
    /// is 2,000). A run writes each host once, so its pages are seldom read again and the cache
    /// would only fill with a large store (2 MiB of RSS at 20,000 hosts, docs/benchmarks.md); what
    /// a lookup reads again, the B-trees' interior pages, fits in this, and a miss is read from the
    /// kernel's file cache.
    static let pageCacheKiB = 512

    /// The database file.
    public let path: String
    /// Most undelivered notifications kept (``NotificationQueue/capacity``); past it the oldest
    /// are dropped and counted.
    public var notificationCapacity = NotificationQueue.capacity
    private let queue: DatabaseQueue

    public var location: String { path }

    /// Opens (and with `create`, creates) the store at `path` and brings its schema up to date.
    ///
    /// Creating and migrating are serialised across processes by an exclusive `flock` on the
    /// store's folder, taken only when the file is new or its migrations are incomplete, so runs
    /// that create one fresh store at once never race (`table hosts already exists`). With
    /// `readOnly` (commands that only read: `show`, `export`) the file is opened read-only and never
    /// migrated, so a store on read-only media or owned by another user can still be read.
    ///
    /// - Throws: ``StoreError``: `store-missing` (no file and `create` is false), `store-unreadable`,
    ///   `store-corrupt` (not a SQLite database, or damaged), `store-locked`, `store-newer-schema`.
    public init(path: String, create: Bool = true, busyTimeout: TimeInterval = Self.busyTimeout, readOnly: Bool = false) throws {
        self.path = path
        let fileManager = FileManager.default
        let directory = (path as NSString).deletingLastPathComponent
        let existed = fileManager.fileExists(atPath: path)
        // Anything at the path, a link to nowhere included (`fileExists` follows links): what was
        // there before this call is never removed when making a store fails.
        var entry = stat()
        let pathWasTaken = lstat(path, &entry) == 0
        if !existed {
            guard create, !readOnly else {
                // A file where the folder should be is not a missing store: no run could make one.
                if access(path, F_OK) != 0, errno == ENOTDIR {
                    throw StoreError(code: "store-unreadable", message: "cannot use \(path): Not a directory (a file stands where the store's folder should be)")
                }
                throw StoreError(code: "store-missing", message: "no store at \(path) (run aasa-fetch --entitlements … first, or pass --cache DIR)")
            }
            if !directory.isEmpty, let failure = SystemReason.createFolder(directory, parents: true) {
                throw StoreError(code: "store-unreadable", message: "cannot create \(directory): \(SystemReason.text(errno: failure))")
            }
        } else if !fileManager.isReadableFile(atPath: path) {
            throw StoreError(code: "store-unreadable", message: "cannot read \(path): permission denied")
        } else if !create, (try? fileManager.attributesOfItem(atPath: path))?[.size] as? UInt64 == 0 {
            throw Self.emptyStore(path)  // before SQLite writes a header into it
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "aasa-fetch.store"
        if readOnly {
            configuration.readonly = true
            queue = try Self.openReadOnly(path: path, configuration: configuration)
            return
        }
        configuration.journalMode = .wal
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -\(Self.pageCacheKiB)")
        }
        // The usual case, without a lock: the file exists and is up to date.
        if existed {
            do {
                if let ready = try Self.open(path: path, configuration: configuration, migrate: false, create: create) {
                    queue = ready
                    return
                }
            } catch where ["store-newer-schema", "store-unreadable"].contains(error.code) {
                throw error
            } catch {
                // Perhaps a file another process is creating right now (SQLite may then answer
                // "busy" at once, while the journal mode is switched): again, under the lock,
                // which waits for that process to finish.
            }
        }
        // A new file, one being created by another process, or migrations to run: one process at a time.
        let migrated = try Self.withFolderLock(directory.isEmpty ? "." : directory, path: path, timeout: busyTimeout) { () throws(StoreError) in
            // Processes that opened the file without the lock may still hold it a moment: a
            // "busy" here is retried like a write's (``retryingBusy(for:_:)``).
            let deadline = Date().addingTimeInterval(busyTimeout)
            while true {
                do throws(StoreError) {
                    return try Self.open(path: path, configuration: configuration, migrate: true, create: create)
                } catch where error.code == "store-locked" && Date() < deadline {
                    usleep(20_000)
                } catch {
                    // A store this call was making and could not finish (no descriptor for its
                    // journal, a full disk): its empty file, or its header page alone, would read
                    // as "holds no store" to every later command. Removed under the lock, so no
                    // other creator is affected; a store with its tables takes more than a page.
                    if !pathWasTaken, let size = (try? fileManager.attributesOfItem(atPath: path))?[.size] as? UInt64, size <= 4096 {
                        for file in [path, path + "-wal", path + "-shm", path + "-journal"] { try? fileManager.removeItem(atPath: file) }
                    }
                    throw error
                }
            }
        }
        guard let migrated else { throw StoreError(code: "store-error", message: "\(path): the schema could not be brought up to date") }
        queue = migrated
    }

    /// Opens the queue and checks the schema; runs the missing migrations when `migrate` is true,
    /// else returns `nil` when some are missing. Without `create`, a file that holds no store at
    /// all (empty: truncated to nothing, a stray `>`) is `store-missing`, as no file is: a store is
    /// never made anew in it by a command that only reads or refreshes.
    private static func open(path: String, configuration: Configuration, migrate: Bool, create: Bool) throws(StoreError) -> DatabaseQueue? {
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            let migrator = Self.migrator
            let (superseded, complete, empty, foreign) = try queue.read { db in
                (try migrator.hasBeenSuperseded(db), try migrator.hasCompletedMigrations(db), try migrator.appliedIdentifiers(db).isEmpty,
                 try Self.foreignTables(db))
            }
            if superseded {
                throw StoreError(code: "store-newer-schema", message: "\(path) was written by a newer aasa-fetch (unknown schema migrations)")
            }
            if !complete {
                guard migrate else { return nil }
                if empty, !foreign.isEmpty { throw Self.foreignDatabase(path, tables: foreign) }
                if empty, !create { throw Self.emptyStore(path) }
                try migrator.migrate(queue)
            }
            return queue
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// The tables of a database that has no migration of ours: another application's (a store is
    /// made only in a file that holds no table).
    private static func foreignTables(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: """
            SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name != 'grdb_migrations' ORDER BY name LIMIT 5
            """)
    }

    /// The failure for a SQLite file of another application at the store's path: never made into
    /// a store (its tables would have been mixed with ours).
    private static func foreignDatabase(_ path: String, tables: [String]) -> StoreError {
        StoreError(code: "store-corrupt", message: "\(path) is not an aasa-fetch store: it is a SQLite database of something else (tables \(tables.joined(separator: ", "))); move it away or pass --cache DIR")
    }

    /// The failure for a file that holds no store (empty) where one must exist.
    private static func emptyStore(_ path: String) -> StoreError {
        StoreError(code: "store-missing", message: "\(path) holds no store (an empty file; run aasa-fetch --entitlements … first, or pass --cache DIR)")
    }

    /// Opens the file read-only. SQLite cannot open a WAL file read-only when it may not create the
    /// `-shm` file next to it (a read-only folder) and no process has it open; then the file is read
    /// as immutable (nobody can be writing it: a writer would have created that file).
    private static func openReadOnly(path: String, configuration: Configuration) throws(StoreError) -> DatabaseQueue {
        func check(_ queue: DatabaseQueue) throws -> DatabaseQueue {
            let migrator = Self.migrator
            let (superseded, complete) = try queue.read { db in
                (try migrator.hasBeenSuperseded(db), try migrator.hasCompletedMigrations(db))
            }
            if superseded {
                throw StoreError(code: "store-newer-schema", message: "\(path) was written by a newer aasa-fetch (unknown schema migrations)")
            }
            if !complete {
                let (applied, foreign) = try queue.read { db in (try migrator.appliedIdentifiers(db), try Self.foreignTables(db)) }
                if applied.isEmpty { throw foreign.isEmpty ? Self.emptyStore(path) : Self.foreignDatabase(path, tables: foreign) }
                let missing = Set(Self.migrationNames).subtracting(applied)
                if !missing.isSubset(of: Self.indexOnlyMigrations) {
                    throw StoreError(code: "store-error", message: "\(path) was written by an older aasa-fetch and is opened read-only here; run aasa-fetch refresh once to upgrade it")
                }
            }
            return queue
        }
        do {
            return try check(DatabaseQueue(path: path, configuration: configuration))
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CANTOPEN || error.resultCode == .SQLITE_READONLY
                    || (error.resultCode == .SQLITE_IOERR && SystemReason.diskFull(at: path)) {
            // Also on a full disk: SQLite cannot size its shared-memory file there, and reading
            // the store needs none as immutable. Immutable reads ignore journals, so not when one
            // holds something: committed changes still in the WAL would be missing (a stale
            // answer), a rolled-back write's journal would leave a torn file ("malformed").
            for journal in [path + "-wal", path + "-journal"] {
                var status = stat()
                if stat(journal, &status) == 0, status.st_size > 0 {
                    throw StoreError(code: "store-unreadable", message: "\(path) cannot be read here: \(journal) holds a write not yet in the file (a writer stopped), which a command that only reads may not recover; run a command that writes the store (aasa-fetch refresh) once to recover it")
                }
            }
            do {
                let absolute = URL(fileURLWithPath: path).standardizedFileURL
                var components = URLComponents()
                components.scheme = "file"
                components.path = absolute.path
                components.queryItems = [URLQueryItem(name: "immutable", value: "1")]
                return try check(DatabaseQueue(path: components.string ?? path, configuration: configuration))
            } catch {
                throw Self.storeError(error, path: path)
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Runs `body` holding an exclusive `flock` on `folder`, waiting at most `timeout` seconds for
    /// another process's lock (then `store-locked`).
    private static func withFolderLock<T>(_ folder: String, path: String, timeout: TimeInterval, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let fd = Glibc.open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw StoreError(code: "store-unreadable", message: "cannot open \(folder): \(SystemReason.text(errno: errno))")
        }
        defer { close(fd) }
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, timeout) * 1000))
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                break  // no flock here (some network file systems): SQLite's own locks still apply
            }
            guard ContinuousClock.now < deadline else {
                throw StoreError(code: "store-locked", message: "\(path) is being created or upgraded by another process for more than \(Int(timeout)) s")
            }
            usleep(10_000)
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    // MARK: - Schema

    /// The schema, from its first version on. Add migrations; never edit a shipped one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE hosts (
                    id INTEGER PRIMARY KEY,
                    host TEXT NOT NULL,
                    route TEXT NOT NULL,
                    tier INTEGER NOT NULL,
                    added_at REAL NOT NULL,
                    last_code TEXT,
                    last_reason TEXT,
                    last_http_status INTEGER,
                    last_url TEXT,
                    last_headers TEXT,
                    last_body BLOB,
                    fetched_at REAL,
                    approved_body BLOB,
                    approved_at REAL,
                    etag TEXT,
                    last_modified TEXT,
                    consecutive_failures INTEGER NOT NULL DEFAULT 0,
                    next_check REAL NOT NULL,
                    lease_owner TEXT,
                    lease_expires REAL,
                    UNIQUE (host, route)
                );
                CREATE INDEX hosts_next_check ON hosts (next_check);
                CREATE TABLE entries (
                    entry TEXT NOT NULL,
                    app_id TEXT NOT NULL,
                    route TEXT NOT NULL,
                    service TEXT NOT NULL,
                    host TEXT NOT NULL,
                    added_at REAL NOT NULL,
                    PRIMARY KEY (entry, app_id, route)
                );
                CREATE INDEX entries_host ON entries (host, route);
                CREATE TABLE history (
                    id INTEGER PRIMARY KEY,
                    host TEXT NOT NULL,
                    route TEXT NOT NULL,
                    at REAL NOT NULL,
                    kind TEXT NOT NULL,
                    detail TEXT NOT NULL
                );
                CREATE INDEX history_host ON history (host, route, id);
                """)
        }
        migrator.registerMigration("v2-retention", migrate: migrateRetention)
        // Appended: the queue of undelivered notifications (refresh --notify), and how many were
        // dropped because it was full.
        migrator.registerMigration("v3-notify") { db in
            try db.execute(sql: """
                CREATE TABLE notifications (
                    id INTEGER PRIMARY KEY,
                    event_id TEXT NOT NULL,
                    host TEXT NOT NULL,
                    route TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    at REAL NOT NULL,
                    event TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT,
                    lease_owner TEXT,
                    lease_expires REAL
                );
                CREATE TABLE notification_drops (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    dropped INTEGER NOT NULL
                );
                """)
        }
        // Appended: the claim walks the due hosts of each tier in due order, and the leases held
        // elsewhere are counted from the leased rows alone (each batch read and sorted every due
        // host: quadratic in the hosts due).
        migrator.registerMigration("v4-claim-indexes") { db in
            try db.execute(sql: """
                CREATE INDEX hosts_due ON hosts (tier, next_check) WHERE unneeded_since IS NULL;
                CREATE INDEX hosts_leased ON hosts (lease_expires) WHERE lease_expires IS NOT NULL;
                """)
        }
        return migrator
    }

    /// Migrations that only add indexes: a store without them is read as it is by a command that
    /// opens it read-only (`show`, `report`, …); the next command that writes adds them.
    static let indexOnlyMigrations: Set<String> = ["v4-claim-indexes"]

    /// The migration identifiers this version knows, in order.
    static var migrationNames: [String] { migrator.migrations }

    /// The migrations applied to this file, in order (for tests and diagnostics).
    public func appliedMigrations() async throws -> [String] {
        try await read { db in try Self.migrator.appliedMigrations(db) }
    }

    /// Runs `PRAGMA integrity_check`: `["ok"]` when the file is sound.
    public func integrityCheck() async throws -> [String] {
        try await read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }

    /// The connection's page cache limit as SQLite reports it (`PRAGMA cache_size`; negative: KiB).
    func pageCacheSetting() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? 0 }
    }

    // MARK: - AssociationStore

    public func register(hosts: [HostRegistration], needs: [EntryNeed], now: Date, returningStates: Bool) async throws -> [HostKey: HostState] {
        let time = now.timeIntervalSince1970
        return try await immediateWrite { db in
            let insertHost = try db.cachedStatement(sql: """
                INSERT INTO hosts (host, route, tier, added_at, next_check) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (host, route) DO NOTHING
                """)
            // A host added here is needed already (unneeded_since starts NULL): its needs skip the revive.
            var needed: Set<HostKey> = []
            for registration in hosts {
                try insertHost.execute(arguments: [registration.key.host, registration.key.route.rawValue, registration.tier, time, time])
                if db.changesCount > 0 { needed.insert(registration.key) }
            }
            let insertNeed = try db.cachedStatement(sql: """
                INSERT INTO entries (entry, app_id, route, service, host, added_at, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (entry, app_id, route) DO UPDATE SET host = excluded.host, service = excluded.service, seen_at = excluded.seen_at
                """)
            let revive = try db.cachedStatement(sql: """
                UPDATE hosts SET unneeded_since = NULL WHERE host = ? AND route = ? AND unneeded_since IS NOT NULL
                """)
            for need in needs {
                try insertNeed.execute(arguments: [need.entry, need.appID, need.route.rawValue, need.service.name, need.host, time, time])
                if needed.insert(need.key).inserted { try revive.execute(arguments: [need.host, need.route.rawValue]) }
            }
            return returningStates ? try Self.states(db, of: hosts.map(\.key)) : [:]
        }
    }

    public func claimDue(now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String) async throws -> DueClaim {
        let time = now.timeIntervalSince1970
        return try await immediateWrite { db in
            // Tier by tier (`hosts_due`), each in due order: a batch reads what it leases, not
            // every due host (sorting them all for each batch was quadratic in the hosts due).
            let due = try db.cachedStatement(sql: """
                SELECT \(Self.stateColumns) FROM hosts
                WHERE tier = ? AND next_check <= ? AND (lease_expires IS NULL OR lease_expires <= ?) AND unneeded_since IS NULL
                ORDER BY next_check, id LIMIT ?
                """)
            let nextTier = try db.cachedStatement(sql: "SELECT tier FROM hosts WHERE tier > ? AND unneeded_since IS NULL ORDER BY tier LIMIT 1")
            var rows: [Row] = []
            var tier = try Int.fetchOne(db, sql: "SELECT tier FROM hosts WHERE unneeded_since IS NULL ORDER BY tier LIMIT 1")
            while let current = tier, rows.count < limit {
                rows += try Row.fetchAll(due, arguments: [current, time, time, limit - rows.count])
                tier = try Int.fetchOne(nextTier, arguments: [current])
            }
            let claimed = try rows.map { try Self.state(from: $0) }
            let lease = try db.cachedStatement(sql: "UPDATE hosts SET lease_owner = ?, lease_expires = ? WHERE host = ? AND route = ?")
            for state in claimed {
                try lease.execute(arguments: [owner, time + leaseSeconds, state.key.host, state.key.route.rawValue])
            }
            let others = try Row.fetchAll(db, sql: """
                SELECT lease_owner, COUNT(*) AS n FROM hosts
                WHERE next_check <= ? AND lease_expires > ? AND lease_owner <> ? AND unneeded_since IS NULL
                GROUP BY lease_owner ORDER BY lease_owner
                """, arguments: [time, time, owner])
            let leasedElsewhere = try others.reduce(0) { $0 + (try $1.value("n") as Int? ?? 0) }
            let expiry = try Double.fetchOne(db, sql: """
                SELECT MIN(lease_expires) FROM hosts WHERE next_check <= ? AND lease_expires > ? AND lease_owner <> ? AND unneeded_since IS NULL
                """, arguments: [time, time, owner])
            let hosts = claimed.map { state -> HostState in
                var leased = state
                leased.lease = HostLease(owner: owner, expires: Date(timeIntervalSince1970: time + leaseSeconds))
                return leased
            }
            return DueClaim(hosts: hosts, leasedElsewhere: leasedElsewhere, otherOwners: try others.compactMap { try $0.value("lease_owner") },
                            nextLeaseExpiry: expiry.map { Date(timeIntervalSince1970: $0) })
        }
    }

    @discardableResult
    public func record(_ update: HostUpdate, owner: String?) async throws -> RecordResult {
        let capacity = notificationCapacity
        return try await immediateWrite { db in
            let result = try Self.recordRow(db, update, owner: owner)
            if !update.notifications.isEmpty { try Self.boundNotifications(db, capacity: capacity) }
            return result
        }
    }

    /// Records many downloads in one write transaction (one lock, one commit), each as ``record(_:owner:)``.
    public func recordAll(_ updates: [HostUpdate], owner: String?) async throws -> [RecordResult] {
        guard !updates.isEmpty else { return [] }
        let capacity = notificationCapacity
        return try await immediateWrite { db in
            let results = try updates.map { try Self.recordRow(db, $0, owner: owner) }
            if updates.contains(where: { !$0.notifications.isEmpty }) { try Self.boundNotifications(db, capacity: capacity) }
            return results
        }
    }

    /// The `UPDATE` of ``recordRow(_:_:owner:)``, one per combination of its optional parts
    /// (an approved file, validators, a lease to check), indexed by ``recordVariant(approved:validators:leased:)``:
    /// built once, so each is compiled once per connection (`cachedStatement`), not once per host.
    private static let recordSQL: [String] = (0..<8).map { variant in
        var assignments = """
            last_code = ?, last_reason = ?, last_http_status = ?, last_url = ?, last_headers = ?, last_body = ?,
            fetched_at = ?, consecutive_failures = ?, next_check = ?
            """
        if variant & 1 != 0 { assignments += ", approved_body = ?, approved_at = ?" }
        if variant & 2 != 0 { assignments += ", etag = ?, last_modified = ?" }
        var condition = "host = ? AND route = ?"
        if variant & 4 != 0 {
            // Only while the caller still holds the lease; recording releases it.
            assignments += ", lease_owner = NULL, lease_expires = NULL"
            // And while nobody recorded the host since it was judged (to the millisecond: a
            // fetch time read back through `Date` may differ in its last bits).
            condition += " AND lease_owner = ? AND (CASE WHEN ? IS NULL THEN fetched_at IS NULL ELSE abs(fetched_at - ?) < 0.001 END)"
        } else {
            // A run without a lease: while nobody recorded the host since it was judged, and
            // only over an older download (a refresh may have recorded a newer one before this
            // run read the state it judged against).
            condition += " AND (CASE WHEN ? IS NULL THEN fetched_at IS NULL ELSE abs(fetched_at - ?) < 0.001 END)"
                + " AND (fetched_at IS NULL OR fetched_at < ?)"
        }
        return "UPDATE hosts SET \(assignments) WHERE \(condition)"
    }

    private static func recordVariant(approved: Bool, validators: Bool, leased: Bool) -> Int {
        (approved ? 1 : 0) | (validators ? 2 : 0) | (leased ? 4 : 0)
    }

    private static func recordRow(_ db: Database, _ update: HostUpdate, owner: String?) throws -> RecordResult {
        let headers = StoredHeaders.encode(update.result.headers)
        let result = update.result
        var arguments: StatementArguments = [
            result.code, result.reason, result.httpStatus, result.url, headers, result.body.map { Data($0) },
            result.fetchedAt.timeIntervalSince1970, update.consecutiveFailures, update.nextCheck.timeIntervalSince1970,
        ]
        if let approved = update.approvedBody {
            arguments += [Data(approved), result.fetchedAt.timeIntervalSince1970]
        }
        if let validators = update.validators {
            arguments += [validators.etag, validators.lastModified]
        }
        arguments += [update.key.host, update.key.route.rawValue]
        let judged = update.judgedAgainst?.timeIntervalSince1970
        if let owner {
            arguments += [owner, judged, judged]
        } else {
            arguments += [judged, judged, (update.downloadedAt ?? result.fetchedAt).timeIntervalSince1970]
        }
        let variant = recordVariant(approved: update.approvedBody != nil, validators: update.validators != nil, leased: owner != nil)
        try db.cachedStatement(sql: recordSQL[variant]).execute(arguments: arguments)
        guard db.changesCount > 0 else {
            let current = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT lease_owner, fetched_at = ? AS same FROM hosts WHERE host = ? AND route = ?"),
                arguments: [result.fetchedAt.timeIntervalSince1970, update.key.host, update.key.route.rawValue])
            guard let current else { return .hostMissing }  // forgotten meanwhile
            // This very download is the stored one: an earlier call recorded it (see RecordResult.recorded).
            let same: Bool? = current["same"]
            if same == true { return .recorded }
            let holder: String? = try current.value("lease_owner")
            if let owner, holder == owner {
                // Still this caller's lease, but a run recorded the host since it was judged: its
                // result stands, and the lease goes.
                try db.execute(sql: "UPDATE hosts SET lease_owner = NULL, lease_expires = NULL WHERE host = ? AND route = ? AND lease_owner = ?",
                               arguments: [update.key.host, update.key.route.rawValue, owner])
                return .leaseLost(owner: nil)
            }
            return .leaseLost(owner: holder)
        }
        try Self.insert(update.events, db)
        if let approved = update.approvedBody {
            try Self.keepVersion(db, key: update.key, body: approved, at: result.fetchedAt, validators: update.validators)
        }
        try Self.enqueue(update.notifications, db)
        return .recorded
    }

    public func release(_ keys: [HostKey], owner: String) async throws {
        guard !keys.isEmpty else { return }
        try await immediateWrite { db in
            let statement = try db.cachedStatement(sql: """
                UPDATE hosts SET lease_owner = NULL, lease_expires = NULL WHERE host = ? AND route = ? AND lease_owner = ?
                """)
            for key in keys {
                try statement.execute(arguments: [key.host, key.route.rawValue, owner])
            }
        }
    }

    public func needs(for keys: [HostKey]) async throws -> [HostKey: [EntryNeed]] {
        try await read { db in
            let statement = try db.cachedStatement(sql: """
                SELECT entry, app_id, service, host, route FROM entries WHERE host = ? AND route = ? ORDER BY added_at, entry, app_id
                """)
            var needs: [HostKey: [EntryNeed]] = [:]
            for key in keys {
                // By position (entry, app_id, service, host, route), read in place: a name would be
                // looked up by lowercasing every column's name of a copied row.
                needs[key] = try Array(Row.fetchCursor(statement, arguments: [key.host, key.route.rawValue]).map { row in
                    EntryNeed(entry: try row.value(0), service: Service(name: try row.value(2)), host: try row.value(3),
                              route: Route(rawValue: try row.value(4)) ?? .origin, appID: try row.value(1))
                })
            }
            return needs
        }
    }

    public func states(of keys: [HostKey]) async throws -> [HostKey: HostState] {
        try await read { db in try Self.states(db, of: keys) }
    }

    public func hosts(after cursor: Int64, limit: Int) async throws -> HostPage {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT \(Self.summaryColumns), id FROM hosts WHERE id > ? ORDER BY id LIMIT ?",
                                        arguments: [cursor, max(1, limit)])
            return HostPage(states: try rows.map { try Self.state(from: $0) },
                            cursor: try rows.last.map { try $0.value(Self.columnAfterState) as Int64 })
        }
    }

    public func history(of key: HostKey, limit: Int) async throws -> [HistoryEvent] {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT host, route, at, kind, detail FROM history WHERE host = ? AND route = ? ORDER BY id DESC LIMIT ?
                """, arguments: [key.host, key.route.rawValue, limit])
            return try rows.reversed().compactMap { row -> HistoryEvent? in
                guard let kind = HistoryKind(rawValue: try row.value("kind")) else { return nil }
                let text: String = try row.value("detail")
                let detail = (try? JSONDecoder().decode(HistoryDetail.self, from: Data(text.utf8))) ?? HistoryDetail()
                return HistoryEvent(key: HostKey(host: try row.value("host"), route: Route(rawValue: try row.value("route")) ?? .origin),
                                    at: Date(timeIntervalSince1970: try row.value("at")), kind: kind, detail: detail)
            }
        }
    }

    public func nextDue() async throws -> Date? {
        try await read { db in
            try Double.fetchOne(db, sql: "SELECT MIN(next_check) FROM hosts WHERE unneeded_since IS NULL").map { Date(timeIntervalSince1970: $0) }
        }
    }

    public func forget(host: String) async throws -> Int {
        try await immediateWrite { db in
            try db.execute(sql: "DELETE FROM hosts WHERE host = ?", arguments: [host])
            let removed = db.changesCount
            try db.execute(sql: "DELETE FROM entries WHERE host = ?", arguments: [host])
            try db.execute(sql: "DELETE FROM history WHERE host = ?", arguments: [host])
            try db.execute(sql: "DELETE FROM versions WHERE host = ?", arguments: [host])
            return removed
        }
    }

    // MARK: - Benchmarks and tests

    /// Adds `count` synthetic hosts (`h<N>.bench.example`) due at `nextCheck`, in one transaction.
    /// For benchmarks of due-host selection; returns the number of hosts then in the store.
    @discardableResult
    public func insertSyntheticHosts(count: Int, nextCheck: Date, now: Date) async throws -> Int {
        try await immediateWrite { db in
            let statement = try db.makeStatement(sql: """
                INSERT INTO hosts (host, route, tier, added_at, last_code, fetched_at, consecutive_failures, next_check)
                VALUES (?, 'origin', 0, ?, 'ok', ?, 0, ?) ON CONFLICT (host, route) DO NOTHING
                """)
            let time = now.timeIntervalSince1970
            let due = nextCheck.timeIntervalSince1970
            for index in 0..<count {
                try statement.execute(arguments: ["h\(index).bench.example", time, time, due])
            }
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM hosts") ?? 0
        }
    }

    /// Sets every host's next check (tests make hosts due this way).
    public func setNextCheck(_ date: Date, host: String? = nil) async throws {
        try await immediateWrite { db in
            if let host {
                try db.execute(sql: "UPDATE hosts SET next_check = ? WHERE host = ?", arguments: [date.timeIntervalSince1970, host])
            } else {
                try db.execute(sql: "UPDATE hosts SET next_check = ?", arguments: [date.timeIntervalSince1970])
            }
        }
    }

    /// Runs one SQL statement as it is, in a write transaction (tests simulate other versions and faults).
    public func executeForTesting(_ sql: String) async throws {
        try await immediateWrite { db in try db.execute(sql: sql) }
    }

    /// The query plan SQLite uses to find due hosts (tests check it uses the `next_check` index).
    public func dueQueryPlan() async throws -> [String] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                EXPLAIN QUERY PLAN SELECT \(Self.stateColumns) FROM hosts
                WHERE next_check <= 0 AND (lease_expires IS NULL OR lease_expires <= 0) AND unneeded_since IS NULL ORDER BY tier, id LIMIT 10
                """).map { try $0.value("detail") as String? ?? "" }
        }
    }

    // MARK: - Rows

    /// The columns of ``state(from:)`` without the bodies (in the order of ``stateColumns``).
    private static let summaryColumns = """
        host, route, tier, added_at, last_code, last_reason, last_http_status, last_url, last_headers, NULL AS last_body,
        fetched_at, NULL AS approved_body, length(approved_body) AS approved_size, approved_at, etag, last_modified,
        consecutive_failures, next_check, lease_owner, lease_expires, unneeded_since
        """

    /// The columns of ``state(from:)``, in the order of ``Column``.
    static let stateColumns = """
        host, route, tier, added_at, last_code, last_reason, last_http_status, last_url, last_headers, last_body,
        fetched_at, approved_body, length(approved_body) AS approved_size, approved_at, etag, last_modified,
        consecutive_failures, next_check, lease_owner, lease_expires, unneeded_since
        """

    private static func states(_ db: Database, of keys: [HostKey]) throws -> [HostKey: HostState] {
        let statement = try db.cachedStatement(sql: "SELECT \(stateColumns) FROM hosts WHERE host = ? AND route = ?")
        var states: [HostKey: HostState] = [:]
        for key in keys {
            // Read in place through a cursor, alive while the row is read (`fetchOne` would copy
            // the row's 21 values first).
            let cursor = try Row.fetchCursor(statement, arguments: [key.host, key.route.rawValue])
            try withExtendedLifetime(cursor) {
                if let row = try cursor.next() { states[key] = try state(from: row) }
            }
        }
        return states
    }

    /// The positions of ``stateColumns`` (and ``summaryColumns``, in the same order) in a row:
    /// ``state(from:)`` reads by position, since a name is looked up by lowercasing every column
    /// name of a fetched row, 21 times per host.
    private enum Column {
        static let host = 0, route = 1, tier = 2, addedAt = 3, lastCode = 4, lastReason = 5, lastHTTPStatus = 6, lastURL = 7
        static let lastHeaders = 8, lastBody = 9, fetchedAt = 10, approvedBody = 11, approvedSize = 12, approvedAt = 13
        static let etag = 14, lastModified = 15, consecutiveFailures = 16, nextCheck = 17, leaseOwner = 18, leaseExpires = 19
        static let unneededSince = 20
        /// The number of columns: a column selected after them is at this position.
        static let count = 21
    }

    /// The position of a column selected after ``stateColumns``.
    static let columnAfterState = Column.count

    /// A host's state from a row that starts with ``stateColumns`` or ``summaryColumns``.
    static func state(from row: Row) throws(StoredValueMismatch) -> HostState {
        let routeName: String = try row.value(Column.route)
        guard let route = Route(rawValue: routeName) else {
            // Read as origin, it was shown there and lost to `show HOST` and `export`.
            throw StoredValueMismatch(text: "the column route holds \(routeName.debugDescription) where origin or cdn belongs (a damaged or edited file); restore the store from a backup or move it away")
        }
        let key = HostKey(host: try row.value(Column.host), route: route)
        var last: StoredResult?
        if let code = try row.value(Column.lastCode) as String? {
            let headers = StoredHeaders.decode(try row.value(Column.lastHeaders) as String?)
            last = StoredResult(
                code: code, reason: try row.value(Column.lastReason) ?? "", httpStatus: try row.value(Column.lastHTTPStatus), url: try row.value(Column.lastURL) ?? "",
                headers: headers, body: (try row.value(Column.lastBody) as Data?).map { [UInt8]($0) },
                fetchedAt: Date(timeIntervalSince1970: try row.value(Column.fetchedAt) ?? 0)
            )
        }
        var lease: HostLease?
        if let owner = try row.value(Column.leaseOwner) as String?, let expires = try row.value(Column.leaseExpires) as Double? {
            lease = HostLease(owner: owner, expires: Date(timeIntervalSince1970: expires))
        }
        var state = HostState(
            key: key, tier: try row.value(Column.tier), lastResult: last,
            approvedBody: (try row.value(Column.approvedBody) as Data?).map { [UInt8]($0) },
            approvedAt: (try row.value(Column.approvedAt) as Double?).map { Date(timeIntervalSince1970: $0) },
            validators: CacheValidators(etag: try row.value(Column.etag), lastModified: try row.value(Column.lastModified)),
            consecutiveFailures: try row.value(Column.consecutiveFailures),
            nextCheck: Date(timeIntervalSince1970: try row.value(Column.nextCheck)),
            lease: lease,
            addedAt: Date(timeIntervalSince1970: try row.value(Column.addedAt)),
            unneededSince: (try row.value(Column.unneededSince) as Double?).map { Date(timeIntervalSince1970: $0) }
        )
        state.approvedSize = try row.value(Column.approvedSize)
        return state
    }

    private static func insert(_ events: [HistoryEvent], _ db: Database) throws {
        guard !events.isEmpty else { return }
        let statement = try db.cachedStatement(sql: "INSERT INTO history (host, route, at, kind, detail) VALUES (?, ?, ?, ?, ?)")
        for event in events {
            try statement.execute(arguments: [event.key.host, event.key.route.rawValue, event.at.timeIntervalSince1970,
                                              event.kind.rawValue, event.detail.storedJSON])
        }
    }

    // MARK: - Access and errors

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.read(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// A write in an immediate transaction: the write lock is taken first (waiting up to the busy
    /// timeout), so reads that decide a write (due hosts) cannot race another process.
    ///
    /// SQLite answers "busy" without waiting in some cases in WAL mode (a snapshot that another
    /// process's commit made stale, a file another process is still setting up); the remedy it
    /// documents is to roll back and run the transaction again, which this does for up to the busy
    /// timeout (``retryingBusy(for:_:)``).
    func immediateWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.writeWithoutTransaction { db in
                try Self.retryingBusy(for: Self.busyTimeout) {
                    var value: T?
                    try db.inTransaction(.immediate) {
                        value = try body(db)
                        return .commit
                    }
                    guard let value else { throw StoreError(code: "store-error", message: "a transaction returned nothing") }
                    return value
                }
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Runs `body` again while it fails with `SQLITE_BUSY`, pausing 5 ms, doubling up to 200 ms,
    /// for at most `seconds` in all; then its last error stands.
    static func retryingBusy<T>(for seconds: TimeInterval, _ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(seconds)
        var pause: UInt32 = 5_000
        while true {
            do {
                return try body()
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && Date() < deadline {
                usleep(pause)
                pause = min(pause * 2, 200_000)
            }
        }
    }

    /// The file-size limit (`RLIMIT_FSIZE`, `ulimit -f`) in bytes when the store's database, WAL
    /// or journal has grown to within a page (64 KiB) of it; `nil` when there is no limit or no
    /// file is near it.
    static func fileSizeLimitReached(path: String) -> UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        let cap = UInt64(limit.rlim_cur)
        for file in [path, path + "-wal", path + "-journal"] {
            guard let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? UInt64 else { continue }
            if size + (64 << 10) >= cap { return cap }
        }
        return nil
    }

    static func storeError(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? StoredValueMismatch { return StoreError(code: "store-corrupt", message: "\(path): \(error.text)") }
        guard let error = error as? DatabaseError else {
            return StoreError(code: "store-error", message: "\(path): \(error)")
        }
        let detail = error.message ?? "\(error)"
        // A write past `ulimit -f` fails with EFBIG (SQLite's I/O error) or comes up short
        // (SQLite's "full"): the limit, not the disk or the file, is what to change.
        if error.resultCode == .SQLITE_IOERR || error.resultCode == .SQLITE_FULL, let limit = fileSizeLimitReached(path: path) {
            return StoreError(code: "store-full", message: "\(path): a write passed the file-size limit of \(limit) bytes (ulimit -f)")
        }
        if error.resultCode == .SQLITE_CANTOPEN || error.resultCode == .SQLITE_IOERR, SystemReason.descriptorsExhaustedNow {
            return StoreError(code: "descriptors-exhausted", message: "cannot use \(path): this process ran out of file descriptors (\(detail)); raise the limit (ulimit -n)")
        }
        if error.resultCode == .SQLITE_IOERR || error.resultCode == .SQLITE_CANTOPEN, SystemReason.diskFull(at: path) {
            return StoreError(code: "store-full", message: "\(path): the disk is full (\(detail))")
        }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT, .SQLITE_FORMAT:
            return StoreError(code: "store-corrupt", message: "\(path) is not a usable aasa-fetch store (\(detail)); move it away or pass --cache DIR")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreError(code: "store-locked", message: "\(path) stayed locked by another process for more than \(Int(busyTimeout)) s (\(detail))")
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH, .SQLITE_IOERR:
            return StoreError(code: "store-unreadable", message: "cannot use \(path): \(detail)")
        case .SQLITE_FULL:
            return StoreError(code: "store-full", message: "\(path): the disk is full")
        default:
            return StoreError(code: "store-error", message: "\(path): \(detail)")
        }
    }
}
