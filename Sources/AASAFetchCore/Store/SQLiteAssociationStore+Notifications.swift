import Foundation
import GRDB

extension SQLiteAssociationStore {
    /// Queues notifications (inside the transaction that records their download).
    static func enqueue(_ events: [NotificationEvent], _ db: Database) throws {
        guard !events.isEmpty else { return }
        let statement = try db.cachedStatement(sql: """
            INSERT INTO notifications (event_id, host, route, kind, at, event) VALUES (?, ?, ?, ?, ?, ?)
            """)
        for event in events {
            try statement.execute(arguments: [event.id, event.host, event.route.rawValue, event.kind.rawValue,
                                              event.time.timeIntervalSince1970, NotificationQueue.encode(event)])
        }
    }

    /// Keeps at most `capacity` queued notifications: drops the oldest and counts them.
    static func boundNotifications(_ db: Database, capacity: Int) throws {
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications") ?? 0
        let excess = count - max(0, capacity)
        guard excess > 0 else { return }
        try db.execute(sql: "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications ORDER BY id LIMIT ?)", arguments: [excess])
        try db.execute(sql: """
            INSERT INTO notification_drops (id, dropped) VALUES (1, ?)
            ON CONFLICT (id) DO UPDATE SET dropped = dropped + excluded.dropped
            """, arguments: [excess])
    }

    public func claimNotifications(now: Date, limit: Int, leaseSeconds: TimeInterval, owner: String) async throws -> NotificationClaim {
        let time = now.timeIntervalSince1970
        return try await immediateWrite { db in
            let pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications") ?? 0
            let dropped = try Int.fetchOne(db, sql: "SELECT dropped FROM notification_drops WHERE id = 1") ?? 0
            if let holder = try String.fetchOne(db, sql: """
                SELECT lease_owner FROM notifications WHERE lease_expires > ? AND lease_owner <> ? ORDER BY id LIMIT 1
                """, arguments: [time, owner]) {
                return NotificationClaim(notifications: [], heldBy: holder, dropped: 0, pending: pending)
            }
            if dropped > 0 { try db.execute(sql: "DELETE FROM notification_drops") }
            let rows = try Row.fetchAll(db, sql: "SELECT id, event, attempts FROM notifications ORDER BY id LIMIT ?",
                                        arguments: [max(0, limit)])
            let lease = try db.cachedStatement(sql: "UPDATE notifications SET lease_owner = ?, lease_expires = ? WHERE id = ?")
            var claimed: [QueuedNotification] = []
            for row in rows {
                let id: Int64 = try row.value("id")
                try lease.execute(arguments: [owner, time + leaseSeconds, id])
                // A row this version cannot read stays queued for one that can (never expected).
                guard let event = NotificationQueue.decode(try row.value("event")) else { continue }
                claimed.append(QueuedNotification(id: id, event: event, attempts: try row.value("attempts")))
            }
            return NotificationClaim(notifications: claimed, heldBy: nil, dropped: dropped, pending: pending)
        }
    }

    @discardableResult
    public func acknowledgeNotification(id: Int64, owner: String) async throws -> Bool {
        try await immediateWrite { db in
            try db.execute(sql: "DELETE FROM notifications WHERE id = ? AND lease_owner = ?", arguments: [id, owner])
            return db.changesCount > 0
        }
    }

    public func releaseNotifications(owner: String, failed: Int64?, error: String?) async throws {
        try await immediateWrite { db in
            if let failed {
                try db.execute(sql: "UPDATE notifications SET attempts = attempts + 1, last_error = ? WHERE id = ? AND lease_owner = ?",
                               arguments: [error, failed, owner])
            }
            try db.execute(sql: "UPDATE notifications SET lease_owner = NULL, lease_expires = NULL WHERE lease_owner = ?", arguments: [owner])
        }
    }

    public func queuedNotifications() async throws -> [QueuedNotification] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT id, event, attempts FROM notifications ORDER BY id").compactMap { row in
                try NotificationQueue.decode(try row.value("event")).map { QueuedNotification(id: try row.value("id"), event: $0, attempts: try row.value("attempts")) }
            }
        }
    }
}
