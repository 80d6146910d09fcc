import Foundation

/// The store's queue of undelivered notifications (`refresh --notify`): constants and the stored
/// form of an event.
public enum NotificationQueue {
    /// Most undelivered notifications a store keeps: past it the oldest are dropped, counted, and
    /// the next delivery warns (`notify-dropped`).
    public static let capacity = 10_000

    /// The stored text of an event (Foundation's encoder, for an exact round trip).
    static func encode(_ event: NotificationEvent) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(event)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// An event read back; `nil` for a row this version cannot read.
    static func decode(_ text: String) -> NotificationEvent? {
        try? JSONDecoder().decode(NotificationEvent.self, from: Data(text.utf8))
    }
}

/// One undelivered notification of the queue.
public struct QueuedNotification: Sendable, Hashable {
    /// The row's position in the queue (delivery order).
    public var id: Int64
    /// The event.
    public var event: NotificationEvent
    /// Delivery runs that failed on it so far.
    public var attempts: Int

    /// Creates a queued notification.
    public init(id: Int64, event: NotificationEvent, attempts: Int) {
        self.id = id
        self.event = event
        self.attempts = attempts
    }
}

/// What ``AssociationStore/claimNotifications(now:limit:leaseSeconds:owner:)`` leased.
public struct NotificationClaim: Sendable {
    /// The oldest undelivered notifications, in order, leased to the caller (empty when another
    /// process is delivering, or nothing is queued).
    public var notifications: [QueuedNotification]
    /// The owner of an unexpired lease on the queue when another process is delivering (then
    /// nothing is leased: one deliverer at a time keeps the order).
    public var heldBy: String?
    /// Notifications dropped because the queue was full since the last claim (the count is reset).
    public var dropped: Int
    /// Undelivered notifications in the queue, the leased ones included.
    public var pending: Int

    /// Creates a claim.
    public init(notifications: [QueuedNotification], heldBy: String? = nil, dropped: Int = 0, pending: Int = 0) {
        self.notifications = notifications
        self.heldBy = heldBy
        self.dropped = dropped
        self.pending = pending
    }
}
