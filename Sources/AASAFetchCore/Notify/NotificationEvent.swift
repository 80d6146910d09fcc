import Foundation

/// One change a `refresh --notify URL` posts to a webhook: a history event of one host and route,
/// with what it was before and after, its code and the fix.
///
/// Built when the download is recorded (``NotificationEvent/events(for:result:previousCode:needs:)``)
/// and kept in the store's queue of undelivered notifications in the same transaction, so it is
/// delivered even when the process stops before sending it. The JSON a webhook receives is
/// ``NotificationEvent/json`` (`docs/schema/notification.schema.json`); `--notify-format slack`
/// sends ``NotificationEvent/slackText`` as `{"text": …}`.
public struct NotificationEvent: Sendable, Hashable, Codable {
    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// A unique identifier of the event (a UUID), the same on every delivery attempt, so a
    /// receiver can drop a duplicate (delivery is at least once).
    public var id: String
    /// The kind of change (`broke`, `association-lost`, `changed`, `approved`, `failed`,
    /// `association-gained`).
    public var kind: HistoryKind
    /// Whether the change means an association broke (`broke`, `association-lost`).
    public var breaking: Bool
    /// The ASCII host.
    public var host: String
    /// The route (`origin` or `cdn`).
    public var route: Route
    /// When the change was seen (the download's time).
    public var time: Date
    /// The host's code before the change: the previous download's code (`nil` for a first
    /// download), or for an association event `ok`/`app-not-listed` for the app concerned.
    public var before: String?
    /// The host's code after the change, in the same terms as ``before``.
    public var after: String
    /// The code of the change itself: the failure code for `broke`/`failed`, `app-not-listed`
    /// for `association-lost`, `ok` otherwise.
    public var code: String
    /// One line on what happened.
    public var reason: String
    /// What to change, when there is a clear fix (failures and lost associations).
    public var fix: String?
    /// The HTTP status of the download, when a response arrived.
    public var httpStatus: Int?
    /// The app IDs affected: the app concerned by an association event, else every app ID the
    /// store knows needs the host (sorted; empty when none is known).
    public var appIDs: [String]
    /// The entry concerned by an association event (`applinks:example.com`).
    public var entry: String?
    /// For `changed`: the semantic changes of the file (``AASADiff``).
    public var changes: [AASAChange]?

    /// Creates an event.
    public init(
        id: String = UUID().uuidString.lowercased(), kind: HistoryKind, host: String, route: Route, time: Date,
        before: String?, after: String, code: String, reason: String, fix: String? = nil, httpStatus: Int? = nil,
        appIDs: [String] = [], entry: String? = nil, changes: [AASAChange]? = nil
    ) {
        self.id = id
        self.kind = kind
        breaking = kind.isBreaking
        self.host = host
        self.route = route
        self.time = time
        self.before = before
        self.after = after
        self.code = code
        self.reason = reason
        self.fix = fix
        self.httpStatus = httpStatus
        self.appIDs = appIDs
        self.entry = entry
        self.changes = changes
    }

    /// The events to notify for the history events of one recorded download.
    ///
    /// - Parameters:
    ///   - events: the history events the download recorded.
    ///   - result: the download.
    ///   - previousCode: the code of the host's download before it (`nil`: first download).
    ///   - needs: the entries and app IDs that need the host.
    public static func events(
        for events: [HistoryEvent], result: HostFetchResult, previousCode: String?, needs: [EntryNeed]
    ) -> [NotificationEvent] {
        let apps = Array(Set(needs.map(\.appID).filter { !$0.isEmpty })).sorted()
        let failureFix = result.findings.first { $0.code == result.code && $0.severity == .error }?.fix
        return events.map { event in
            let detail = event.detail
            switch event.kind {
            case .broke, .failed:
                return NotificationEvent(
                    kind: event.kind, host: event.key.host, route: event.key.route, time: event.at, before: previousCode,
                    after: result.code, code: detail.code ?? result.code, reason: detail.reason ?? result.reason, fix: failureFix,
                    httpStatus: detail.httpStatus ?? result.httpStatus, appIDs: apps)
            case .approved:
                return NotificationEvent(
                    kind: .approved, host: event.key.host, route: event.key.route, time: event.at, before: previousCode,
                    after: "ok", code: "ok", reason: detail.reason ?? result.reason, httpStatus: detail.httpStatus ?? result.httpStatus,
                    appIDs: apps)
            case .changed:
                let changes = detail.changes ?? []
                let summary = changes.map(\.description).joined(separator: "; ")
                return NotificationEvent(
                    kind: .changed, host: event.key.host, route: event.key.route, time: event.at, before: previousCode,
                    after: "ok", code: "ok", reason: summary.isEmpty ? "the file changed" : "the file changed: \(summary)",
                    httpStatus: detail.httpStatus ?? result.httpStatus, appIDs: apps, changes: changes)
            case .associationLost, .associationGained:
                let lost = event.kind == .associationLost
                let appID = detail.appID ?? ""
                let service = detail.service ?? .applinks
                return NotificationEvent(
                    kind: event.kind, host: event.key.host, route: event.key.route, time: event.at,
                    before: lost ? "ok" : "app-not-listed", after: lost ? "app-not-listed" : "ok", code: lost ? "app-not-listed" : "ok",
                    reason: detail.reason ?? "", fix: lost ? Self.listFix(appID: appID, service: service) : nil,
                    httpStatus: detail.httpStatus ?? result.httpStatus, appIDs: appID.isEmpty ? apps : [appID], entry: detail.entry)
            }
        }
    }

    /// The fix for an app that is not listed (as a live run words it).
    public static func listFix(appID: String, service: Service) -> String {
        service == .applinks
            ? "add \"\(appID)\" to the appIDs of a detail under applinks.details"
            : "add \"\(appID)\" to \(service.name).apps"
    }

    /// The JSON document a webhook receives (``ReportJSONWriter``, compact, every key present).
    public var json: [UInt8] {
        (try? ReportJSONWriter(style: .compact).encode(self)) ?? Array("{}".utf8)
    }

    /// `host`, or `host (cdn)`.
    var name: String { route == .origin ? host : "\(host) (\(route.rawValue))" }

    /// One line for Slack's mrkdwn: a mark, the host in bold, the change, the reason and the fix.
    /// `&`, `<` and `>` are escaped as Slack requires, and line breaks and other control
    /// characters become spaces, so stored text can neither format a link nor break the line.
    public var slackText: String {
        let mark = switch kind {
        case .broke, .associationLost: ":x:"
        case .failed: ":warning:"
        case .approved, .associationGained: ":white_check_mark:"
        case .changed: ":pencil2:"
        }
        var line = "\(mark) *\(Self.slackEscaped(name))* \(kind.rawValue)"
        switch kind {
        case .broke, .failed:
            line += ": \(Self.slackEscaped(code))" + (before.map { " (was \(Self.slackEscaped($0)))" } ?? "")
        case .approved:
            line += before.map { " (was \(Self.slackEscaped($0)))" } ?? " (first approved file)"
        default:
            break
        }
        if !reason.isEmpty { line += " — \(Self.slackEscaped(reason))" }
        if let fix { line += " — fix: \(Self.slackEscaped(fix))" }
        return line
    }

    /// Text escaped for Slack's mrkdwn (`&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`), with control
    /// characters (line breaks included) as spaces.
    public static func slackEscaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}" {
                    out += " "
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// The Slack-compatible document for a batch of events: `{"text": "line\nline…"}`, one line
    /// per change.
    public static func slackJSON(_ events: [NotificationEvent]) -> [UInt8] {
        struct Message: Encodable { var text: String }
        let text = events.map(\.slackText).joined(separator: "\n")
        return (try? ReportJSONWriter(style: .compact).encode(Message(text: text))) ?? Array("{}".utf8)
    }
}
