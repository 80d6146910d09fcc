import Foundation

/// `aasa-fetch report --html`: one self-contained HTML page of a store's hosts.
///
/// The page has no external asset and makes no request (its Content-Security-Policy allows
/// nothing but its own inline style and script). Per host and route: the state, the code, the last
/// change and check, the failure with its fix, every other finding, the entries and apps that need
/// the host, a history timeline (the last ``historyLimit`` events) and the approved file (indented,
/// the first ``fileLimit`` bytes). Each host is a closed `<details>` element, so 10,000 hosts are
/// 10,000 summary lines; a filter box, a state menu and a sort menu work in the browser, and their
/// values live in the URL fragment (`#q=example&state=fails&sort=host`), so a link opens the page
/// filtered; `#open=HOST` (repeatable) opens that host's rows. A row's body is markup made here
/// and kept in a JSON island until the row is opened, so the page loads as one line per host.
/// Every piece of stored text is escaped (``escape(_:attribute:)``); the script reads only
/// attributes and the island, and never builds markup from stored text itself.
public struct StatusPage: Sendable {
    /// History events shown per host (the latest).
    public var historyLimit: Int
    /// Bytes of each approved file shown (its indented text); the rest is cut with a note.
    public var fileLimit: Int

    /// A host's place on the page; its markup waits in ``spool`` (summary, then its body as an
    /// element of the island), so memory holds this much per host, not its markup.
    private struct Row: Sendable {
        var rank: Int
        var host: String
        var route: String
        var offset: Int
        var summaryBytes: Int
        var bodyBytes: Int
    }

    private var rows: [Row] = []
    private var counts: [StoredVerdict.Status: Int] = [:]
    private let spool = SpoolFile(for: "the page")

    /// Creates an empty page.
    public init(historyLimit: Int = 20, fileLimit: Int = 32 * 1024) {
        self.historyLimit = historyLimit
        self.fileLimit = fileLimit
    }

    /// The number of hosts added.
    public var hostCount: Int { rows.count }

    /// Hosts left out because no app needs them any more (``HostState/unneededSince``): they are
    /// not checked, so their state is old news, and refresh removes them after the grace period.
    public private(set) var unneededCount = 0

    /// Why the hosts' markup could not be kept (a temporary folder that is full or missing):
    /// the page cannot be written.
    public var spoolFailure: SpoolFile.Failure? { spool.failure }

    /// The number of hosts in a state.
    public func count(_ status: StoredVerdict.Status) -> Int { counts[status] ?? 0 }

    /// Adds a host: its verdict (with its approved body loaded) and its latest history events,
    /// oldest first. Its markup is made now, so the body need not be kept.
    /// A host no app needs any more is only counted (``unneededCount``).
    public mutating func add(_ verdict: StoredVerdict, history: [HistoryEvent]) {
        guard verdict.state.unneededSince == nil else {
            unneededCount += 1
            return
        }
        counts[verdict.status, default: 0] += 1
        let markup = hostMarkup(verdict, history: Array(history.suffix(historyLimit)))
        let summary = Array(markup.summary.utf8)
        let body = Self.islandElement(markup.body)
        let offset = spool.append(summary + body)
        rows.append(Row(rank: Self.rank(verdict.status), host: verdict.state.key.host, route: verdict.state.key.route.rawValue,
                        offset: offset, summaryBytes: summary.count, bodyBytes: body.count))
    }

    /// The whole page as one string (tests and small pages; ``render(store:generatedAt:version:to:)``
    /// writes it piece by piece). Throws ``SpoolFile/Failure`` when its temporary file failed.
    public func render(store location: String, generatedAt: Date, version: String) throws -> String {
        var bytes: [UInt8] = []
        try render(store: location, generatedAt: generatedAt, version: version) { bytes += $0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes the page to `emit`, piece by piece; hosts ordered by state (failing first), then
    /// host and route. `version` is the tool's, named in the page. Throws ``SpoolFile/Failure``
    /// when the hosts' markup could not be kept or read back (a full temporary folder), or what
    /// `emit` throws.
    public func render(store location: String, generatedAt: Date, version: String, to emit: ([UInt8]) throws -> Void) throws {
        if let failure = spool.failure { throw failure }
        let ordered = rows.sorted { ($0.rank, $0.host, $0.route) < ($1.rank, $1.host, $1.route) }
        let total = rows.count
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="generator" content="aasa-fetch \(Self.escape(version))">
            <title>aasa-fetch status · \(total) host\(total == 1 ? "" : "s")</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            <header>
            <h1>apple-app-site-association status</h1>
            <p class="meta">Store <code>\(Self.escape(location))</code> · generated <time datetime="\(Timestamp.string(generatedAt))">\(Self.displayTime(generatedAt))</time></p>
            <p class="counts">
            """
        html += "<span class=\"n\">\(total) host\(total == 1 ? "" : "s")</span>"
        for status in [StoredVerdict.Status.fails, .associates, .unjudged, .pending] {
            html += " <span class=\"badge s-\(status.rawValue)\">\(Self.mark(status)) \(Self.label(status)) \(count(status))</span>"
        }
        html += "</p>\n"
        if unneededCount > 0 {
            html += "<p class=\"meta\">\(unneededCount) host\(unneededCount == 1 ? " no app needs any more is" : "s no app needs any more are") left out: not checked any more, removed by refresh after the grace period (<code>--prune-after</code>).</p>\n"
        }
        html += """
            <form id="controls" role="search" onsubmit="return false">
            <label>Filter <input id="q" type="search" placeholder="host, code, app ID, entry" autocomplete="off" spellcheck="false"></label>
            <label>State <select id="state"><option value="">every state</option>
            """
        for status in [StoredVerdict.Status.fails, .associates, .unjudged, .pending] {
            html += "<option value=\"\(status.rawValue)\">\(Self.label(status))</option>"
        }
        html += """
            </select></label>
            <label>Sort <select id="sort"><option value="state">by state</option><option value="host">by host</option><option value="change">by last change</option><option value="check">by last check</option></select></label>
            <span id="shown-line"><span id="shown">\(total)</span> of \(total) shown</span>
            </form>
            </header>
            <main>
            <div class="legend"><span>state</span><span>host</span><span>route</span><span>code</span><span>last change (UTC)</span><span>last check (UTC)</span></div>
            <div id="hosts">

            """
        try emit(Array(html.utf8))
        let opening = "<details".utf8.count
        for (index, row) in ordered.enumerated() {
            let summary = try spool.read(at: row.offset, count: row.summaryBytes)
            try emit(Array("<details data-i=\"\(index)\"".utf8) + summary.dropFirst(opening))
        }
        try emit(Array("""
            </div>
            <noscript><p>The details of each host are shown by the page's script; every host's state, code and times are above.</p></noscript>
            <p id="none" hidden>No host matches the filter.</p>
            \(total == 0 ? "<p>The store holds no host yet: record some with a fetch run (<code>aasa-fetch --entitlements App.entitlements</code>).</p>" : "")
            </main>
            <footer>Made by aasa-fetch \(Self.escape(version)) from the store; nothing on this page is fetched from anywhere.</footer>
            <script type="application/json" id="bodies">[
            """.utf8))
        for (index, row) in ordered.enumerated() {
            let body = try spool.read(at: row.offset + row.summaryBytes, count: row.bodyBytes)
            try emit(index == 0 ? body : Array(",\n".utf8) + body)
        }
        try emit(Array("""
            ]</script>
            <script>\(Self.script)</script>
            </body>
            </html>

            """.utf8))
    }

    // MARK: - One host

    /// A time as whole seconds since 1970 for the page's sort menu. A tampered store can hold any
    /// number there: the value is clamped to about ±285 million years, and not a number is 0.
    static func sortKey(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { return "0" }
        return String(Int(max(-9e15, min(9e15, seconds.rounded(.towardZero)))))
    }

    /// A host's summary row (a closed `<details>` with an empty body) and the markup of its body,
    /// which the page's script puts in when the row is opened: 10,000 rows load as 10,000 lines.
    private func hostMarkup(_ verdict: StoredVerdict, history: [HistoryEvent]) -> (summary: String, body: String) {
        let state = verdict.state
        let status = verdict.status
        let last = history.last
        var search = [state.key.host, state.key.route.rawValue, verdict.code ?? "not-fetched", status.rawValue]
        search += verdict.needs.map(\.entry) + verdict.needs.map(\.appID).filter { !$0.isEmpty }
        let changeTime = last.map { Self.sortKey($0.at) } ?? "0"
        let checkTime = state.lastResult.map { Self.sortKey($0.fetchedAt) } ?? "0"
        var html = "<details class=\"h s-\(status.rawValue)\" data-st=\"\(status.rawValue)\""
        html += " data-host=\"\(Self.escape(state.key.host, attribute: true))\" data-route=\"\(Self.escape(state.key.route.rawValue, attribute: true))\""
        html += " data-change=\"\(changeTime)\" data-check=\"\(checkTime)\" data-q=\"\(Self.escape(search.joined(separator: " ").lowercased(), attribute: true))\">"
        html += "<summary>"
        html += "<span class=\"st\">\(Self.mark(status)) \(Self.label(status))</span>"
        html += "<span class=\"host\">\(Self.escape(state.key.host))</span>"
        html += "<span class=\"route\">\(Self.escape(state.key.route.rawValue))</span>"
        html += "<span class=\"code\">\(Self.escape(verdict.code ?? "—"))</span>"
        if let last {
            html += "<span class=\"change\"><span class=\"k k-\(last.kind.rawValue)\">\(last.kind.rawValue)</span> \(Self.displayTime(last.at, compact: true))</span>"
        } else {
            html += "<span class=\"change\">no change yet</span>"
        }
        html += "<span class=\"check\">\(state.lastResult.map { Self.displayTime($0.fetchedAt, compact: true) } ?? "never")</span>"
        html += "</summary><div class=\"body\"></div></details>\n"
        let summary = html
        html = ""

        // The outcome: the failure with its fix, or what was served.
        if let reason = verdict.reason, !reason.isEmpty {
            html += "<p class=\"why\">\(Self.escape(reason))</p>"
        } else if status == .pending {
            html += "<p class=\"why\">Not downloaded yet: the next refresh fetches it.</p>"
        }
        if let fix = verdict.fix {
            html += "<p class=\"fix\"><b>fix</b> \(Self.escape(fix))</p>"
        }
        if status == .unjudged {
            html += "<p class=\"note\">No app ID is recorded for this host, so whether an app is listed cannot be judged (record it with <code>--app-id</code>).</p>"
        }
        let others = verdict.findings.filter { !($0.code == verdict.code && $0.severity == .error && $0.fix == verdict.fix) }
        if !others.isEmpty {
            html += "<ul class=\"findings\">"
            for finding in others {
                html += "<li class=\"sev-\(finding.severity.rawValue)\"><span class=\"sev\">\(finding.severity.rawValue)</span> <code>\(Self.escape(finding.code))</code> \(Self.escape(finding.message))"
                if let fix = finding.fix { html += "<br><b>fix</b> \(Self.escape(fix))" }
                html += "</li>"
            }
            html += "</ul>"
        }

        // Facts.
        html += "<dl>"
        if let result = state.lastResult {
            let status = result.httpStatus.map { "HTTP \($0)" } ?? "no HTTP answer"
            html += "<dt>last check</dt><dd>\(Self.timeTag(result.fetchedAt)) · \(Self.escape(status)) · <code>\(Self.escape(result.url))</code></dd>"
        }
        html += "<dt>approved file</dt><dd>"
        if let size = state.approvedSize {
            html += "\(size) bytes, last confirmed \(state.approvedAt.map(Self.timeTag) ?? "?")"
        } else {
            html += "none yet"
        }
        html += "</dd>"
        html += "<dt>failures in a row</dt><dd>\(state.consecutiveFailures)</dd>"
        html += "<dt>next check</dt><dd>\(Self.timeTag(state.nextCheck))</dd>"
        let entries = Self.entries(verdict.needs)
        if !entries.isEmpty {
            html += "<dt>needed by</dt><dd><ul class=\"needs\">"
            for (entry, apps) in entries {
                html += "<li><code>\(Self.escape(entry))</code>"
                if !apps.isEmpty { html += " for " + apps.map { "<code>\(Self.escape($0))</code>" }.joined(separator: ", ") }
                html += "</li>"
            }
            html += "</ul></dd>"
        }
        html += "</dl>"

        // History.
        html += "<h3>History</h3>"
        if history.isEmpty {
            html += "<p class=\"note\">No change recorded.</p>"
        } else {
            if history.count >= historyLimit {
                html += "<p class=\"note\">The last \(historyLimit) events; <code>aasa-fetch show \(Self.escape(state.key.host))</code> lists more.</p>"
            }
            html += "<ol class=\"timeline\">"
            for event in history.reversed() {
                html += "<li>\(Self.timeTag(event.at)) <span class=\"k k-\(event.kind.rawValue)\">\(event.kind.rawValue)</span> \(Self.eventText(event))</li>"
            }
            html += "</ol>"
        }

        // The approved file.
        if let body = state.approvedBody {
            var text = Self.indented(body)
            var cut = ""
            if text.utf8.count > fileLimit {
                text = String(decoding: text.utf8.prefix(fileLimit), as: UTF8.self)
                cut = "<p class=\"note\">Only the first \(fileLimit / 1024) KiB are shown; <code>aasa-fetch export</code> writes the whole file.</p>"
            }
            html += "<details class=\"file\"><summary>Approved file · \(body.count) bytes · confirmed \(state.approvedAt.map(Self.timeTag) ?? "?")</summary><pre>\(Self.escape(text))</pre>\(cut)</details>"
        }
        return (summary, html)
    }

    /// A body as an element of the JSON array of strings inside `<script type="application/json">`
    /// (the island): every `<` written `\u003c`, so no text can close the element; the script
    /// parses it on first use.
    static func islandElement(_ body: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for byte in ReportJSONWriter.quoted(body).utf8 {
            if byte == UInt8(ascii: "<") { bytes += Array("\\u003c".utf8) } else { bytes.append(byte) }
        }
        return bytes
    }

    private static func eventText(_ event: HistoryEvent) -> String {
        let detail = event.detail
        var text = ""
        switch event.kind {
        case .broke, .failed:
            text = "<code>\(escape(detail.code ?? "?"))</code> \(escape(detail.reason ?? ""))"
            if let was = detail.previousCode { text += " (was <code>\(escape(was))</code>)" }
            if event.kind == .broke { text += "; the last approved file is kept" }
        case .approved:
            text = detail.previousCode.map { "was <code>\(escape($0))</code>" } ?? "first approved file"
        case .associationLost, .associationGained:
            text = escape(detail.reason ?? "")
            if let entry = detail.entry { text += " (<code>\(escape(entry))</code>)" }
        case .changed:
            let changes = detail.changes ?? []
            text = changes.isEmpty ? "the file changed" : "<ul>" + changes.map {
                "<li><code>\(escape($0.kind))</code> \(escape($0.description))</li>"
            }.joined() + "</ul>"
        }
        return text
    }

    /// Entries in the order first needed, each with its app IDs.
    private static func entries(_ needs: [EntryNeed]) -> [(String, [String])] {
        var order: [String] = []
        var apps: [String: [String]] = [:]
        for need in needs {
            if apps[need.entry] == nil {
                order.append(need.entry)
                apps[need.entry] = []
            }
            if !need.appID.isEmpty, apps[need.entry]?.contains(need.appID) == false { apps[need.entry]?.append(need.appID) }
        }
        return order.map { ($0, apps[$0] ?? []) }
    }

    // MARK: - Text

    /// Text made safe for HTML text (and, with `attribute`, for a double-quoted attribute value):
    /// `& < >` (and `"`) as character references; control characters, and the bidirectional
    /// controls that could reorder what a reader sees, as visible `\u{…}` escapes.
    public static func escape(_ text: String, attribute: Bool = false) -> String {
        // Most text (host names, codes, times) has nothing to escape.
        if !text.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 < 0x20 || $0 >= 0x7F }) {
            return text
        }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where attribute: out += "&quot;"
            case "\n", "\t": out.unicodeScalars.append(scalar)
            default:
                let value = scalar.value
                if value < 0x20 || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value)
                    || (0x2066...0x2069).contains(value) || value == 0x200E || value == 0x200F {
                    out += "\\u{\(String(value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// An approved body for reading: JSON indented by two spaces in source order (keys as written,
    /// duplicates kept, numbers as written); anything else as UTF-8 text.
    static func indented(_ body: [UInt8]) -> String {
        guard let document = try? JSONParser.parse(body) else { return String(decoding: body, as: UTF8.self) }
        var out = ""
        write(document.root, indent: 0, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, indent: Int, into out: inout String) {
        let pad = String(repeating: "  ", count: indent + 1)
        let close = String(repeating: "  ", count: indent)
        switch value.kind {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let number): out += number.text
        case .string(let string): out += ReportJSONWriter.quoted(string)
        case .array(let elements):
            guard !elements.isEmpty else { out += "[]"; return }
            if elements.allSatisfy({ if case .string = $0.kind { true } else { false } }), elements.count <= 4 {
                out += "[" + elements.map { $0.stringValue.map(ReportJSONWriter.quoted) ?? "" }.joined(separator: ", ") + "]"
                return
            }
            out += "[\n"
            for (index, element) in elements.enumerated() {
                out += pad
                write(element, indent: indent + 1, into: &out)
                out += index < elements.count - 1 ? ",\n" : "\n"
            }
            out += close + "]"
        case .object(let members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{\n"
            for (index, member) in members.enumerated() {
                out += pad + ReportJSONWriter.quoted(member.key) + ": "
                write(member.value, indent: indent + 1, into: &out)
                out += index < members.count - 1 ? ",\n" : "\n"
            }
            out += close + "}"
        }
    }

    /// A `<time>` element: `2026-11-21 22:40 UTC`.
    private static func timeTag(_ date: Date) -> String {
        "<time datetime=\"\(Timestamp.string(date))\">\(displayTime(date))</time>"
    }

    /// `2026-11-21 22:40 UTC` (`compact`: without ` UTC`, for the columns, whose heads say it).
    private static func displayTime(_ date: Date, compact: Bool = false) -> String {
        let text = Timestamp.string(date)  // 2026-11-21T22:40:05Z
        guard text.count >= 16 else { return text }
        return String(text.prefix(10)) + " " + String(text.dropFirst(11).prefix(5)) + (compact ? "" : " UTC")
    }

    private static func rank(_ status: StoredVerdict.Status) -> Int {
        switch status {
        case .fails: 0
        case .pending: 1
        case .unjudged: 2
        case .associates: 3
        }
    }

    private static func mark(_ status: StoredVerdict.Status) -> String {
        switch status {
        case .fails: "✘"
        case .associates: "✔"
        case .unjudged: "?"
        case .pending: "…"
        }
    }

    private static func label(_ status: StoredVerdict.Status) -> String {
        switch status {
        case .fails: "fails"
        case .associates: "associates"
        case .unjudged: "unjudged"
        case .pending: "not fetched"
        }
    }

    // MARK: - Style and script

    static let style = """
        :root{color-scheme:light dark;--bg:#fff;--fg:#1d1d1f;--mute:#6e6e73;--line:#d2d2d7;--row:#f5f5f7;--bad:#c1121f;--good:#1a7f37;--warn:#9a6700;--info:#0969da}
        @media (prefers-color-scheme:dark){:root{--bg:#161618;--fg:#f5f5f7;--mute:#a1a1a6;--line:#3a3a3c;--row:#1f1f22;--bad:#ff6b6b;--good:#4ac26b;--warn:#d4a72c;--info:#58a6ff}}
        *{box-sizing:border-box}
        body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;background:var(--bg);color:var(--fg)}
        header{position:sticky;top:0;z-index:1;background:var(--bg);border-bottom:1px solid var(--line);padding:12px 20px 10px}
        h1{font-size:18px;margin:0 0 2px}
        h3{font-size:13px;margin:14px 0 4px;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}
        .meta{margin:0;color:var(--mute)}
        .counts{margin:8px 0}
        .counts .n{font-weight:600;margin-right:6px}
        .badge{display:inline-block;border:1px solid var(--line);border-radius:10px;padding:0 8px;margin-right:4px}
        form{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center}
        input,select{font:inherit;padding:3px 6px;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
        input{width:22em}
        #shown-line{color:var(--mute)}
        main{padding:6px 20px 24px}
        .legend,details.h>summary{display:grid;grid-template-columns:9.5rem minmax(12rem,2fr) 4rem minmax(9rem,1fr) 15rem 9rem;gap:10px;align-items:center;padding:5px 8px}
        .legend{font-size:12px;color:var(--mute);padding-top:4px;padding-bottom:4px;border-bottom:1px solid var(--line)}
        details.h{border-bottom:1px solid var(--line);content-visibility:auto;contain-intrinsic-size:auto 32px}
        details.h>summary{cursor:pointer}
        details.h>summary::-webkit-details-marker{display:none}
        details.h>summary .st::before{content:"\\25B8";display:inline-block;width:1em;color:var(--mute)}
        details.h[open]>summary .st::before{content:"\\25BE"}
        details.h>summary:hover{background:var(--row)}
        details.h[open]>summary{background:var(--row)}
        summary span{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
        .host{font-weight:600}
        .route,.check,.change{color:var(--mute)}
        summary .change{display:flex;align-items:center;gap:6px}
        .code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
        .s-fails .st,.badge.s-fails{color:var(--bad)}
        .s-associates .st,.badge.s-associates{color:var(--good)}
        .s-unjudged .st,.badge.s-unjudged{color:var(--warn)}
        .s-pending .st,.badge.s-pending{color:var(--mute)}
        .st{font-weight:600}
        .body{padding:4px 12px 14px 26px}
        .why{margin:6px 0}
        .fix{margin:6px 0;padding:6px 10px;border-left:3px solid var(--good);background:var(--row)}
        .note{color:var(--mute);margin:4px 0}
        ul.findings{padding-left:18px;margin:6px 0}
        .sev{font-size:11px;text-transform:uppercase;font-weight:600}
        .sev-error .sev{color:var(--bad)}.sev-warning .sev{color:var(--warn)}.sev-info .sev{color:var(--info)}
        dl{display:grid;grid-template-columns:10em 1fr;gap:2px 12px;margin:8px 0}
        dt{color:var(--mute)}dd{margin:0;overflow-wrap:anywhere}
        ul.needs{margin:0;padding-left:16px}
        ol.timeline{list-style:none;margin:0;padding:0 0 0 12px;border-left:2px solid var(--line)}
        ol.timeline>li{margin:0 0 4px;padding-left:8px}
        ol.timeline ul{margin:2px 0;padding-left:18px}
        .k{display:inline-block;font-size:12px;font-weight:600;padding:0 6px;border-radius:8px;border:1px solid currentColor}
        .k-broke,.k-failed,.k-association-lost{color:var(--bad)}
        .k-approved,.k-association-gained{color:var(--good)}
        .k-changed{color:var(--warn)}
        details.file{margin-top:10px}
        details.file>summary{cursor:pointer;color:var(--info);display:list-item}
        pre{background:var(--row);border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:6px 0;max-height:32em;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
        code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
        footer{color:var(--mute);font-size:12px;padding:0 20px 20px}
        @media (max-width:900px){.legend{display:none}details.h>summary{grid-template-columns:9.5rem 1fr 8rem}.route,.change,.check{display:none}}
        """

    static let script = """
        (function () {
          "use strict";
          var list = document.getElementById("hosts");
          var rows = Array.prototype.slice.call(list.children);
          var q = document.getElementById("q"), state = document.getElementById("state"), sort = document.getElementById("sort");
          var shown = document.getElementById("shown"), none = document.getElementById("none");
          var sorted = "state", timer = 0, bodies = null;
          // A row's body is put in when it is first opened (markup made and escaped by aasa-fetch).
          function fill(row) {
            var body = row.querySelector(".body");
            if (!body || body.firstChild) { return; }
            if (bodies === null) { bodies = JSON.parse(document.getElementById("bodies").textContent); }
            body.innerHTML = bodies[Number(row.getAttribute("data-i"))] || "";
          }
          list.addEventListener("toggle", function (event) {
            if (event.target.classList && event.target.classList.contains("h") && event.target.open) { fill(event.target); }
          }, true);
          function num(row, key) { return Number(row.getAttribute("data-" + key)) || 0; }
          function byName(a, b) {
            var x = a.getAttribute("data-host"), y = b.getAttribute("data-host");
            if (x !== y) { return x < y ? -1 : 1; }
            x = a.getAttribute("data-route"); y = b.getAttribute("data-route");
            return x < y ? -1 : (x > y ? 1 : 0);
          }
          var rank = { fails: 0, pending: 1, unjudged: 2, associates: 3 };
          var orders = {
            state: function (a, b) { return (rank[a.getAttribute("data-st")] - rank[b.getAttribute("data-st")]) || byName(a, b); },
            host: byName,
            change: function (a, b) { return (num(b, "change") - num(a, "change")) || byName(a, b); },
            check: function (a, b) { return (num(b, "check") - num(a, "check")) || byName(a, b); }
          };
          function read() {
            var params = new URLSearchParams(location.hash.replace(/^#/, ""));
            q.value = params.get("q") || "";
            state.value = params.get("state") || "";
            sort.value = orders[params.get("sort")] ? params.get("sort") : "state";
            var open = params.getAll("open");
            for (var i = 0; i < rows.length && open.length; i++) {
              if (open.indexOf(rows[i].getAttribute("data-host")) !== -1) { fill(rows[i]); rows[i].open = true; }
            }
          }
          function save() {
            var params = new URLSearchParams();
            if (q.value) { params.set("q", q.value); }
            if (state.value) { params.set("state", state.value); }
            if (sort.value !== "state") { params.set("sort", sort.value); }
            new URLSearchParams(location.hash.replace(/^#/, "")).getAll("open").forEach(function (host) { params.append("open", host); });
            var hash = params.toString();
            try { history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search); } catch (e) { /* a browser that refuses: the fragment stays as it was */ }
          }
          function apply() {
            if (sort.value !== sorted) {
              rows.sort(orders[sort.value]);
              var fragment = document.createDocumentFragment();
              for (var i = 0; i < rows.length; i++) { fragment.appendChild(rows[i]); }
              list.appendChild(fragment);
              sorted = sort.value;
            }
            var needle = q.value.trim().toLowerCase(), wanted = state.value, count = 0;
            for (var j = 0; j < rows.length; j++) {
              var row = rows[j];
              var visible = (!wanted || row.getAttribute("data-st") === wanted) && (!needle || row.getAttribute("data-q").indexOf(needle) !== -1);
              if (row.hidden === visible) { row.hidden = !visible; }
              if (visible) { count++; }
            }
            shown.textContent = String(count);
            none.hidden = count !== 0 || rows.length === 0;
          }
          function changed() { save(); apply(); }
          q.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(changed, 120); });
          state.addEventListener("change", changed);
          sort.addEventListener("change", changed);
          window.addEventListener("hashchange", function () { read(); apply(); });
          read();
          apply();
          document.documentElement.setAttribute("data-ready", "1");
        })();
        """
}
