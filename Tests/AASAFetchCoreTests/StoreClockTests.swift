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

    /// A fake clock that the fake server's answers move forward: `delays` are each question's
    /// time before the server reads its clock and after, in seconds.
    final class FakeServer: @unchecked Sendable {
        var time = 0.0
        var asked = 0
        let behind: TimeInterval
        let delays: [(before: TimeInterval, after: TimeInterval)]

        init(behind: TimeInterval, delays: [(before: TimeInterval, after: TimeInterval)]) {
            self.behind = behind
            self.delays = delays
        }

        func now() -> Date { StoreClockTests.t0.addingTimeInterval(time) }

        func ask() throws -> Date? {
            guard asked < delays.count else { throw StoreError(code: "store-unreachable", message: "gone") }
            let (before, after) = delays[asked]
            asked += 1
            time += before
            defer { time += after }
            return now().addingTimeInterval(-behind)
        }
    }

    /// The first question waited 2 s for the connection to be made again before the server read
    /// its clock: its midpoint is a second off. The second, fast one gives the offset.
    @Test func aSlowRoundTripIsAskedAgainAndTheFasterOneCounts() async throws {
        let server = FakeServer(behind: 600, delays: [(2.0, 0.005), (0.005, 0.005)])
        let offset = try #require(try await StoreClock.measure(now: server.now, ask: server.ask))
        #expect(server.asked == 2)
        #expect(abs(offset + 600) < 0.001, "\(offset)")

        // A fast first answer is asked once; a second question that fails leaves the first measure.
        let fast = FakeServer(behind: -30, delays: [(0.01, 0.01)])
        let fastOffset = try #require(try await StoreClock.measure(now: fast.now, ask: fast.ask))
        #expect(abs(fastOffset - 30) < 0.001 && fast.asked == 1, "\(fastOffset)")
        // 1 s before the server's clock, none after: the midpoint puts it 0.5 s early.
        let failing = FakeServer(behind: 600, delays: [(1.0, 0.0)])
        let firstOnly = try #require(try await StoreClock.measure(now: failing.now, ask: failing.ask))
        #expect(abs(firstOnly + 599.5) < 0.001 && failing.asked == 1, "\(firstOnly)")
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
