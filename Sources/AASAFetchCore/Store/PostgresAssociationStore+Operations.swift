import Foundation
import PostgresClient

extension PostgresAssociationStore {
    public func claimForced(
        hosts: [String]?, after cursor: Int64, now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String
    ) async throws -> ForcedClaim {
        if let hosts, hosts.isEmpty { return ForcedClaim(claim: DueClaim(hosts: []), cursor: nil) }
        let time = Self.time(now)
        let until = Self.time(now.addingTimeInterval(leaseSeconds))
        let names = hosts.map(Self.array)
        return try await transaction { tx in
            // As claimDue: one statement locks the selected, unleased rows (skipping rows another
            // claimer holds locked right now) and leases them, whatever their next check.
            let claimed = try tx.execute("""
                WITH picked AS MATERIALIZED (
                    SELECT id FROM hosts
                    WHERE id > $1::bigint AND (($2::text[] IS NULL AND unneeded_since IS NULL) OR host = ANY($2::text[]))
                      AND (lease_expires IS NULL OR lease_expires <= to_timestamp($3::float8))
                    ORDER BY id
                    LIMIT $4::int
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE hosts AS h SET lease_owner = $5, lease_expires = to_timestamp($6::float8)
                FROM picked WHERE h.id = picked.id
                RETURNING h.id, \(Self.columns(prefix: "h.", bodies: true))
                """, [String(cursor), names, time, String(max(0, limit)), owner, until])
            let rows = try Self.states(from: claimed).sorted { $0.id < $1.id }
            let others = try tx.execute("""
                SELECT lease_owner, count(*) AS n, extract(epoch FROM min(lease_expires)) AS first_expiry FROM hosts
                WHERE id > $1::bigint AND (($2::text[] IS NULL AND unneeded_since IS NULL) OR host = ANY($2::text[]))
                  AND lease_expires > to_timestamp($3::float8) AND lease_owner <> $4
                GROUP BY lease_owner ORDER BY lease_owner COLLATE "C"
                """, [String(cursor), names, time, owner])
            let count = others.rows.count
            let expiry = (0..<count).compactMap { Double(others.value($0, "first_expiry") ?? "") }.min()
            let claim = DueClaim(
                hosts: rows.map(\.state),
                leasedElsewhere: (0..<count).reduce(0) { $0 + (Int(others.value($1, "n") ?? "") ?? 0) },
                otherOwners: (0..<count).compactMap { others.value($0, "lease_owner") },
                nextLeaseExpiry: expiry.map { Date(timeIntervalSince1970: $0) })
            return ForcedClaim(claim: claim, cursor: rows.last?.id)
        }
    }

    public func histories(of keys: [HostKey], limit: Int) async throws -> [HostKey: [HistoryEvent]] {
        guard !keys.isEmpty else { return [:] }
        return try await transaction { tx in
            let rows = try tx.execute("""
                SELECT host, route, extract(epoch FROM at) AS at, kind, detail FROM (
                    SELECT h.id, h.host, h.route, h.at, h.kind, h.detail,
                           row_number() OVER (PARTITION BY h.host, h.route ORDER BY h.id DESC) AS n
                    FROM history AS h
                    JOIN unnest($1::text[], $2::text[]) AS k(host, route) ON h.host = k.host AND h.route = k.route
                ) AS latest
                WHERE n <= $3::int
                ORDER BY id
                """, [Self.array(keys.map(\.host)), Self.array(keys.map(\.route.rawValue)), String(max(0, limit))])
            var histories: [HostKey: [HistoryEvent]] = [:]
            for key in keys { histories[key] = [] }
            for row in 0..<rows.rows.count {
                guard let event = HistoryEvent.stored(
                    host: rows.value(row, "host") ?? "", route: rows.value(row, "route") ?? "",
                    at: Self.date(rows.value(row, "at")) ?? Date(timeIntervalSince1970: 0),
                    kind: rows.value(row, "kind") ?? "", detail: rows.value(row, "detail") ?? "{}")
                else { continue }
                histories[event.key, default: []].append(event)
            }
            return histories
        }
    }
}
