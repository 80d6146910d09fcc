import Foundation
import GRDB

extension SQLiteAssociationStore {
    public func claimForced(
        hosts: [String]?, after cursor: Int64, now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String
    ) async throws -> ForcedClaim {
        if let hosts, hosts.isEmpty { return ForcedClaim(claim: DueClaim(hosts: []), cursor: nil) }
        let time = now.timeIntervalSince1970
        let until = time + leaseSeconds
        // The selection: after the cursor, and among the named hosts when there are any.
        // Every host (`--all`) means every needed one; a named host is fetched even when unneeded.
        let named = hosts.map { " AND host IN (\(Array(repeating: "?", count: $0.count).joined(separator: ", ")))" }
            ?? " AND unneeded_since IS NULL"
        let selection = "id > ?" + named
        let selectionArguments = StatementArguments([cursor]) + StatementArguments(hosts ?? [])
        return try await immediateWrite { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT \(Self.stateColumns), id FROM hosts
                WHERE \(selection) AND (lease_expires IS NULL OR lease_expires <= ?)
                ORDER BY id LIMIT ?
                """, arguments: selectionArguments + [time, max(0, limit)])
            let lease = try db.cachedStatement(sql: "UPDATE hosts SET lease_owner = ?, lease_expires = ? WHERE id = ?")
            var claimed: [HostState] = []
            var last: Int64?
            for row in rows {
                let id: Int64 = row[Self.columnAfterState]
                try lease.execute(arguments: [owner, until, id])
                var state = Self.state(from: row)
                state.lease = HostLease(owner: owner, expires: Date(timeIntervalSince1970: until))
                claimed.append(state)
                last = id
            }
            let others = try Row.fetchAll(db, sql: """
                SELECT lease_owner, COUNT(*) AS n, MIN(lease_expires) AS first_expiry FROM hosts
                WHERE \(selection) AND lease_expires > ? AND lease_owner <> ?
                GROUP BY lease_owner ORDER BY lease_owner
                """, arguments: selectionArguments + [time, owner])
            let expiry = others.compactMap { $0["first_expiry"] as Double? }.min()
            let claim = DueClaim(
                hosts: claimed, leasedElsewhere: others.reduce(0) { $0 + ($1["n"] as Int? ?? 0) },
                otherOwners: others.compactMap { $0["lease_owner"] }, nextLeaseExpiry: expiry.map { Date(timeIntervalSince1970: $0) })
            return ForcedClaim(claim: claim, cursor: last)
        }
    }

    public func histories(of keys: [HostKey], limit: Int) async throws -> [HostKey: [HistoryEvent]] {
        guard !keys.isEmpty else { return [:] }
        return try await read { db in
            let statement = try db.cachedStatement(sql: """
                SELECT host, route, at, kind, detail FROM history WHERE host = ? AND route = ? ORDER BY id DESC LIMIT ?
                """)
            var histories: [HostKey: [HistoryEvent]] = [:]
            for key in keys {
                let rows = try Row.fetchAll(statement, arguments: [key.host, key.route.rawValue, max(0, limit)])
                histories[key] = rows.reversed().compactMap { row in
                    HistoryEvent.stored(host: row["host"], route: row["route"], at: Date(timeIntervalSince1970: row["at"]),
                                        kind: row["kind"], detail: row["detail"])
                }
            }
            return histories
        }
    }
}
