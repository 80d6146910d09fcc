import Foundation
import PostgresClient

extension PostgresAssociationStore {
    /// `v2-retention`: when each need was last registered (to replace an app's set), since when a
    /// host is unneeded, an index to prune history by age, and the kept approved files (seeded
    /// with each host's current approved file).
    static let retentionMigration: [String] = [
        "ALTER TABLE hosts ADD COLUMN unneeded_since timestamptz",
        "CREATE INDEX hosts_unneeded ON hosts (unneeded_since) WHERE unneeded_since IS NOT NULL",
        "ALTER TABLE entries ADD COLUMN seen_at timestamptz",
        "UPDATE entries SET seen_at = added_at",
        "CREATE INDEX entries_app ON entries (app_id, route, seen_at)",
        "CREATE INDEX history_at ON history (at)",
        """
        CREATE TABLE versions (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            host text NOT NULL,
            route text NOT NULL,
            fetched_at timestamptz NOT NULL,
            approved_at timestamptz NOT NULL,
            size integer NOT NULL,
            digest text NOT NULL,
            etag text,
            last_modified text,
            body bytea NOT NULL
        )
        """,
        "CREATE INDEX versions_host ON versions (host, route, id)",
        """
        INSERT INTO versions (host, route, fetched_at, approved_at, size, digest, etag, last_modified, body)
        SELECT host, route, coalesce(approved_at, added_at), coalesce(approved_at, added_at), octet_length(approved_body),
               encode(sha256(approved_body), 'hex'), etag, last_modified, approved_body
        FROM hosts WHERE approved_body IS NOT NULL ORDER BY id
        """,
    ]

    /// As ``SQLiteAssociationStore``'s: a file equal to the latest kept one only confirms it;
    /// another becomes the latest, and files past ``StoreRetention/keptVersions`` go.
    static func keepVersion(_ tx: PostgresTransaction, key: HostKey, body: [UInt8], digest: String, at time: Date, validators: CacheValidators?) throws {
        let latest = try tx.execute("""
            SELECT id, digest FROM versions WHERE host = $1 AND route = $2 ORDER BY id DESC LIMIT 1
            """, [key.host, key.route.rawValue])
        if latest.rows.count == 1, latest.value(0, "digest") == digest {
            try tx.execute("""
                UPDATE versions SET approved_at = to_timestamp($1::float8), etag = coalesce($2, etag),
                    last_modified = coalesce($3, last_modified) WHERE id = $4::bigint
                """, [Self.time(time), validators?.etag, validators?.lastModified, latest.value(0, "id")])
            return
        }
        try tx.execute("""
            INSERT INTO versions (host, route, fetched_at, approved_at, size, digest, etag, last_modified, body)
            VALUES ($1, $2, to_timestamp($3::float8), to_timestamp($3::float8), $4::int, $5, $6, $7, decode($8, 'base64'))
            """, [key.host, key.route.rawValue, Self.time(time), String(body.count), digest, validators?.etag,
                  validators?.lastModified, Data(body).base64EncodedString()])
        try tx.execute("""
            DELETE FROM versions WHERE host = $1 AND route = $2 AND id NOT IN (
                SELECT id FROM versions WHERE host = $1 AND route = $2 ORDER BY id DESC LIMIT $3::int)
            """, [key.host, key.route.rawValue, String(StoreRetention.keptVersions)])
    }

    public func retireNeeds(appIDs: [String], scopes: [NeedScope], registeredBefore registeredAt: Date, now: Date) async throws -> RetiredNeeds {
        guard !appIDs.isEmpty, !scopes.isEmpty else { return RetiredNeeds() }
        let parameters = [Self.array(appIDs), Self.array(scopes.map(\.route.rawValue)), Self.time(registeredAt),
                          Self.array(scopes.map(\.entries.rawValue))]
        let time = Self.time(now)
        return try await transaction { tx in
            // An entry has a mode when its name has one (`service:host?mode=…`; a host has no `?`).
            let removed = try tx.execute("""
                DELETE FROM entries WHERE app_id = ANY($1::text[])
                  AND (seen_at IS NULL OR seen_at < to_timestamp($3::float8))
                  AND EXISTS (SELECT 1 FROM unnest($2::text[], $4::text[]) AS s(route, kind)
                              WHERE s.route = entries.route
                                AND (s.kind = 'all' OR (s.kind = 'moded') = (strpos(entries.entry, '?mode=') > 0)))
                RETURNING host, route
                """, parameters)
            var hosts: [String] = []
            var hostRoutes: [String] = []
            var seen: Set<String> = []
            for row in 0..<removed.rows.count {
                let (host, route) = (removed.value(row, "host") ?? "", removed.value(row, "route") ?? "")
                if seen.insert(host + "\u{0}" + route).inserted {
                    hosts.append(host)
                    hostRoutes.append(route)
                }
            }
            guard !hosts.isEmpty else { return RetiredNeeds() }
            let marked = try tx.execute("""
                UPDATE hosts AS h SET unneeded_since = to_timestamp($3::float8)
                FROM unnest($1::text[], $2::text[]) AS k(host, route)
                WHERE h.host = k.host AND h.route = k.route AND h.unneeded_since IS NULL
                  AND NOT EXISTS (SELECT 1 FROM entries AS e WHERE e.host = h.host AND e.route = h.route)
                RETURNING h.id, h.host, h.route
                """, [Self.array(hosts), Self.array(hostRoutes), time])
            let unneeded = (0..<marked.rows.count).map { row in
                (Int64(marked.value(row, "id") ?? "") ?? 0,
                 HostKey(host: marked.value(row, "host") ?? "", route: Route(rawValue: marked.value(row, "route") ?? "") ?? .origin))
            }.sorted { $0.0 < $1.0 }.map(\.1)
            return RetiredNeeds(needs: removed.rows.count, unneededHosts: unneeded)
        }
    }

    public func pruneUnneeded(before: Date, now: Date, limit: Int) async throws -> [HostKey] {
        let parameters = [Self.time(before), Self.time(now), String(max(0, limit))]
        return try await transaction { tx in
            let removed = try tx.execute("""
                WITH picked AS MATERIALIZED (
                    SELECT id FROM hosts
                    WHERE unneeded_since IS NOT NULL AND unneeded_since <= to_timestamp($1::float8)
                      AND (lease_expires IS NULL OR lease_expires <= to_timestamp($2::float8))
                    ORDER BY id LIMIT $3::int
                    FOR UPDATE SKIP LOCKED
                )
                DELETE FROM hosts AS h USING picked WHERE h.id = picked.id
                RETURNING h.id, h.host, h.route
                """, parameters)
            let keys = (0..<removed.rows.count).map { row in
                (Int64(removed.value(row, "id") ?? "") ?? 0,
                 HostKey(host: removed.value(row, "host") ?? "", route: Route(rawValue: removed.value(row, "route") ?? "") ?? .origin))
            }.sorted { $0.0 < $1.0 }.map(\.1)
            if !keys.isEmpty {
                let columns = [Self.array(keys.map(\.host)), Self.array(keys.map(\.route.rawValue))]
                for table in ["history", "versions"] {
                    try tx.execute("""
                        DELETE FROM \(table) AS t USING unnest($1::text[], $2::text[]) AS k(host, route)
                        WHERE t.host = k.host AND t.route = k.route
                        """, columns)
                }
            }
            return keys
        }
    }

    public func pruneHistory(before: Date, limit: Int) async throws -> Int {
        let parameters = [Self.time(before), String(max(0, limit))]
        return try await transaction { tx in
            try tx.execute("""
                DELETE FROM history WHERE id IN (
                    SELECT id FROM history WHERE at < to_timestamp($1::float8) ORDER BY at LIMIT $2::int FOR UPDATE SKIP LOCKED)
                """, parameters).affected
        }
    }

    public func versions(of key: HostKey, bodies: Bool) async throws -> [StoredVersion] {
        try await transaction { tx in
            let rows = try tx.execute("""
                SELECT extract(epoch FROM fetched_at) AS fetched_at, extract(epoch FROM approved_at) AS approved_at, size, digest,
                       etag, last_modified, \(bodies ? "encode(body, 'base64')" : "NULL") AS body
                FROM versions WHERE host = $1 AND route = $2 ORDER BY id DESC
                """, [key.host, key.route.rawValue])
            return (0..<rows.rows.count).map { row in
                StoredVersion(
                    key: key, index: -row,
                    fetchedAt: Self.date(rows.value(row, "fetched_at")) ?? Date(timeIntervalSince1970: 0),
                    approvedAt: Self.date(rows.value(row, "approved_at")) ?? Date(timeIntervalSince1970: 0),
                    size: Int(rows.value(row, "size") ?? "") ?? 0, digest: rows.value(row, "digest") ?? "",
                    etag: rows.value(row, "etag"), lastModified: rows.value(row, "last_modified"),
                    body: rows.value(row, "body").flatMap { Data(base64Encoded: $0, options: .ignoreUnknownCharacters) }.map { [UInt8]($0) })
            }
        }
    }
}
