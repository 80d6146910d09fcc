import Foundation
import PostgresClient

extension PostgresAssociationStore {
    /// The advisory lock that makes claims on the notification queue take turns (`aasanoti`).
    static let notificationLock = "7017016556721763433"

    /// Queues notifications (inside the transaction that records their download) and keeps at
    /// most `capacity`: the oldest are dropped and counted.
    static func enqueue(_ events: [NotificationEvent], capacity: Int, _ tx: PostgresTransaction) throws {
        guard !events.isEmpty else { return }
        for event in events {
            try tx.execute("""
                INSERT INTO notifications (event_id, host, route, kind, at, event) VALUES ($1, $2, $3, $4, to_timestamp($5::float8), $6)
                """, [event.id, event.host, event.route.rawValue, event.kind.rawValue, time(event.time), NotificationQueue.encode(event)])
        }
        let count = Int(try tx.execute("SELECT count(*) FROM notifications").rows.first?.first.flatMap { $0 } ?? "0") ?? 0
        let excess = count - max(0, capacity)
        guard excess > 0 else { return }
        let removed = try tx.execute("""
            DELETE FROM notifications WHERE id IN (SELECT id FROM notifications ORDER BY id LIMIT $1::int)
            """, [String(excess)]).affected
        guard removed > 0 else { return }
        try tx.execute("""
            INSERT INTO notification_drops (id, dropped) VALUES (1, $1::bigint)
            ON CONFLICT (id) DO UPDATE SET dropped = notification_drops.dropped + excluded.dropped
            """, [String(removed)])
    }

    public func claimNotifications(now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String) async throws -> NotificationClaim {
        let time = Self.time(now)
        let until = Self.time(now.addingTimeInterval(leaseSeconds))
        return try await transaction { tx in
            // One claimer at a time: the check for another deliverer and the lease are one step.
            try tx.execute("SELECT pg_advisory_xact_lock($1::bigint)", [Self.notificationLock])
            let pending = Int(try tx.execute("SELECT count(*) FROM notifications").rows.first?.first.flatMap { $0 } ?? "0") ?? 0
            let holder = try tx.execute("""
                SELECT lease_owner FROM notifications WHERE lease_expires > to_timestamp($1::float8) AND lease_owner <> $2 ORDER BY id LIMIT 1
                """, [time, owner])
            if let row = holder.rows.first, let name = row.first ?? nil {
                return NotificationClaim(notifications: [], heldBy: name, dropped: 0, pending: pending)
            }
            let dropped = Int(try tx.execute("DELETE FROM notification_drops RETURNING dropped").rows.first?.first.flatMap { $0 } ?? "0") ?? 0
            let rows = try tx.execute("""
                UPDATE notifications SET lease_owner = $1, lease_expires = to_timestamp($2::float8)
                WHERE id IN (SELECT id FROM notifications ORDER BY id LIMIT $3::int)
                RETURNING id, event, attempts
                """, [owner, until, String(max(0, limit))])
            let claimed = (0..<rows.rows.count).compactMap { row -> QueuedNotification? in
                guard let id = Int64(rows.value(row, "id") ?? ""), let event = NotificationQueue.decode(rows.value(row, "event") ?? "") else { return nil }
                return QueuedNotification(id: id, event: event, attempts: Int(rows.value(row, "attempts") ?? "") ?? 0)
            }.sorted { $0.id < $1.id }
            return NotificationClaim(notifications: claimed, heldBy: nil, dropped: dropped, pending: pending)
        }
    }

    @discardableResult
    public func acknowledgeNotification(id: Int64, owner: String) async throws -> Bool {
        try await transaction { tx in
            try tx.execute("DELETE FROM notifications WHERE id = $1::bigint AND lease_owner = $2", [String(id), owner]).affected > 0
        }
    }

    public func releaseNotifications(owner: String, failed: Int64?, error: String?) async throws {
        try await transaction { tx in
            if let failed {
                try tx.execute("""
                    UPDATE notifications SET attempts = attempts + 1, last_error = $1 WHERE id = $2::bigint AND lease_owner = $3
                    """, [error, String(failed), owner])
            }
            try tx.execute("UPDATE notifications SET lease_owner = NULL, lease_expires = NULL WHERE lease_owner = $1", [owner])
        }
    }

    public func queuedNotifications() async throws -> [QueuedNotification] {
        try await transaction { tx in
            let rows = try tx.execute("SELECT id, event, attempts FROM notifications ORDER BY id")
            return (0..<rows.rows.count).compactMap { row -> QueuedNotification? in
                guard let id = Int64(rows.value(row, "id") ?? ""), let event = NotificationQueue.decode(rows.value(row, "event") ?? "") else { return nil }
                return QueuedNotification(id: id, event: event, attempts: Int(rows.value(row, "attempts") ?? "") ?? 0)
            }
        }
    }
}
