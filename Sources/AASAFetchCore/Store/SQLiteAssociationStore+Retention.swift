import Foundation
import GRDB

extension SQLiteAssociationStore {
    /// `v2-retention`: when each need was last registered (to replace an app's set), since when a
    /// host is unneeded, an index to prune history by age, and the kept approved files (seeded
    /// with each host's current approved file).
    static func migrateRetention(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE hosts ADD COLUMN unneeded_since REAL;
            CREATE INDEX hosts_unneeded ON hosts (unneeded_since) WHERE unneeded_since IS NOT NULL;
            ALTER TABLE entries ADD COLUMN seen_at REAL;
            UPDATE entries SET seen_at = added_at;
            CREATE INDEX entries_app ON entries (app_id, route, seen_at);
            CREATE INDEX history_at ON history (at);
            CREATE TABLE versions (
                id INTEGER PRIMARY KEY,
                host TEXT NOT NULL,
                route TEXT NOT NULL,
                fetched_at REAL NOT NULL,
                approved_at REAL NOT NULL,
                size INTEGER NOT NULL,
                digest TEXT NOT NULL,
                etag TEXT,
                last_modified TEXT,
                body BLOB NOT NULL
            );
            CREATE INDEX versions_host ON versions (host, route, id);
            """)
        let insert = try db.makeStatement(sql: """
            INSERT INTO versions (host, route, fetched_at, approved_at, size, digest, etag, last_modified, body)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let rows = try Row.fetchCursor(db, sql: """
            SELECT host, route, approved_body, COALESCE(approved_at, added_at) AS at, etag, last_modified
            FROM hosts WHERE approved_body IS NOT NULL ORDER BY id
            """)
        var seeds: [StatementArguments] = []
        while let row = try rows.next() {
            let body = [UInt8]((try row.value("approved_body") as Data?) ?? Data())
            let at: Double = try row.value("at")
            seeds.append([try row.value("host") as String, try row.value("route") as String, at, at, body.count, SHA256.hex(body),
                          try row.value("etag") as String?, try row.value("last_modified") as String?, Data(body)])
        }
        for seed in seeds { try insert.execute(arguments: seed) }
    }

    /// Keeps `body` as the latest approved file of `key`: a file equal to the latest kept one only
    /// confirms it (its approval time and validators); another becomes the latest, and files past
    /// ``StoreRetention/keptVersions`` go.
    static func keepVersion(_ db: Database, key: HostKey, body: [UInt8], at time: Date, validators: CacheValidators?) throws {
        let digest = SHA256.hex(body)
        let (host, route) = (key.host, key.route.rawValue)
        // Cached statements: this runs for every approved download.
        let latest = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT id, digest FROM versions WHERE host = ? AND route = ? ORDER BY id DESC LIMIT 1
            """), arguments: [host, route])
        if let latest, latest[1] as String == digest {
            try db.cachedStatement(sql: """
                UPDATE versions SET approved_at = ?, etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified) WHERE id = ?
                """).execute(arguments: [time.timeIntervalSince1970, validators?.etag, validators?.lastModified, latest[0] as Int64])
            return
        }
        try db.cachedStatement(sql: """
            INSERT INTO versions (host, route, fetched_at, approved_at, size, digest, etag, last_modified, body)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [host, route, time.timeIntervalSince1970, time.timeIntervalSince1970, body.count,
                                     digest, validators?.etag, validators?.lastModified, Data(body)])
        // The host's first version: nothing to drop.
        guard latest != nil else { return }
        try db.cachedStatement(sql: """
            DELETE FROM versions WHERE host = ? AND route = ? AND id NOT IN (
                SELECT id FROM versions WHERE host = ? AND route = ? ORDER BY id DESC LIMIT ?)
            """).execute(arguments: [host, route, host, route, StoreRetention.keptVersions])
    }

    public func retireNeeds(appIDs: [String], scopes: [NeedScope], registeredBefore registeredAt: Date, now: Date) async throws -> RetiredNeeds {
        guard !appIDs.isEmpty, !scopes.isEmpty else { return RetiredNeeds() }
        let marks = Array(repeating: "?", count: appIDs.count).joined(separator: ", ")
        // An entry has a mode when its name has one (`service:host?mode=…`; a host has no `?`).
        let scoped = scopes.map { scope in
            switch scope.entries {
            case .all: "route = ?"
            case .plain: "(route = ? AND instr(entry, '?mode=') = 0)"
            case .moded: "(route = ? AND instr(entry, '?mode=') > 0)"
            }
        }.joined(separator: " OR ")
        let selection = "app_id IN (\(marks)) AND (seen_at IS NULL OR seen_at < ?) AND (\(scoped))"
        let arguments = StatementArguments(appIDs) + [registeredAt.timeIntervalSince1970] + StatementArguments(scopes.map(\.route.rawValue))
        let time = now.timeIntervalSince1970
        return try await immediateWrite { db in
            let touched = try Row.fetchAll(db, sql: "SELECT DISTINCT host, route FROM entries WHERE \(selection)", arguments: arguments)
            try db.execute(sql: "DELETE FROM entries WHERE \(selection)", arguments: arguments)
            let removed = db.changesCount
            let mark = try db.cachedStatement(sql: """
                UPDATE hosts SET unneeded_since = ? WHERE host = ? AND route = ? AND unneeded_since IS NULL
                AND NOT EXISTS (SELECT 1 FROM entries WHERE entries.host = hosts.host AND entries.route = hosts.route)
                RETURNING id
                """)
            var unneeded: [(Int64, HostKey)] = []
            for row in touched {
                let host: String = try row.value("host")
                let route: String = try row.value("route")
                if let id = try Int64.fetchOne(mark, arguments: [time, host, route]) {
                    unneeded.append((id, HostKey(host: host, route: Route(rawValue: route) ?? .origin)))
                }
            }
            return RetiredNeeds(needs: removed, unneededHosts: unneeded.sorted { $0.0 < $1.0 }.map(\.1))
        }
    }

    public func pruneUnneeded(before: Date, now: Date, limit: Int) async throws -> [HostKey] {
        let (cutoff, time) = (before.timeIntervalSince1970, now.timeIntervalSince1970)
        return try await immediateWrite { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, host, route FROM hosts
                WHERE unneeded_since IS NOT NULL AND unneeded_since <= ? AND (lease_expires IS NULL OR lease_expires <= ?)
                ORDER BY unneeded_since, id LIMIT ?
                """, arguments: [cutoff, time, max(0, limit)])
            var removed: [HostKey] = []
            for row in rows {
                let (host, route): (String, String) = (try row.value("host"), try row.value("route"))
                try db.execute(sql: "DELETE FROM hosts WHERE id = ?", arguments: [try row.value("id") as Int64])
                try db.execute(sql: "DELETE FROM history WHERE host = ? AND route = ?", arguments: [host, route])
                try db.execute(sql: "DELETE FROM versions WHERE host = ? AND route = ?", arguments: [host, route])
                removed.append(HostKey(host: host, route: Route(rawValue: route) ?? .origin))
            }
            return removed
        }
    }

    public func pruneHistory(before: Date, limit: Int) async throws -> Int {
        let cutoff = before.timeIntervalSince1970
        return try await immediateWrite { db in
            try db.execute(sql: """
                DELETE FROM history WHERE id IN (SELECT id FROM history WHERE at < ? ORDER BY at LIMIT ?)
                """, arguments: [cutoff, max(0, limit)])
            return db.changesCount
        }
    }

    public func versions(of key: HostKey, bodies: Bool) async throws -> [StoredVersion] {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT fetched_at, approved_at, size, digest, etag, last_modified, \(bodies ? "body" : "NULL AS body")
                FROM versions WHERE host = ? AND route = ? ORDER BY id DESC
                """, arguments: [key.host, key.route.rawValue])
            return try rows.enumerated().map { index, row in
                StoredVersion(
                    key: key, index: -index, fetchedAt: Date(timeIntervalSince1970: try row.value("fetched_at")),
                    approvedAt: Date(timeIntervalSince1970: try row.value("approved_at")), size: try row.value("size"), digest: try row.value("digest"),
                    etag: try row.value("etag"), lastModified: try row.value("last_modified"), body: (try row.value("body") as Data?).map { [UInt8]($0) })
            }
        }
    }

    /// Creates a store file with the schema of an earlier version: the migrations up to and
    /// including `version` (tests open it with the current code to check the upgrade).
    static func createForTesting(path: String, through version: String, then sql: String = "") throws {
        let queue = try DatabaseQueue(path: path)
        try migrator.migrate(queue, upTo: version)
        if !sql.isEmpty { try queue.write { db in try db.execute(sql: sql) } }
    }
}
