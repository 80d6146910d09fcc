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
                let id: Int64 = try row.value(Self.columnAfterState)
                try lease.execute(arguments: [owner, until, id])
                var state = try Self.state(from: row)
                state.lease = HostLease(owner: owner, expires: Date(timeIntervalSince1970: until))
                claimed.append(state)
                last = id
            }
            let others = try Row.fetchAll(db, sql: """
                SELECT lease_owner, COUNT(*) AS n, MIN(lease_expires) AS lease_expires FROM hosts
                WHERE \(selection) AND lease_expires > ? AND lease_owner <> ?
                GROUP BY lease_owner ORDER BY lease_owner
                """, arguments: selectionArguments + [time, owner])
            let expiry = try others.compactMap { try $0.value("lease_expires") as Double? }.min()
            let claim = DueClaim(
                hosts: claimed, leasedElsewhere: try others.reduce(0) { $0 + (try $1.value("n") as Int? ?? 0) },
                otherOwners: try others.compactMap { try $0.value("lease_owner") }, nextLeaseExpiry: expiry.map { Date(timeIntervalSince1970: $0) })
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
                histories[key] = try rows.reversed().compactMap { row in
                    HistoryEvent.stored(host: try row.value("host"), route: try row.value("route"), at: Date(timeIntervalSince1970: try row.value("at")),
                                        kind: try row.value("kind"), detail: try row.value("detail"))
                }
            }
            return histories
        }
    }
}
