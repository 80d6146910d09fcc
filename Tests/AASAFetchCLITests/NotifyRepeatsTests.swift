import Foundation
import Testing

@testable import AASAFetchCLI
@testable import AASAFetchCore

/// A long-running refresh shows a webhook's failure once an hour, not at every wake, and says when
/// the webhook takes notifications again.
struct NotifyRepeatsTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func event(_ id: String) -> NotificationEvent {
        NotificationEvent(id: id, kind: .broke, host: "example.com", route: .origin, time: t0, before: "ok", after: "timeout",
                          code: "timeout", reason: "no answer")
    }

    static func failed(_ id: String, code: String = "notify-failed", delivered: Int = 0) -> NotifyReport {
        var report = NotifyReport()
        report.delivered = delivered
        report.pending = 3
        report.failure = NotifyFailure(code: code, message: "HTTP 500", event: event(id), attempts: 3)
        return report
    }

    static func delivered(_ count: Int) -> NotifyReport {
        var report = NotifyReport()
        report.delivered = count
        return report
    }

    @Test func theSameFailureIsShownOnceAnHourAndTheRecoveryOnce() {
        let repeats = NotifyRepeats()
        let minute: TimeInterval = 60
        #expect(repeats.decide(Self.delivered(2), now: Self.t0) == .show, "nothing failed before")
        #expect(repeats.decide(NotifyReport(), now: Self.t0) == .show)
        #expect(repeats.decide(Self.failed("a"), now: Self.t0) == .show)
        #expect(repeats.decide(Self.failed("a"), now: Self.t0 + minute) == .hide)
        #expect(repeats.decide(NotifyReport(), now: Self.t0 + 2 * minute) == .show, "an empty run says nothing")
        #expect(repeats.decide(Self.failed("a"), now: Self.t0 + 59 * minute) == .hide)
        #expect(repeats.decide(Self.failed("a"), now: Self.t0 + 60 * minute) == .showAgain(hidden: 2))
        #expect(repeats.decide(Self.failed("a"), now: Self.t0 + 61 * minute) == .hide)
        // Another event, or another code for the same event, is news.
        #expect(repeats.decide(Self.failed("b", delivered: 1), now: Self.t0 + 62 * minute) == .show)
        #expect(repeats.decide(Self.failed("b", code: "notify-rejected"), now: Self.t0 + 63 * minute) == .show)
        #expect(repeats.decide(Self.delivered(4), now: Self.t0 + 64 * minute) == .recovered(failedRuns: 7))
        #expect(repeats.decide(Self.delivered(1), now: Self.t0 + 65 * minute) == .show, "announced once")
        #expect(repeats.decide(Self.failed("a"), now: Self.t0 + 66 * minute) == .show, "a failure after the recovery is shown")
    }
}
