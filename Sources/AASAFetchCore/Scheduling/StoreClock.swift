import Foundation
import Synchronization

/// The clock a `refresh` runs on.
///
/// Leases are compared across processes, and with a PostgreSQL store across machines: a machine
/// whose clock runs ahead would see another's lease as lapsed and fetch its hosts again (that
/// machine's results then dropped as lost leases), and one whose clock runs behind would hold
/// hosts too long. So with a store that has a server, the clock follows the server's:
/// this machine's time plus an offset, measured as the server's time against the midpoint of the
/// round trip that asked for it (asked twice when the first took long: see ``slowRoundTrip``),
/// and measured again every ``resyncInterval``. A SQLite store has
/// no server: the offset stays 0. A fixed time (`--now`) wins over both.
public final class StoreClock: Sendable {
    /// How long a measured offset is used before it is measured again.
    public static let resyncInterval: Duration = .seconds(300)

    /// An offset worth telling people about: beyond the lag of a round trip, and enough to
    /// matter for leases of a minute.
    public static let noteworthyOffset: TimeInterval = 30

    /// The fixed time (`refresh --now`), if any.
    public let fixed: Date?
    private let state = Mutex<(offset: TimeInterval, measured: ContinuousClock.Instant?)>((0, nil))

    /// A clock on this machine's time (or `fixed`) until ``sync(with:)`` measures a server.
    public init(fixed: Date? = nil) {
        self.fixed = fixed
    }

    /// The server's time minus this machine's, in seconds (0 until measured).
    public var offset: TimeInterval { state.withLock { $0.offset } }

    /// The current time: `fixed`, else this machine's time plus ``offset``.
    public func now() -> Date {
        fixed ?? Date().addingTimeInterval(offset)
    }

    /// Measures the offset against `store`'s server when it was never measured or the last
    /// measure is older than ``resyncInterval``; returns the new offset when it measured one.
    ///
    /// - Throws: the store's error (``StoreError``) when it cannot be asked.
    @discardableResult
    public func sync(with store: any AssociationStore) async throws -> TimeInterval? {
        guard fixed == nil else { return nil }
        let due = state.withLock { $0.measured.map { $0.duration(to: .now) >= Self.resyncInterval } ?? true }
        guard due else { return nil }
        guard let offset = try await Self.measure(now: { Date() }, ask: { try await store.serverTime() }) else {
            state.withLock { $0 = (0, .now) }
            return nil
        }
        state.withLock { $0 = (offset, .now) }
        return offset
    }

    /// A round trip this long may hold more than the question: the connection made again after
    /// an outage, a busy server. Its midpoint can then be off by half of it, so it is asked again.
    static let slowRoundTrip: TimeInterval = 0.25

    /// The offset from the faster of at most two round trips: a second is asked only when the
    /// first was slower than ``slowRoundTrip`` (`nil` when there is no server).
    ///
    /// - Parameters:
    ///   - now: this machine's time.
    ///   - ask: the server's time (``AssociationStore/serverTime()``); the first call's error is thrown,
    ///     a second call's leaves the first measure.
    static func measure(now: () -> Date, ask: () async throws -> Date?) async throws -> TimeInterval? {
        var best: (offset: TimeInterval, roundTrip: TimeInterval)?
        for attempt in 0..<2 {
            let sent = now()
            let answer: Date?
            if attempt == 0 {
                answer = try await ask()
            } else {
                answer = try? await ask()
            }
            guard let server = answer else { break }
            let received = now()
            let roundTrip = received.timeIntervalSince(sent)
            if best.map({ roundTrip < $0.roundTrip }) ?? true {
                best = (offset(server: server, sent: sent, received: received), roundTrip)
            }
            if roundTrip < slowRoundTrip { break }
        }
        return best?.offset
    }

    /// The server's time against the midpoint of the round trip.
    static func offset(server: Date, sent: Date, received: Date) -> TimeInterval {
        server.timeIntervalSince(sent) - received.timeIntervalSince(sent) / 2
    }

    /// "10 min ahead of", "42 s behind": how this machine's clock stands to the server's, for
    /// people (`offset` is the server's time minus this machine's).
    public static func describe(_ offset: TimeInterval) -> String {
        let seconds = abs(offset)
        let amount: String
        switch seconds {
        case ..<120: amount = "\(Int(seconds.rounded())) s"
        case ..<7_200: amount = "\(Int((seconds / 60).rounded())) min"
        case ..<172_800: amount = "\(Int((seconds / 3_600).rounded())) h"
        default: amount = "\(Int((seconds / 86_400).rounded())) days"
        }
        return "\(amount) \(offset < 0 ? "ahead of" : "behind")"
    }
}
