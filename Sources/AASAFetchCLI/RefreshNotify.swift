import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation
import Synchronization

/// `refresh --notify URL`: the webhook options.
struct NotifyOptions: ParsableArguments {
    @Option(name: .customLong("notify"), help: ArgumentHelp("POST one JSON event per change to this https:// or http:// URL (a webhook); undelivered events are kept in the store and sent first next time.", valueName: "url"))
    var url: String?
    @Option(name: .customLong("notify-format"), help: ArgumentHelp("The body sent: json (the event) or slack ({\"text\": …}, for a Slack incoming webhook).", valueName: "json|slack"))
    var format: String?
    @Option(name: .customLong("notify-cacert"), help: ArgumentHelp("PEM file of CA certificates to trust for the webhook instead of the system store.", valueName: "file"))
    var caFile: String?
    @Flag(name: .customLong("notify-allow-private"), help: "Allow the webhook on a loopback, private or reserved address (refused by default, as for every host).")
    var allowPrivate = false

    func validate() throws {
        if let url, let problem = Notifier.problem(with: url) {
            throw ValidationError("--notify takes a webhook URL such as https://hooks.example.com/aasa: \(problem)")
        }
        if let format, NotifyFormat(rawValue: format) == nil {
            throw ValidationError("--notify-format takes json or slack, not '\(format)'")
        }
        if url == nil && (format != nil || caFile != nil || allowPrivate) {
            throw ValidationError("--notify-format, --notify-cacert and --notify-allow-private go with --notify URL")
        }
        if let caFile, caFile.isEmpty { throw ValidationError("--notify-cacert takes a file name") }
    }

    /// The notifier, or `nil` without `--notify`.
    func notifier(client: CurlClient) -> Notifier? {
        guard let url else { return nil }
        return Notifier(
            transport: client, url: url, format: format.flatMap(NotifyFormat.init(rawValue:)) ?? .json, caFile: caFile,
            allowPrivateAddresses: allowPrivate, userAgent: "aasa-fetch/\(AASAFetchVersion.string)")
    }

    /// The URL as messages show it: scheme, host and port only (a webhook's path often holds its
    /// secret, and standard error ends up in cron mail).
    static func shown(_ url: String) -> String { Notifier.shown(url) }

    /// Says on standard error what a delivery run could not do: a notification that failed
    /// (`notify-failed`, `notify-rejected`), notifications dropped from a full queue
    /// (`notify-dropped`), and — unless `quiet` — a queue left to another process. Always shown
    /// (also with `--quiet`): cron mails standard error, and a change nobody heard of is what
    /// `--notify` is for.
    ///
    /// With `repeats` (a long-running refresh: `--watch`, `--worker`), a failure shown less than
    /// ``NotifyRepeats/interval`` ago is not shown again at every wake, and the first delivery after
    /// failures says that the webhook takes notifications again.
    static func render(_ report: NotifyReport, url: String, quiet: Bool, console: Console, repeats: NotifyRepeats? = nil, now: Date = Date()) {
        var report = report
        var since = ""
        if let repeats {
            switch repeats.decide(report, now: now) {
            case .show:
                break
            case .showAgain(let hidden):
                since = "; still failing: \(Plural.count(hidden, "delivery run")) failed the same way since this was last shown"
            case .hide:
                report.failure = nil
            case .recovered(let failedRuns):
                console.err("aasa-fetch refresh: \(shown(url)) takes notifications again: \(Plural.count(report.delivered, "notification")) delivered after \(Plural.count(failedRuns, "failed delivery run"))")
            }
        }
        if report.dropped > 0 {
            console.diagnostic("notify-dropped", "\(Plural.count(report.dropped, "notification was", "notifications were")) dropped, oldest first: more than \(NotificationQueue.capacity) were waiting for \(shown(url))")
        }
        if let failure = report.failure {
            let event = failure.event
            let name = event.route == .origin ? event.host : "\(event.host) (\(event.route.rawValue))"
            let more = report.pending - 1
            let kept = more > 0 ? "it and \(Plural.count(more, "later one", "later ones")) are kept in the store" : "it is kept in the store"
            console.diagnostic(failure.code, "could not deliver the \(event.kind.rawValue) notification of \(name) to \(shown(url)) (\(Plural.count(failure.attempts, "attempt", "attempts"))): \(failure.message); \(kept) and sent first by the next refresh --notify\(since)")
        }
        if let holder = report.heldBy, !quiet {
            console.err("aasa-fetch refresh: notifications are being delivered by another process (\(holder)); \(Plural.count(report.pending, "queued one is", "queued ones are")) left to it")
        }
    }
}

/// What a long-running refresh (`--watch`, `--worker`) shows of its delivery runs: a webhook that
/// is down would otherwise repeat the same failure at every wake. The same failure (its code and
/// event) is shown again only after ``interval``, with the count of failed runs since; the first
/// run that delivers after failures is announced.
final class NotifyRepeats: Sendable {
    /// How long the same failure stays unrepeated: an hour.
    static let interval: TimeInterval = 3600

    /// What to do with one delivery run's report.
    enum Decision: Equatable {
        /// Show it as it is.
        case show
        /// Show its failure again, shown last ``NotifyRepeats/interval`` ago or more; `hidden` runs
        /// failed the same way since.
        case showAgain(hidden: Int)
        /// Leave its failure out: the same one was shown less than an interval ago.
        case hide
        /// It delivered after `failedRuns` failed runs: say so, then show it as it is.
        case recovered(failedRuns: Int)
    }

    private struct State {
        var key: String?
        var shownAt = Date.distantPast
        var hidden = 0
        var failedRuns = 0
    }

    private let state = Mutex(State())

    /// The decision for `report` at `now`, remembered for the next one.
    func decide(_ report: NotifyReport, now: Date) -> Decision {
        state.withLock { state in
            guard let failure = report.failure else {
                guard state.key != nil, report.delivered > 0 else { return .show }
                let failedRuns = state.failedRuns
                state = State()
                return .recovered(failedRuns: failedRuns)
            }
            let key = "\(failure.code) \(failure.event.id)"
            state.failedRuns += 1
            if key == state.key {
                if now.timeIntervalSince(state.shownAt) < Self.interval {
                    state.hidden += 1
                    return .hide
                }
                let hidden = state.hidden
                state.shownAt = now
                state.hidden = 0
                return hidden > 0 ? .showAgain(hidden: hidden) : .show
            }
            state.key = key
            state.shownAt = now
            state.hidden = 0
            return .show
        }
    }
}

extension AASAFetchCommand.Refresh {
    /// Delivers the queue after a pass, reports what failed on standard error and returns the
    /// delivery run (`nil` without `--notify`); a store failure is thrown. With `repeats`
    /// (`--watch`), a failure is not repeated at every pass (``NotifyRepeats``).
    @discardableResult
    func deliverNotifications(
        _ notifier: Notifier?, store database: any AssociationStore, owner: String, now: @escaping @Sendable () -> Date, stop: StopSignal,
        console: Console, repeats: NotifyRepeats? = nil
    ) async throws -> NotifyReport? {
        guard let notifier else { return nil }
        let report = try await notifier.deliver(store: database, owner: owner, now: now, stop: stop)
        NotifyOptions.render(report, url: notifier.url, quiet: quiet, console: console, repeats: repeats, now: now())
        return report
    }
}
