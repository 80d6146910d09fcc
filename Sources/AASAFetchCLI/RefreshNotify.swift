import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation

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
    static func shown(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return "the webhook" }
        let port = components.port.map { ":\($0)" } ?? ""
        let path = (components.path.isEmpty || components.path == "/") ? "" : "/…"
        return "\(scheme)://\(host)\(port)\(path)"
    }

    /// Says on standard error what a delivery run could not do: a notification that failed
    /// (`notify-failed`, `notify-rejected`), notifications dropped from a full queue
    /// (`notify-dropped`), and — unless `quiet` — a queue left to another process. Always shown
    /// (also with `--quiet`): cron mails standard error, and a change nobody heard of is what
    /// `--notify` is for.
    static func render(_ report: NotifyReport, url: String, quiet: Bool, console: Console) {
        if report.dropped > 0 {
            console.diagnostic("notify-dropped", "\(Plural.count(report.dropped, "notification was", "notifications were")) dropped, oldest first: more than \(NotificationQueue.capacity) were waiting for \(shown(url))")
        }
        if let failure = report.failure {
            let event = failure.event
            let name = event.route == .origin ? event.host : "\(event.host) (\(event.route.rawValue))"
            let more = report.pending - 1
            let kept = more > 0 ? "it and \(Plural.count(more, "later one", "later ones")) are kept in the store" : "it is kept in the store"
            console.diagnostic(failure.code, "could not deliver the \(event.kind.rawValue) notification of \(name) to \(shown(url)) (\(Plural.count(failure.attempts, "attempt", "attempts"))): \(failure.message); \(kept) and sent first by the next refresh --notify")
        }
        if let holder = report.heldBy, !quiet {
            console.err("aasa-fetch refresh: notifications are being delivered by another process (\(holder)); \(Plural.count(report.pending, "queued one is", "queued ones are")) left to it")
        }
    }
}

extension AASAFetchCommand.Refresh {
    /// Delivers the queue after a pass and reports what failed; a store failure is thrown.
    func deliverNotifications(
        _ notifier: Notifier?, store database: any AssociationStore, owner: String, now: @escaping @Sendable () -> Date, stop: StopSignal, console: Console
    ) async throws {
        guard let notifier else { return }
        let report = try await notifier.deliver(store: database, owner: owner, now: now, stop: stop)
        NotifyOptions.render(report, url: notifier.url, quiet: quiet, console: console)
    }
}
