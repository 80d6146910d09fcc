@testable import AASAFetchCore
import Foundation
import Testing

/// ``StoreClock``: the offset from one round trip, the words for people, and the clocks of stores
/// without a server and of a fixed time. (The server's clock itself: `PostgresWorkerTests`.)
struct StoreClockTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// The server answered in the middle of a 0.2 s round trip, with a clock 600 s behind ours.
    @Test func theOffsetIsTakenAgainstTheMidpointOfTheRoundTrip() {
        let offset = StoreClock.offset(server: Self.t0.addingTimeInterval(0.1 - 600), sent: Self.t0, received: Self.t0.addingTimeInterval(0.2))
        #expect(abs(offset + 600) < 1e-6, "\(offset)")
        #expect(StoreClock.offset(server: Self.t0.addingTimeInterval(5), sent: Self.t0, received: Self.t0) == 5)
    }

    @Test(arguments: [
        (-600.0, "10 min ahead of"), (42, "42 s behind"), (-119.4, "119 s ahead of"), (7_199, "120 min behind"),
        (-7_200, "2 h ahead of"), (172_800, "2 days behind"),
    ])
    func offsetsAreSaidInWords(offset: TimeInterval, words: String) {
        #expect(StoreClock.describe(offset) == words)
    }

    /// A SQLite store has no server: nothing to follow, offset 0, this machine's time.
    @Test func aStoreWithoutAServerLeavesThisMachinesTime() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("store-clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SQLiteAssociationStore(path: folder.appendingPathComponent("s.sqlite").path)
        let clock = StoreClock()
        #expect(try await clock.sync(with: store) == nil)
        #expect(clock.offset == 0)
        let now = Date()
        #expect(abs(clock.now().timeIntervalSince(now)) < 60)
    }

    /// A fixed time (`refresh --now`) is the time, and nothing is measured.
    @Test func aFixedTimeWins() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("store-clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SQLiteAssociationStore(path: folder.appendingPathComponent("s.sqlite").path)
        let clock = StoreClock(fixed: Self.t0)
        #expect(try await clock.sync(with: store) == nil)
        #expect(clock.now() == Self.t0)
    }
}
