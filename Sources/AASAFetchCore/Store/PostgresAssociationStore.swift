import Foundation
import PostgresClient

/// The ``AssociationStore`` over PostgreSQL: one database shared by any number of
/// `aasa-fetch refresh --worker` processes on one machine or many (`--store postgres://…`).
///
/// The same tables and semantics as ``SQLiteAssociationStore``: hosts (last result, approved
/// body, validators, failures, next check, lease), entries, history. Times are `timestamptz`,
/// bodies `bytea`. Due hosts are leased with `SELECT … FOR UPDATE SKIP LOCKED` in one `UPDATE`, so
/// concurrent claimers never get the same host and never wait for each other; a lease lapses at
/// its expiry and the host is claimed again by whoever asks next. Every operation is one
/// transaction on one connection, whose libpq calls run on the connection's own queue.
/// The schema is created and upgraded by versioned migrations on connect, under an advisory lock.
public struct PostgresAssociationStore: AssociationStore {
    /// The connection URL with any password hidden, for messages.
    public let location: String
    private let connection: PostgresConnection
    /// Most undelivered notifications kept (``NotificationQueue/capacity``); past it the oldest
    /// are dropped and counted.
    public var notificationCapacity = NotificationQueue.capacity

    /// The migrations this version knows, in order. Add versions; never edit a shipped one.
    static let migrations: [(version: String, statements: [String])] = [
        ("v1", [
            """
            CREATE TABLE hosts (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                host text NOT NULL,
                route text NOT NULL,
                tier integer NOT NULL,
                added_at timestamptz NOT NULL,
                last_code text,
                last_reason text,
                last_http_status integer,
                last_url text,
                last_headers text,
                last_body bytea,
                fetched_at timestamptz,
                approved_body bytea,
                approved_at timestamptz,
                etag text,
                last_modified text,
                consecutive_failures integer NOT NULL DEFAULT 0,
                next_check timestamptz NOT NULL,
                lease_owner text,
                lease_expires timestamptz,
                UNIQUE (host, route)
            )
            """,
            "CREATE INDEX hosts_next_check ON hosts (next_check)",
            """
            CREATE TABLE entries (
                entry text NOT NULL,
                app_id text NOT NULL,
                route text NOT NULL,
                service text NOT NULL,
                host text NOT NULL,
                added_at timestamptz NOT NULL,
                PRIMARY KEY (entry, app_id, route)
            )
            """,
            "CREATE INDEX entries_host ON entries (host, route)",
            """
            CREATE TABLE history (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                host text NOT NULL,
                route text NOT NULL,
                at timestamptz NOT NULL,
                kind text NOT NULL,
                detail text NOT NULL
            )
            """,
            "CREATE INDEX history_host ON history (host, route, id)",
        ]),
        ("v2-retention", retentionMigration),
        // Appended: the queue of undelivered notifications (refresh --notify), and how many were
        // dropped because it was full.
        ("v3-notify", [
            """
            CREATE TABLE notifications (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                event_id text NOT NULL,
                host text NOT NULL,
                route text NOT NULL,
                kind text NOT NULL,
                at timestamptz NOT NULL,
                event text NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                last_error text,
                lease_owner text,
                lease_expires timestamptz
            )
            """,
            "CREATE TABLE notification_drops (id integer PRIMARY KEY CHECK (id = 1), dropped bigint NOT NULL)",
        ]),
        // Appended: the claim reads the due hosts in (tier, due time) order and stops at its
        // limit; the leases held elsewhere are counted from the leased rows alone.
        ("v4-claim-indexes", [
            "CREATE INDEX hosts_due ON hosts (tier, next_check, id) WHERE unneeded_since IS NULL",
            "CREATE INDEX hosts_leased ON hosts (lease_expires) WHERE lease_expires IS NOT NULL",
        ]),
    ]

    /// Migrations that only add indexes: a role that may only read works without them when
    /// they are missing (the next writer adds them).
    static let indexOnlyMigrations: Set<String> = ["v4-claim-indexes"]

    /// The advisory lock migrations run under (`aasafetc` as a big-endian integer).
    static let migrationLock = "7017016556586890339"

    private init(location: String, connection: PostgresConnection) {
        self.location = location
        self.connection = connection
    }

    /// Whether `text` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
    public static func isURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// Connects to `url` (`postgres://user[:password]@host[:port]/database[?param=value…]`, any
    /// libpq URL), creates or upgrades the schema, and returns the store. Without
    /// `connect_timeout` in the URL, connecting gives up after 10 s. A password may also come from
    /// `PGPASSWORD` or `~/.pgpass`, as for `psql`.
    ///
    /// - Throws: ``StoreError``: `store-bad-url`, `store-unreachable`, `store-auth-failed`,
    ///   `store-missing` (no such database), `store-newer-schema`, `store-error`.
    public static func connect(url: String) async throws -> PostgresAssociationStore {
        try await connect(url: url, through: nil)
    }

    /// Connects and brings the schema up to `version` (tests make stores of earlier versions), or
    /// up to date when `nil`.
    static func connect(url: String, through version: String?) async throws -> PostgresAssociationStore {
        let location = redacted(url)
        guard isURL(url) else {
            throw StoreError(code: "store-bad-url", message: "'\(location)' is not a PostgreSQL URL (postgres://user@host:port/database)")
        }
        if let problem = PostgresConnection.parseError(url) {
            throw StoreError(code: "store-bad-url", message: "\(location): \(scrubbed(problem, url: url))")
        }
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(url, defaults: [
                "connect_timeout": "10", "application_name": "aasa-fetch", "options": "-c lock_timeout=30s",
            ])
        } catch {
            throw connectError(scrubbed(error.message, url: url), location: location)
        }
        let store = PostgresAssociationStore(location: location, connection: connection)
        try await store.migrate(through: version)
        return store
    }

    /// Bounds the statement in progress and every later one (see ``AssociationStore/finish(within:)``).
    public func finish(within seconds: TimeInterval) {
        connection.finish(within: .milliseconds(Int((max(0, seconds) * 1000).rounded())))
    }

    /// The server's `clock_timestamp()` (the time now, not the transaction's start).
    public func serverTime() async throws -> Date? {
        // One statement, one round trip: StoreClock takes its midpoint.
        let rows: PostgresRows
        do {
            rows = try await connection.execute("SELECT extract(epoch FROM clock_timestamp())::float8 AS now")
        } catch {
            throw Self.storeError(error, location: location)
        }
        guard let seconds = rows.value(0, "now").flatMap(Double.init) else {
            throw StoreError(code: "store-error", message: "\(location): the server did not say its time")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// Closes the connection (later calls fail with `store-unreachable`).
    public func close() async {
        await connection.close()
    }

    // MARK: - Schema

    private func migrate(through version: String?) async throws {
        let wanted = version.flatMap { last in Self.migrations.firstIndex { $0.version == last } }.map { Array(Self.migrations[...$0]) }
            ?? Self.migrations
        // A schema that is already current needs no lock and no CREATE: a role that may only read
        // (a status page's, a monitor's) can then run show, export and report.
        let current = try await transaction { tx -> Bool in
            let exists = try tx.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").rows.first?.first ?? nil
            guard exists == "t" else { return false }
            let applied = Set(try tx.execute("SELECT version FROM schema_migrations").rows.compactMap { $0.first ?? nil })
            let known = Set(Self.migrations.map(\.version))
            if let unknown = applied.first(where: { !known.contains($0) }) {
                throw StoreError(code: "store-newer-schema",
                                 message: "\(self.location) was written by a newer aasa-fetch (unknown schema migration \(unknown))")
            }
            return wanted.allSatisfy { applied.contains($0.version) }
        }
        if current { return }
        let missingOnlyIndexes = try await transaction { tx -> Bool in
            let exists = try tx.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").rows.first?.first ?? nil
            guard exists == "t" else { return false }
            let applied = Set(try tx.execute("SELECT version FROM schema_migrations").rows.compactMap { $0.first ?? nil })
            return wanted.allSatisfy { applied.contains($0.version) || Self.indexOnlyMigrations.contains($0.version) }
        }
        do {
            try await applyMigrations(wanted)
        } catch where missingOnlyIndexes {
            // A role that may not create indexes (a status page's): the store reads the same
            // without them.
        }
    }

    private func applyMigrations(_ wanted: [(version: String, statements: [String])]) async throws {
        try await transaction { tx in
            try tx.execute("SET LOCAL lock_timeout = '60s'")
            try tx.execute("SELECT pg_advisory_xact_lock($1::bigint)", [Self.migrationLock])
            try tx.execute("""
                CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """)
            let applied = try tx.execute("SELECT version FROM schema_migrations").rows.compactMap { $0.first ?? nil }
            let known = Set(Self.migrations.map(\.version))
            if let unknown = applied.first(where: { !known.contains($0) }) {
                throw StoreError(code: "store-newer-schema",
                                 message: "\(self.location) was written by a newer aasa-fetch (unknown schema migration \(unknown))")
            }
            for migration in wanted where !applied.contains(migration.version) {
                for statement in migration.statements { try tx.execute(statement) }
                try tx.execute("INSERT INTO schema_migrations (version) VALUES ($1)", [migration.version])
            }
        }
    }

    /// The migrations applied to this database, in order (for tests and diagnostics).
    public func appliedMigrations() async throws -> [String] {
        try await transaction { tx in
            try tx.execute("SELECT version FROM schema_migrations ORDER BY applied_at, version").rows.compactMap { $0.first ?? nil }
        }
    }

    // MARK: - AssociationStore

    public func register(hosts: [HostRegistration], needs: [EntryNeed], now: Date, returningStates: Bool) async throws -> [HostKey: HostState] {
        // The last need wins for a key, as with one statement per need.
        var uniqueNeeds: [EntryNeed] = []
        var index: [String: Int] = [:]
        for need in needs {
            let key = "\(need.entry)\u{0}\(need.appID)\u{0}\(need.route.rawValue)"
            if let at = index[key] { uniqueNeeds[at] = need } else {
                index[key] = uniqueNeeds.count
                uniqueNeeds.append(need)
            }
        }
        let time = Self.time(now)
        let needColumns = [
            Self.array(uniqueNeeds.map(\.entry)), Self.array(uniqueNeeds.map(\.appID)), Self.array(uniqueNeeds.map(\.route.rawValue)),
            Self.array(uniqueNeeds.map(\.service.name)), Self.array(uniqueNeeds.map(\.host)),
        ]
        return try await transaction { tx in
            if !hosts.isEmpty {
                try tx.execute("""
                    INSERT INTO hosts (host, route, tier, added_at, next_check)
                    SELECT u.host, u.route, u.tier, to_timestamp($4::float8), to_timestamp($4::float8)
                    FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS u(host, route, tier, ord)
                    ORDER BY u.ord
                    ON CONFLICT (host, route) DO NOTHING
                    """, [Self.array(hosts.map(\.key.host)), Self.array(hosts.map(\.key.route.rawValue)),
                          Self.array(hosts.map { String($0.tier) }), time])
            }
            if needColumns[0] != "{}" {
                try tx.execute("""
                    INSERT INTO entries (entry, app_id, route, service, host, added_at, seen_at)
                    SELECT u.entry, u.app_id, u.route, u.service, u.host, to_timestamp($6::float8), to_timestamp($6::float8)
                    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(entry, app_id, route, service, host)
                    ON CONFLICT (entry, app_id, route) DO UPDATE SET host = excluded.host, service = excluded.service, seen_at = excluded.seen_at
                    """, needColumns + [time])
                // A host registered with a need is needed again.
                try tx.execute("""
                    UPDATE hosts AS h SET unneeded_since = NULL
                    FROM unnest($1::text[], $2::text[]) AS k(host, route)
                    WHERE h.host = k.host AND h.route = k.route AND h.unneeded_since IS NOT NULL
                    """, [needColumns[4], needColumns[2]])
            }
            return returningStates ? try Self.states(tx, of: hosts.map(\.key)) : [:]
        }
    }

    public func claimDue(now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String) async throws -> DueClaim {
        let time = Self.time(now)
        let until = Self.time(now.addingTimeInterval(leaseSeconds))
        return try await transaction { tx in
            // One statement: lock the first due, unleased hosts (skipping rows another claimer
            // holds locked right now) and lease them. Expired leases count as unleased.
            let claimed = try tx.execute("""
                WITH picked AS MATERIALIZED (
                    SELECT id FROM hosts
                    WHERE next_check <= to_timestamp($1::float8)
                      AND (lease_expires IS NULL OR lease_expires <= to_timestamp($1::float8))
                      AND unneeded_since IS NULL
                    ORDER BY tier, next_check, id
                    LIMIT $2::int
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE hosts AS h SET lease_owner = $3, lease_expires = to_timestamp($4::float8)
                FROM picked WHERE h.id = picked.id
                RETURNING h.id, \(Self.columns(prefix: "h.", bodies: true))
                """, [time, String(max(0, limit)), owner, until])
            let hosts = try Self.states(from: claimed)
                .sorted { ($0.state.tier, $0.state.nextCheck, $0.id) < ($1.state.tier, $1.state.nextCheck, $1.id) }
                .map(\.state)
            let others = try tx.execute("""
                SELECT lease_owner, count(*) AS n, extract(epoch FROM min(lease_expires)) AS first_expiry FROM hosts
                WHERE next_check <= to_timestamp($1::float8) AND lease_expires > to_timestamp($1::float8) AND lease_owner <> $2
                  AND unneeded_since IS NULL
                GROUP BY lease_owner ORDER BY lease_owner COLLATE "C"
                """, [time, owner])
            let leasedElsewhere = (0..<others.rows.count).reduce(0) { $0 + (Int(others.value($1, "n") ?? "") ?? 0) }
            let expiry = (0..<others.rows.count).compactMap { Double(others.value($0, "first_expiry") ?? "") }.min()
            return DueClaim(hosts: hosts, leasedElsewhere: leasedElsewhere,
                            otherOwners: (0..<others.rows.count).compactMap { others.value($0, "lease_owner") },
                            nextLeaseExpiry: expiry.map { Date(timeIntervalSince1970: $0) })
        }
    }

    @discardableResult
    public func record(_ update: HostUpdate, owner: String?) async throws -> RecordResult {
        let headers = StoredHeaders.encode(update.result.headers)
        let result = update.result
        var parameters: [String?] = [
            result.code, result.reason, result.httpStatus.map(String.init), result.url, headers,
            result.body.map { Data($0).base64EncodedString() }, Self.time(result.fetchedAt),
            String(update.consecutiveFailures), Self.time(update.nextCheck),
        ]
        var assignments = """
            last_code = $1, last_reason = $2, last_http_status = $3::int, last_url = $4, last_headers = $5,
            last_body = decode($6, 'base64'), fetched_at = to_timestamp($7::float8), consecutive_failures = $8::int,
            next_check = to_timestamp($9::float8)
            """
        func parameter(_ value: String?) -> String {
            parameters.append(value)
            return "$\(parameters.count)"
        }
        if let approved = update.approvedBody {
            assignments += ", approved_body = decode(\(parameter(Data(approved).base64EncodedString())), 'base64'), approved_at = to_timestamp($7::float8)"
        }
        if let validators = update.validators {
            assignments += ", etag = \(parameter(validators.etag)), last_modified = \(parameter(validators.lastModified))"
        }
        var condition = "host = \(parameter(update.key.host)) AND route = \(parameter(update.key.route.rawValue))"
        if let owner {
            // Only while the caller still holds the lease; recording releases it.
            assignments += ", lease_owner = NULL, lease_expires = NULL"
            // And while nobody recorded the host since it was judged (to the millisecond).
            let judged = parameter(update.judgedAgainst.map(Self.time))
            condition += " AND lease_owner = \(parameter(owner)) AND (CASE WHEN \(judged)::float8 IS NULL THEN fetched_at IS NULL"
                + " ELSE abs(extract(epoch FROM fetched_at) - \(judged)::float8) < 0.001 END)"
        } else {
            // A run without a lease: while nobody recorded the host since it was judged, and
            // only over an older download.
            let judged = parameter(update.judgedAgainst.map(Self.time))
            let downloaded = parameter(Self.time(update.downloadedAt ?? result.fetchedAt))
            condition += " AND (CASE WHEN \(judged)::float8 IS NULL THEN fetched_at IS NULL"
                + " ELSE abs(extract(epoch FROM fetched_at) - \(judged)::float8) < 0.001 END)"
                + " AND (fetched_at IS NULL OR fetched_at < to_timestamp(\(downloaded)::float8))"
        }
        let sql = "UPDATE hosts SET \(assignments) WHERE \(condition)"
        let values = parameters
        let events = update.events
        let notifications = update.notifications
        let capacity = notificationCapacity
        let key = update.key
        let version = update.approvedBody.map { (body: $0, digest: SHA256.hex($0)) }
        let versionValidators = update.validators
        let fetchedAt = result.fetchedAt
        let fetchedTime = Self.time(fetchedAt)
        return try await transaction { tx -> RecordResult in
            guard try tx.execute(sql, values).affected > 0 else {
                let current = try tx.execute(
                    "SELECT lease_owner, fetched_at = to_timestamp($3::float8) FROM hosts WHERE host = $1 AND route = $2",
                    [key.host, key.route.rawValue, fetchedTime])
                guard let row = current.rows.first else { return .hostMissing }
                // This very download is the stored one: an earlier call recorded it, and only its
                // answer was lost (a COMMIT whose reply never came, a batch recorded again after
                // an outage), so it is not another process's result.
                if row.count > 1, row[1] == "t" { return .recorded }
                let holder = row.first ?? nil
                if let owner, holder == owner {
                    // Still this caller's lease, but a run recorded the host since it was judged:
                    // its result stands, and the lease goes.
                    try tx.execute("UPDATE hosts SET lease_owner = NULL, lease_expires = NULL WHERE host = $1 AND route = $2 AND lease_owner = $3",
                                   [key.host, key.route.rawValue, owner])
                    return .leaseLost(owner: nil)
                }
                return .leaseLost(owner: holder)
            }
            try Self.insert(events, tx)
            if let version {
                try Self.keepVersion(tx, key: key, body: version.body, digest: version.digest, at: fetchedAt, validators: versionValidators)
            }
            try Self.enqueue(notifications, capacity: capacity, tx)
            return .recorded
        }
    }

    public func release(_ keys: [HostKey], owner: String) async throws {
        guard !keys.isEmpty else { return }
        try await transaction { tx in
            try tx.execute("""
                UPDATE hosts AS h SET lease_owner = NULL, lease_expires = NULL
                FROM unnest($1::text[], $2::text[]) AS k(host, route)
                WHERE h.host = k.host AND h.route = k.route AND h.lease_owner = $3
                """, [Self.array(keys.map(\.host)), Self.array(keys.map(\.route.rawValue)), owner])
        }
    }

    public func needs(for keys: [HostKey]) async throws -> [HostKey: [EntryNeed]] {
        guard !keys.isEmpty else { return [:] }
        return try await transaction { tx in
            let rows = try tx.execute("""
                SELECT e.entry, e.app_id, e.service, e.host, e.route FROM entries AS e
                JOIN unnest($1::text[], $2::text[]) AS k(host, route) ON e.host = k.host AND e.route = k.route
                ORDER BY e.added_at, e.entry COLLATE "C", e.app_id COLLATE "C"
                """, [Self.array(keys.map(\.host)), Self.array(keys.map(\.route.rawValue))])
            var needs: [HostKey: [EntryNeed]] = [:]
            for key in keys { needs[key] = [] }
            for row in 0..<rows.rows.count {
                let need = EntryNeed(
                    entry: rows.value(row, "entry") ?? "", service: Service(name: rows.value(row, "service") ?? ""),
                    host: rows.value(row, "host") ?? "", route: Route(rawValue: rows.value(row, "route") ?? "") ?? .origin,
                    appID: rows.value(row, "app_id") ?? "")
                needs[need.key, default: []].append(need)
            }
            return needs
        }
    }

    public func states(of keys: [HostKey]) async throws -> [HostKey: HostState] {
        try await transaction { tx in try Self.states(tx, of: keys) }
    }

    public func hosts(after cursor: Int64, limit: Int) async throws -> HostPage {
        try await transaction { tx in
            let rows = try tx.execute("SELECT id, \(Self.columns(prefix: "", bodies: false)) FROM hosts WHERE id > $1::bigint ORDER BY id LIMIT $2::int",
                                      [String(cursor), String(max(1, limit))])
            let states = try Self.states(from: rows)
            return HostPage(states: states.map(\.state), cursor: states.last?.id)
        }
    }

    public func history(of key: HostKey, limit: Int) async throws -> [HistoryEvent] {
        try await transaction { tx in
            let rows = try tx.execute("""
                SELECT host, route, extract(epoch FROM at) AS at, kind, detail FROM history
                WHERE host = $1 AND route = $2 ORDER BY id DESC LIMIT $3::int
                """, [key.host, key.route.rawValue, String(max(0, limit))])
            return (0..<rows.rows.count).reversed().compactMap { row -> HistoryEvent? in
                guard let kind = HistoryKind(rawValue: rows.value(row, "kind") ?? "") else { return nil }
                let text = rows.value(row, "detail") ?? "{}"
                let detail = (try? JSONDecoder().decode(HistoryDetail.self, from: Data(text.utf8))) ?? HistoryDetail()
                return HistoryEvent(
                    key: HostKey(host: rows.value(row, "host") ?? "", route: Route(rawValue: rows.value(row, "route") ?? "") ?? .origin),
                    at: Self.date(rows.value(row, "at")) ?? Date(timeIntervalSince1970: 0), kind: kind, detail: detail)
            }
        }
    }

    public func nextDue() async throws -> Date? {
        try await transaction { tx in
            Self.date(try tx.execute("SELECT extract(epoch FROM min(next_check)) AS due FROM hosts WHERE unneeded_since IS NULL").value(0, "due"))
        }
    }

    public func forget(host: String) async throws -> Int {
        try await transaction { tx in
            let removed = try tx.execute("DELETE FROM hosts WHERE host = $1", [host]).affected
            try tx.execute("DELETE FROM entries WHERE host = $1", [host])
            try tx.execute("DELETE FROM history WHERE host = $1", [host])
            try tx.execute("DELETE FROM versions WHERE host = $1", [host])
            return removed
        }
    }

    // MARK: - Tests

    /// Sets the next check of every host, or of one (tests make hosts due this way).
    public func setNextCheck(_ date: Date, host: String? = nil) async throws {
        let time = Self.time(date)
        try await transaction { tx in
            if let host {
                try tx.execute("UPDATE hosts SET next_check = to_timestamp($1::float8) WHERE host = $2", [time, host])
            } else {
                try tx.execute("UPDATE hosts SET next_check = to_timestamp($1::float8)", [time])
            }
        }
    }

    /// Runs one SQL statement as it is, in a transaction (tests simulate other versions and faults).
    public func executeForTesting(_ sql: String) async throws {
        try await transaction { tx in try tx.execute(sql) }
    }

    // MARK: - Rows

    /// The columns of a host state, times as seconds since 1970 and bodies in base64.
    static func columns(prefix p: String, bodies: Bool) -> String {
        """
        \(p)host, \(p)route, \(p)tier, extract(epoch FROM \(p)added_at) AS added_at, \(p)last_code, \(p)last_reason,
        \(p)last_http_status, \(p)last_url, \(p)last_headers, \(bodies ? "encode(\(p)last_body, 'base64')" : "NULL") AS last_body,
        extract(epoch FROM \(p)fetched_at) AS fetched_at, \(bodies ? "encode(\(p)approved_body, 'base64')" : "NULL") AS approved_body,
        octet_length(\(p)approved_body) AS approved_size, extract(epoch FROM \(p)approved_at) AS approved_at, \(p)etag,
        \(p)last_modified, \(p)consecutive_failures, extract(epoch FROM \(p)next_check) AS next_check, \(p)lease_owner,
        extract(epoch FROM \(p)lease_expires) AS lease_expires, extract(epoch FROM \(p)unneeded_since) AS unneeded_since
        """
    }

    private static func states(_ tx: PostgresTransaction, of keys: [HostKey]) throws -> [HostKey: HostState] {
        guard !keys.isEmpty else { return [:] }
        let rows = try tx.execute("""
            SELECT hosts.id, \(columns(prefix: "hosts.", bodies: true)) FROM hosts
            JOIN unnest($1::text[], $2::text[]) AS k(host, route) ON hosts.host = k.host AND hosts.route = k.route
            """, [array(keys.map(\.host)), array(keys.map(\.route.rawValue))])
        var states: [HostKey: HostState] = [:]
        for (_, state) in try Self.states(from: rows) { states[state.key] = state }
        return states
    }

    /// The states of rows that hold the host columns; `store-corrupt` for a route the store does
    /// not know (read as origin, it was shown there and lost to `show HOST` and `export`).
    static func states(from rows: PostgresRows) throws(StoreError) -> [(id: Int64, state: HostState)] {
        try (0..<rows.rows.count).map { row throws(StoreError) in
            func text(_ column: String) -> String? { rows.value(row, column) }
            func int(_ column: String) -> Int? { text(column).flatMap { Int($0) } }
            func bytes(_ column: String) -> [UInt8]? {
                text(column).flatMap { Data(base64Encoded: $0, options: .ignoreUnknownCharacters) }.map { [UInt8]($0) }
            }
            let routeName = text("route") ?? ""
            guard let route = Route(rawValue: routeName) else {
                throw StoreError(code: "store-corrupt", message: "the column route of host \((text("host") ?? "").debugDescription) holds \(routeName.debugDescription) where origin or cdn belongs (a damaged or edited store); restore it from a backup")
            }
            let key = HostKey(host: text("host") ?? "", route: route)
            var last: StoredResult?
            if let code = text("last_code") {
                let headers = StoredHeaders.decode(text("last_headers"))
                last = StoredResult(
                    code: code, reason: text("last_reason") ?? "", httpStatus: int("last_http_status"), url: text("last_url") ?? "",
                    headers: headers, body: bytes("last_body"), fetchedAt: date(text("fetched_at")) ?? Date(timeIntervalSince1970: 0))
            }
            var lease: HostLease?
            if let owner = text("lease_owner"), let expires = date(text("lease_expires")) {
                lease = HostLease(owner: owner, expires: expires)
            }
            var state = HostState(
                key: key, tier: int("tier") ?? 2, lastResult: last, approvedBody: bytes("approved_body"),
                approvedAt: date(text("approved_at")),
                validators: CacheValidators(etag: text("etag"), lastModified: text("last_modified")),
                consecutiveFailures: int("consecutive_failures") ?? 0,
                nextCheck: date(text("next_check")) ?? Date(timeIntervalSince1970: 0),
                lease: lease, addedAt: date(text("added_at")) ?? Date(timeIntervalSince1970: 0),
                unneededSince: date(text("unneeded_since")))
            state.approvedSize = int("approved_size")
            return (Int64(text("id") ?? "") ?? 0, state)
        }
    }

    private static func insert(_ events: [HistoryEvent], _ tx: PostgresTransaction) throws {
        guard !events.isEmpty else { return }
        for event in events {
            try tx.execute("INSERT INTO history (host, route, at, kind, detail) VALUES ($1, $2, to_timestamp($3::float8), $4, $5)",
                           [event.key.host, event.key.route.rawValue, time(event.at), event.kind.rawValue, event.detail.storedJSON])
        }
    }

    /// A time as a parameter: seconds since 1970 (stored to the microsecond).
    static func time(_ date: Date) -> String {
        String(date.timeIntervalSince1970)
    }

    static func date(_ text: String?) -> Date? {
        text.flatMap(Double.init).map { Date(timeIntervalSince1970: $0) }
    }

    /// A text array literal: `{"a","b\"c"}`.
    static func array(_ values: [String]) -> String {
        "{" + values.map { value in
            "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }.joined(separator: ",") + "}"
    }

    // MARK: - Access and errors

    @discardableResult
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) throws -> T) async throws -> T {
        do {
            return try await connection.transaction(body)
        } catch {
            throw Self.storeError(error, location: location)
        }
    }

    /// `postgres://user:secret@host/db?password=x` → `postgres://user:***@host/db?password=***`.
    public static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://") {
            let rest = text[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
               let colon = rest[..<at].firstIndex(of: ":") {
                text.replaceSubrange(rest.index(after: colon)..<at, with: "***")
            }
        }
        if let query = text.firstIndex(of: "?") {
            let parameters = text[text.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                pair.lowercased().hasPrefix("password=") ? "password=***" : String(pair)
            }
            text = String(text[...query]) + parameters.joined(separator: "&")
        }
        return text
    }

    /// libpq's `message` about `url` without the URL's secrets: libpq quotes the URL, or the
    /// piece it could not read ("invalid percent-encoded token: "s3%""), password and all.
    static func scrubbed(_ message: String, url: String) -> String {
        var text = message.replacingOccurrences(of: url, with: redacted(url))
        var secrets: [String] = []
        if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                secrets.append(String(rest[rest.index(after: colon)..<at]))
            }
        }
        if let query = url.firstIndex(of: "?") {
            for pair in url[url.index(after: query)...].split(separator: "&") where pair.lowercased().hasPrefix("password=") {
                secrets.append(String(pair.dropFirst("password=".count)))
            }
        }
        for secret in secrets where !secret.isEmpty && secret != "***" {
            text = text.replacingOccurrences(of: secret, with: "***")
            if let decoded = secret.removingPercentEncoding, !decoded.isEmpty, decoded != secret {
                text = text.replacingOccurrences(of: decoded, with: "***")
            }
        }
        return text
    }

    /// A connection failure (libpq's message) as a ``StoreError``.
    static func connectError(_ message: String, location: String) -> StoreError {
        let lower = message.lowercased()
        if lower.contains("for connection option") || lower.contains("invalid port number") || lower.contains("invalid sslmode")
            || lower.contains("invalid uri") {
            return StoreError(code: "store-bad-url", message: "\(location): \(message)")
        }
        if lower.contains("password authentication failed") || lower.contains("no password supplied")
            || lower.contains("authentication failed") || lower.contains("pg_hba.conf")
            || (lower.contains("role") && lower.contains("does not exist")) {
            return StoreError(code: "store-auth-failed", message: "\(location): the server refused the login: \(message)")
        }
        if lower.contains("database") && lower.contains("does not exist") {
            return StoreError(code: "store-missing", message: "\(location): \(message) (create it first, e.g. createdb)")
        }
        return StoreError(code: "store-unreachable", message: "cannot connect to \(location): \(message)")
    }

    static func storeError(_ error: any Error, location: String) -> StoreError {
        if let error = error as? StoreError { return error }
        guard let error = error as? PostgresError else {
            return StoreError(code: "store-error", message: "\(location): \(error)")
        }
        let state = error.sqlState ?? ""
        switch error.code {
        case "postgres-connect-failure":
            return connectError(error.message, location: location)
        case "postgres-closed":
            return StoreError(code: "store-unreachable", message: "\(location): the connection is closed")
        case "postgres-timeout":
            return StoreError(code: "store-unreachable", message: "\(location): \(error.message)")
        default:
            break
        }
        if state.isEmpty || state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state) {
            return StoreError(code: "store-unreachable", message: "lost the connection to \(location): \(error.message)")
        }
        switch state {
        case "42501":
            return StoreError(code: "store-unreadable", message: "\(location): permission denied: \(error.message)")
        case "53100":
            return StoreError(code: "store-full", message: "\(location): the server's disk is full: \(error.message)")
        case "55P03", "40001", "40P01":
            return StoreError(code: "store-locked", message: "\(location): rows stayed locked by another process: \(error.message)")
        default:
            return StoreError(code: "store-error", message: "\(location): \(error.message) [SQLSTATE \(state)]")
        }
    }
}
