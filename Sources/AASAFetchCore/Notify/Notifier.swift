import CurlTransport
import Foundation

/// The body a webhook receives: one ``NotificationEvent`` as JSON, or Slack's `{"text": …}`.
public enum NotifyFormat: String, Sendable, CaseIterable {
    /// The event document (`docs/schema/notification.schema.json`).
    case json
    /// A Slack-compatible incoming-webhook message, `{"text": "…"}` (one line per change).
    case slack
}

/// Why a notification could not be delivered in this run (it stays queued).
public struct NotifyFailure: Sendable, Hashable {
    /// `notify-failed` (no answer, or 408/429/5xx after every attempt) or `notify-rejected` (the
    /// receiver refused it: another 4xx, or a redirect, which is never followed).
    public var code: String
    /// What happened on the last attempt, e.g. `HTTP 500` or `connect-failure: …`.
    public var message: String
    /// The event that failed.
    public var event: NotificationEvent
    /// Attempts made in this run.
    public var attempts: Int
}

/// What one delivery run did (``Notifier/deliver(store:owner:now:stop:)``).
public struct NotifyReport: Sendable {
    /// Notifications delivered (answered 2xx) and removed from the queue.
    public var delivered = 0
    /// Notifications still queued after the run (an estimate when another process delivers).
    public var pending = 0
    /// Notifications dropped because the queue was full (reported once).
    public var dropped = 0
    /// The failure that stopped the run; later notifications wait behind it, in order.
    public var failure: NotifyFailure?
    /// Another process delivering the queue right now (its lease owner); nothing was sent.
    public var heldBy: String?

    /// Creates an empty report.
    public init() {}
}

extension NotifyReport: Encodable {
    /// The JSON shape (`notifications` of `refresh --json`): `{"delivered","pending","dropped",
    /// "heldBy","failure":{"code","message","attempts","event":{"id","kind","host","route"}}|null}`.
    struct Record: Encodable {
        struct Failure: Encodable {
            struct Event: Encodable {
                var id: String
                var kind: HistoryKind
                var host: String
                var route: Route
            }
            var code: String
            var message: String
            var attempts: Int
            var event: Event
        }
        var delivered: Int
        var pending: Int
        var dropped: Int
        var heldBy: String?
        var failure: Failure?
    }

    /// Encodes ``Record``.
    public func encode(to encoder: any Encoder) throws {
        let failure = self.failure.map { failure in
            Record.Failure(code: failure.code, message: failure.message, attempts: failure.attempts,
                           event: .init(id: failure.event.id, kind: failure.event.kind, host: failure.event.host, route: failure.event.route))
        }
        try Record(delivered: delivered, pending: pending, dropped: dropped, heldBy: heldBy, failure: failure).encode(to: encoder)
    }
}

/// Delivers the store's queue of notifications to one webhook, oldest first, through the
/// transport (libcurl): a `POST` per event, redirects never followed, bounded attempts.
///
/// A notification is removed from the queue only after a 2xx answer, so none is lost; the queue is
/// leased batch by batch in the store (one deliverer at a time, in order), so two processes never
/// send one twice at once. Delivery is at least once: a process killed between the answer and
/// the removal sends that event again next time (``NotificationEvent/id`` tells duplicates apart).
public struct Notifier: Sendable {
    /// The transport.
    public let transport: any HTTPTransferring
    /// The webhook's `https://` or `http://` URL.
    public let url: String
    /// The body's format.
    public let format: NotifyFormat
    /// A PEM file of CA certificates to trust instead of the system store (`--notify-cacert`).
    public let caFile: String?
    /// Whether the webhook may be on a loopback, private or reserved address.
    public let allowPrivateAddresses: Bool
    /// The `User-Agent` header.
    public let userAgent: String
    /// Attempts per notification in one run (1 + retries).
    public var attempts = 3
    /// Pauses before the 2nd, 3rd, … attempt, unless the receiver's `Retry-After` asks for another.
    public var retryDelays: [TimeInterval] = [1, 4]
    /// The longest pause taken, whatever `Retry-After` asks.
    public var retryAfterCap: TimeInterval = 30
    /// Seconds to connect, and for a whole attempt.
    public var connectTimeout: TimeInterval = 5
    /// Seconds for a whole attempt.
    public var maxTime: TimeInterval = 10
    /// Notifications leased per claim.
    public var batchSize = 10

    /// Creates a notifier.
    public init(
        transport: any HTTPTransferring, url: String, format: NotifyFormat = .json, caFile: String? = nil,
        allowPrivateAddresses: Bool = false, userAgent: String = "aasa-fetch"
    ) {
        self.transport = transport
        self.url = url
        self.format = format
        self.caFile = caFile
        self.allowPrivateAddresses = allowPrivateAddresses
        self.userAgent = userAgent
    }

    /// Why `text` cannot be a webhook URL (`nil` when it can): an absolute `https://` or `http://`
    /// URL with a host, no user name or password, no fragment, and no space or control character.
    public static func problem(with text: String) -> String? {
        if text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            return "a URL has no spaces or control characters"
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            return "not a URL"
        }
        guard scheme == "https" || scheme == "http" else { return "only https:// and http:// URLs are supported" }
        guard let host = components.host, !host.isEmpty else { return "the URL has no host" }
        if components.user != nil || components.password != nil { return "a user name or password in the URL is not supported" }
        if components.fragment != nil { return "a URL fragment (#…) is never sent; leave it out" }
        // What libcurl refuses, said now rather than by every delivery (the queue grew behind it).
        // (The text itself: `URLComponents.host` gives a Punycode name decoded.)
        let authority = text.split(separator: "://", maxSplits: 1).last?.prefix { $0 != "/" && $0 != "?" } ?? ""
        if authority.utf8.contains(where: { $0 >= 0x80 }) { return "write the host in ASCII (Punycode: xn--…)" }
        if let port = components.port, !(1...65535).contains(port) { return "the port must be between 1 and 65535" }
        return nil
    }

    /// The seconds between two attempts (lease length for one notification's worst case).
    var worstCaseSeconds: TimeInterval {
        let pauses = (0..<max(0, attempts - 1)).map { _ in retryAfterCap }.reduce(0, +)
        return Double(max(1, attempts)) * (connectTimeout + maxTime) + pauses
    }

    /// Delivers queued notifications, oldest first, until the queue is empty, one fails (it and
    /// everything after it stay queued, in order), another process is delivering, or `stop` fires.
    ///
    /// - Throws: ``StoreError`` when the store fails.
    public func deliver(
        store: any AssociationStore, owner: String, now: @escaping @Sendable () -> Date, stop: StopSignal
    ) async throws -> NotifyReport {
        var report = NotifyReport()
        let lease = Double(max(1, batchSize)) * worstCaseSeconds + 60
        // A bound on one run, whatever the store answers: the queue's capacity and a batch.
        var claims = 0
        while !stop.isStopped && claims <= NotificationQueue.capacity / max(1, batchSize) + 1 {
            claims += 1
            let claim = try await store.claimNotifications(now: now(), limit: batchSize, leaseSeconds: lease, owner: owner)
            report.dropped += claim.dropped
            report.pending = claim.pending
            if let holder = claim.heldBy {
                report.heldBy = holder
                return report
            }
            guard !claim.notifications.isEmpty else {
                // Nothing left (a row this version cannot read stays leased until now: free it).
                if claims > 1 || claim.pending > 0 { try await store.releaseNotifications(owner: owner, failed: nil, error: nil) }
                report.pending = claim.pending
                return report
            }
            var acknowledged = 0
            for item in claim.notifications {
                let outcome = await send(item.event, stop: stop)
                switch outcome {
                case .delivered:
                    report.delivered += 1
                    guard try await store.acknowledgeNotification(id: item.id, owner: owner) else {
                        // Our lease lapsed and another process took the queue over (or the row was
                        // dropped from a full queue): leave the rest to it.
                        try await store.releaseNotifications(owner: owner, failed: nil, error: nil)
                        report.pending = claim.pending - acknowledged
                        return report
                    }
                    acknowledged += 1
                case .stopped:
                    try await store.releaseNotifications(owner: owner, failed: nil, error: nil)
                    report.pending = claim.pending - acknowledged
                    return report
                case .failed(let failure):
                    try await store.releaseNotifications(owner: owner, failed: item.id, error: "\(failure.code): \(failure.message)")
                    report.failure = failure
                    report.pending = claim.pending - acknowledged
                    return report
                }
            }
            report.pending = claim.pending - acknowledged
        }
        try await store.releaseNotifications(owner: owner, failed: nil, error: nil)
        return report
    }

    /// What sending one event gave.
    enum Outcome: Sendable {
        case delivered
        case failed(NotifyFailure)
        case stopped
    }

    /// A webhook URL as messages show it: scheme, host and port, the path (which often holds the
    /// webhook's secret, and standard error ends up in cron mail) as `/…`.
    public static func shown(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return "the webhook" }
        let port = components.port.map { ":\($0)" } ?? ""
        let path = (components.path.isEmpty || components.path == "/") ? "" : "/…"
        return "\(scheme)://\(host)\(port)\(path)"
    }

    /// The request for one event.
    func request(for event: NotificationEvent) -> TransferRequest {
        let body = format == .slack ? NotificationEvent.slackJSON([event]) : event.json
        var request = TransferRequest(
            url: url, headers: [], userAgent: userAgent, connectTimeout: connectTimeout, maxTime: maxTime,
            maxBodyBytes: Self.answerBytesKept, caFile: caFile, allowPrivateAddresses: allowPrivateAddresses)
        // The answer's status decides; its body is only quoted, so a long one is cut, not failed.
        request.failsOnLargeBody = false
        request.body = TransferBody(bytes: body, contentType: "application/json")
        request.allowPlainHTTP = true
        return request
    }

    /// Sends one event: up to ``attempts`` tries; 2xx succeeds; 408, 429, 5xx and transfer
    /// failures that may pass (DNS, connection, timeout, broken transfer) are tried again after
    /// ``retryDelays`` or the receiver's `Retry-After` (at most ``retryAfterCap``); any other
    /// answer fails at once.
    func send(_ event: NotificationEvent, stop: StopSignal) async -> Outcome {
        let request = request(for: event)
        var last = ""
        for attempt in 1...max(1, attempts) {
            var pause = retryDelays.isEmpty ? 1 : retryDelays[min(attempt - 1, retryDelays.count - 1)]
            // In a task of its own, cancelled by a stop: a signal during a slow receiver's answer
            // ended the run only after the attempt's whole --max-time.
            let transport = self.transport
            let attemptTask = Task { () -> Result<TransferResponse, TransferFailure> in
                do throws(TransferFailure) { return .success(try await transport.perform(request)) } catch { return .failure(error) }
            }
            let handler = stop.whenStopped { attemptTask.cancel() }
            let answer = await attemptTask.value
            stop.removeHandler(handler)
            do {
                let response = try answer.get()
                switch response.status {
                case 200..<300:
                    return .delivered
                case 300..<400:
                    // Shown as the webhook's own URL is: its path may hold the same secret.
                    let target = response.redirectURL.map { " to \(Self.shown($0))" } ?? ""
                    return .failed(NotifyFailure(code: "notify-rejected", message: "HTTP \(response.status) redirect\(target), which is never followed; give the final URL",
                                                 event: event, attempts: attempt))
                case 408, 429, 500...:
                    last = "HTTP \(response.status)\(Self.snippet(response.body))"
                    if let asked = Self.retryAfter(response.headers, now: Date()) { pause = asked }
                default:
                    return .failed(NotifyFailure(code: "notify-rejected", message: "HTTP \(response.status)\(Self.snippet(response.body))",
                                                 event: event, attempts: attempt))
                }
            } catch {
                switch error.kind {
                case .cancelled:
                    return .stopped
                case .dnsFailure, .connectFailure, .timeout, .transferFailure, .invalidResponse, .descriptorsExhausted, .threadsExhausted:
                    last = error.description
                default:
                    // A refused address, TLS, a bad URL: trying again gives the same answer.
                    return .failed(NotifyFailure(code: "notify-failed", message: error.description, event: event, attempts: attempt))
                }
            }
            guard attempt < attempts else { break }
            if await stop.sleep(for: .milliseconds(Int(min(max(0, pause), retryAfterCap) * 1000))) { return .stopped }
        }
        return .failed(NotifyFailure(code: "notify-failed", message: last, event: event, attempts: max(1, attempts)))
    }

    /// The most bytes of a receiver's answer kept (its first 200 characters are quoted).
    static let answerBytesKept = 64 * 1024

    /// The first 200 characters of an answer's body, on one line, for the warning.
    static func snippet(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
            .unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : String($0) }.joined()
            .trimmingCharacters(in: .whitespaces)
        return text.isEmpty ? "" : ": \(text)"
    }

    /// The pause a `Retry-After` header asks for: seconds, or an HTTP date (from `now`).
    static func retryAfter(_ headers: [(name: String, value: String)], now: Date) -> TimeInterval? {
        guard let value = headers.last(where: { $0.name.lowercased() == "retry-after" })?.value.trimmingCharacters(in: .whitespaces) else {
            return nil
        }
        if let seconds = Int(value), seconds >= 0 { return TimeInterval(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
