import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// The pieces behind `refresh --metrics` and `report --html`: the exposition format and its
/// escaping, the atomic file, the verdict judged again from a stored response, the page's escaping.
struct OperationsOutputTests {
    // MARK: - Exposition

    @Test func expositionEscapesHostileLabelValuesAndHelpAndReadsBack() throws {
        let hostile = "evil\\host\"\n{x=\"1\"} 2\n# HELP"
        var out = PrometheusExposition()
        out.family("aasa_test_info", type: .gauge, help: "a help with \\ and\na line feed")
        out.sample("aasa_test_info", ["host": hostile, "code": "ok"], 1)
        out.sample("aasa_test_info", ["host": "plain.example", "code": "c\"o\\de"], 0.25)
        out.family("aasa_test_total", type: .counter, help: "plain")
        out.sample("aasa_test_total", 1_800_000_000)
        #expect(out.text.contains(#"host="evil\\host\"\n{x=\"1\"} 2\n# HELP""#))
        #expect(out.text.contains("# HELP aasa_test_info a help with \\\\ and\\na line feed\n"))
        // One line per sample: the hostile line feed did not start a line.
        #expect(out.text.split(separator: "\n").count == 7)
        let families = try PrometheusTextParser.parse(out.text)
        #expect(families.map(\.name) == ["aasa_test_info", "aasa_test_total"])
        #expect(families[0].help == "a help with \\ and\na line feed")
        #expect(families[0].type == "gauge" && families[1].type == "counter")
        #expect(families[0].value(["host": hostile]) == 1)
        #expect(families[0].value(["code": "c\"o\\de"]) == 0.25)
        #expect(families[1].samples.first?.value == 1_800_000_000)
        #expect(families[1].samples.first?.labels.isEmpty == true)
    }

    /// A spool read back as text in pieces never cuts a character: every piece size gives the
    /// text written (a piece that ended inside "—" decoded as U+FFFD).
    @Test func aSpoolReadAsTextKeepsEveryCharacter() throws {
        let text = "ok — bücher.example 例子 🚀 \"…\"\n" + String(repeating: "é", count: 100)
        let spool = SpoolFile(for: "a test")
        spool.append(Array(text.utf8))
        for size in 1...9 {
            var pieces: [String] = []
            try spool.forEachText(size) { pieces.append($0) }
            #expect(pieces.joined() == text, "pieces of \(size) bytes")
            #expect(!pieces.contains { $0.contains("\u{FFFD}") })
        }
    }

    /// Times are written in the proleptic Gregorian calendar (`1500-01-01` was `1499-12-23`, read
    /// in the Julian one), and outside the years 0001 to 9999 as the nearest end of that range.
    @Test func timestampsAreProlepticGregorianAndBounded() {
        let cases: [(TimeInterval, String)] = [
            (0, "1970-01-01T00:00:00Z"), (-1, "1969-12-31T23:59:59Z"), (951_827_445.9, "2000-02-29T12:30:45Z"),
            (-14_831_769_600, "1500-01-01T00:00:00Z"), (-12_220_243_200, "1582-10-04T00:00:00Z"),
            (-62_135_596_800, "0001-01-01T00:00:00Z"), (253_402_300_799, "9999-12-31T23:59:59Z"),
            (1e300, "9999-12-31T23:59:59Z"), (-1e300, "0001-01-01T00:00:00Z"), (.infinity, "9999-12-31T23:59:59Z"),
            (.nan, "1970-01-01T00:00:00Z"), (1_800_000_000, "2027-01-15T08:00:00Z"),
        ]
        for (seconds, text) in cases {
            #expect(Timestamp.string(Date(timeIntervalSince1970: seconds)) == text, "\(seconds)")
        }
        // Every day of four centuries round-trips through the parser.
        for day in stride(from: 0, to: 146_097, by: 7) {
            let date = Date(timeIntervalSince1970: TimeInterval(day) * 86_400 + 3_723)
            #expect(Timestamp.parse(Timestamp.string(date)) == date, "day \(day)")
        }
    }

    @Test func expositionValues() {
        #expect(PrometheusExposition.format(0) == "0")
        #expect(PrometheusExposition.format(1_800_000_000) == "1800000000")
        #expect(PrometheusExposition.format(1_800_000_000.5) == "1800000000.5")
        #expect(PrometheusExposition.format(0.001) == "0.001")
        #expect(PrometheusExposition.format(-3) == "-3")
        #expect(PrometheusExposition.format(.nan) == "NaN")
        #expect(PrometheusExposition.format(.infinity) == "+Inf")
        #expect(PrometheusExposition.format(-.infinity) == "-Inf")
        #expect(PrometheusExposition.isValidName("aasa_fetch:x_1") && !PrometheusExposition.isValidName("1x") && !PrometheusExposition.isValidName("a-b"))
        #expect(PrometheusExposition.isValidLabelName("route") && !PrometheusExposition.isValidLabelName("a:b"))
    }

    @Test func theReaderRejectsWhatAScraperWould() {
        for bad in ["x 1", "# HELP x h\n# TYPE x gauge\nx{a=\"\\t\"} 1\n", "# HELP x h\n# TYPE x gauge\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n",
                    "# HELP x h\nx 1\n", "# HELP x h\n# TYPE x gauge\ny 1\n", "# HELP x h\n# TYPE x gauge\nx one\n"] {
            #expect(throws: PrometheusTextParser.ParseError.self) { try PrometheusTextParser.parse(bad) }
        }
    }

    // MARK: - Atomic file

    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Pieces of every size, small ones gathered and large ones written as they are, land in order.
    @Test func atomicWriteKeepsThePiecesInOrder() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("page.html").path
        let pieces: [[UInt8]] = [[1], [UInt8](repeating: 2, count: 70_000), [3, 3], [UInt8](repeating: 4, count: 65_535), [],
                                 [UInt8](repeating: 5, count: 1 << 16), [UInt8](repeating: 6, count: 200_000), [7]]
        try AtomicFile.write(to: path) { emit in
            for piece in pieces { try emit(piece) }
        }
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == pieces.flatMap { $0 })
    }

    @Test func atomicWriteNeverShowsAPartialFile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("aasa.prom").path
        // Two versions of different sizes, each a whole "file" a reader can recognise.
        let big = Array(String(repeating: "aasa_fetch_host_associates{host=\"h.example\"} 1\n", count: 40_000).utf8)
        let small = Array("aasa_fetch_refresh_hosts_checked 3\n".utf8)
        try AtomicFile.write(small, to: path)
        // A reader on its own thread (not the task pool, which a busy test run may keep it off)
        // reads the file as fast as it can while it is rewritten.
        let done = Atomic<Bool>(false)
        let reads = Atomic<Int>(0)
        let bad = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !done.load(ordering: .acquiring) {
                let data = FileManager.default.contents(atPath: path)
                reads.add(1, ordering: .relaxed)
                // The file must exist at every moment, and be one whole version.
                if data.map({ Array($0) == big || Array($0) == small }) != true { bad.add(1, ordering: .relaxed) }
            }
            finished.signal()
        }
        // At least 60 rewrites, and on until the reader has read 200 times (at most 3,000 rewrites).
        var round = 0
        while round < 60 || (reads.load(ordering: .relaxed) < 200 && round < 3_000) {
            try AtomicFile.write(round % 2 == 0 ? big : small, to: path)
            round += 1
        }
        done.store(true, ordering: .releasing)
        finished.wait()
        #expect(bad.load(ordering: .relaxed) == 0, "\(bad.load(ordering: .relaxed)) of \(reads.load(ordering: .relaxed)) reads saw a missing or partial file")
        #expect(reads.load(ordering: .relaxed) >= 200, "the reader read while \(round) rewrites happened")
        // No temporary file is left behind, and the file is readable by a collector of another user.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["aasa.prom"])
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o644)
    }

    @Test func aFailedWriteKeepsTheOldFileAndLeavesNoTemporaryFile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // The target is a non-empty folder: the rename fails after the bytes were written.
        let target = folder.appendingPathComponent("metrics.prom")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: target.appendingPathComponent("inside"))
        #expect(throws: AtomicFile.WriteError.self) { try AtomicFile.write(Array("new".utf8), to: target.path) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["metrics.prom"])
        #expect(AtomicFile.checkWritable(target.path) != nil)
        // A folder that does not exist: no file at all.
        let missing = folder.appendingPathComponent("no/such/metrics.prom").path
        #expect(throws: AtomicFile.WriteError.self) { try AtomicFile.write(Array("x".utf8), to: missing) }
        #expect(AtomicFile.checkWritable(missing)?.contains("does not exist") == true)
        // A file where the folder should be.
        let plain = folder.appendingPathComponent("plain").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: plain))
        #expect(AtomicFile.checkWritable(plain + "/metrics.prom") == "\(plain) is not a folder")
        try FileManager.default.removeItem(atPath: plain)
        #expect(AtomicFile.checkWritable(folder.appendingPathComponent("fine.prom").path) == nil)
    }

    @Test func onlyARegularFileIsReplacedAndALinkIsFollowed() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // A symbolic link: the file it leads to is replaced, the link stays.
        let real = folder.appendingPathComponent("pages/status.html")
        try FileManager.default.createDirectory(at: real.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("old".utf8).write(to: real)
        let link = folder.appendingPathComponent("index.html").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "pages/status.html")
        #expect(AtomicFile.checkWritable(link) == nil)
        try AtomicFile.write(Array("new".utf8), to: link)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "pages/status.html")
        #expect(FileManager.default.contents(atPath: real.path) == Data("new".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.deletingLastPathComponent().path) == ["status.html"])

        // A pipe (as /dev/stdout or /dev/null would be): refused before anything is written, and left as it was.
        let fifo = folder.appendingPathComponent("pipe.prom").path
        #expect(mkfifo(fifo, 0o644) == 0)
        #expect(AtomicFile.checkWritable(fifo)?.contains("not a regular file") == true)
        #expect(throws: AtomicFile.WriteError.self) { try AtomicFile.write(Array("x".utf8), to: fifo) }
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the pipe is still a pipe")
        // A link to it is refused the same way; a link that leads nowhere too.
        let toFifo = folder.appendingPathComponent("to-pipe").path
        try FileManager.default.createSymbolicLink(atPath: toFifo, withDestinationPath: fifo)
        #expect(AtomicFile.checkWritable(toFifo)?.contains("not a regular file") == true)
        let dangling = folder.appendingPathComponent("dangling").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "no/such/file")
        #expect(AtomicFile.checkWritable(dangling)?.contains("leads nowhere") == true)
        #expect(throws: AtomicFile.WriteError.self) { try AtomicFile.write(Array("x".utf8), to: dangling) }
        // Devices are only checked here: a broken check must not replace them on the test machine.
        #expect(AtomicFile.checkWritable("/dev/null")?.contains("not a regular file") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["dangling", "index.html", "pages", "pipe.prom", "to-pipe"])
    }

    // MARK: - The system's reason

    @Test func foldersAreCreatedAsMkdirDoesWithTheFailingCallsErrorNumber() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let nested = folder.appendingPathComponent("a/b/c").path
        #expect(SystemReason.createFolder(nested + "//", parents: true) == nil)
        var info = stat()
        #expect(stat(nested, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        #expect(SystemReason.createFolder(nested, parents: true) == nil, "a folder already there is fine with parents")
        #expect(SystemReason.createFolder(nested, parents: false) == EEXIST, "a private folder must be new")
        #expect(SystemReason.createFolder(folder.appendingPathComponent("x/y").path, parents: false) == ENOENT)
        let file = folder.appendingPathComponent("file").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        #expect(SystemReason.createFolder(file, parents: true) == ENOTDIR)
        #expect(SystemReason.createFolder(file, parents: false) == EEXIST)
        #expect(SystemReason.createFolder(file + "/sub/deeper", parents: true) == ENOTDIR)
        #expect(SystemReason.text(errno: ENOTDIR) == "Not a directory")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["a", "file"])
    }

    @Test func foundationsFileErrorsGiveTheSystemsReason() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Writing into a folder that is not there: the POSIX error under Foundation's own.
        do {
            try Data("y".utf8).write(to: folder.appendingPathComponent("missing/inside.json"), options: .atomic)
            Issue.record("the write into a missing folder succeeded")
        } catch {
            #expect(SystemReason.of(error) == "No such file or directory", "\(error)")
        }
        do {
            _ = try FileHandle(forReadingFrom: folder.appendingPathComponent("missing"))
            Issue.record("a missing file was opened")
        } catch {
            #expect(SystemReason.of(error) == "No such file or directory", "\(error)")
        }
        #expect(SystemReason.of(POSIXError(.ENOSPC)) == "No space left on device")
        #expect(SystemReason.of(CocoaError(.fileWriteOutOfSpace)) == "No space left on device")
        struct Other: Error, CustomStringConvertible { var description: String { "other" } }
        #expect(!SystemReason.of(Other()).isEmpty)
    }

    // MARK: - Verdicts from stored responses

    static let url = "https://www.example.com/.well-known/apple-app-site-association"
    static let appID = "ABCDE12345.com.example.app"

    static func state(code: String, status: Int?, headers: [HTTPHeader] = [], body: String? = nil, approved: String? = nil,
                      route: Route = .origin) -> HostState {
        var state = HostState(key: HostKey(host: "www.example.com", route: route), tier: 0,
                              lastResult: StoredResult(code: code, reason: "stored reason", httpStatus: status, url: url, headers: headers,
                                                       body: body.map { Array($0.utf8) }, fetchedAt: Date(timeIntervalSince1970: 1_800_000_000)),
                              approvedBody: approved.map { Array($0.utf8) }, nextCheck: Date(timeIntervalSince1970: 1_800_086_400),
                              addedAt: Date(timeIntervalSince1970: 1_799_000_000))
        state.consecutiveFailures = code == "ok" ? 0 : 2
        return state
    }

    static let needs = [EntryNeed(entry: "applinks:www.example.com", service: .applinks, host: "www.example.com", appID: appID)]

    @Test func aStoredRedirectGetsTheFixALiveRunGives() {
        let state = Self.state(code: "http-redirect", status: 301,
                               headers: [HTTPHeader(name: "Location", value: "https://example.com/.well-known/apple-app-site-association")])
        let verdict = StoredVerdict(state: state, needs: Self.needs)
        #expect(verdict.status == .fails && verdict.associates == false)
        #expect(verdict.code == "http-redirect")
        #expect(verdict.reason == "stored reason")
        #expect(verdict.fix == "serve the file itself at \(Self.url) with status 200")
    }

    @Test func transferFailuresAndHTMLBodiesGetTheirFixes() {
        let timeout = StoredVerdict(state: Self.state(code: "timeout", status: nil), needs: Self.needs)
        #expect(timeout.fix == "make the server answer the AASA path within a few seconds")
        let html = StoredVerdict(state: Self.state(code: "invalid-json", status: 200, headers: [HTTPHeader(name: "Content-Type", value: "text/html")],
                                                   body: "<!doctype html><html><body>app</body></html>"), needs: Self.needs)
        #expect(html.fix?.contains("single-page-app") == true)
        #expect(html.findings.contains { $0.code == "content-type" && $0.severity == .warning })
        // A code this version would not give for that response: the stored code stands, without a fix.
        let odd = StoredVerdict(state: Self.state(code: "user-agent-blocked", status: 403), needs: Self.needs)
        #expect(odd.status == .fails && odd.code == "user-agent-blocked" && odd.fix == nil)
        #expect(odd.findings.map(\.code) == ["user-agent-blocked"])
    }

    @Test func approvedFilesAreJudgedForTheAppsThatNeedThem() {
        let listed = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#
        let other = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"/*"}]}]}}"#
        let json = [HTTPHeader(name: "Content-Type", value: "application/json")]
        let good = StoredVerdict(state: Self.state(code: "ok", status: 200, headers: json, body: listed, approved: listed), needs: Self.needs)
        #expect(good.status == .associates && good.code == "ok" && good.fix == nil && good.findings.isEmpty)
        let notListed = StoredVerdict(state: Self.state(code: "ok", status: 200, headers: json, body: other, approved: other), needs: Self.needs)
        #expect(notListed.status == .fails && notListed.code == "app-not-listed")
        #expect(notListed.fix == "add \"\(Self.appID)\" to the appIDs of a detail under applinks.details")
        // A 304 confirmed the stored file: judged on the approved body.
        let confirmed = StoredVerdict(state: Self.state(code: "ok", status: 304, headers: json, approved: listed), needs: Self.needs)
        #expect(confirmed.status == .associates)
        // No app ID recorded: unjudged.
        let anonymous = [EntryNeed(entry: "applinks:www.example.com", service: .applinks, host: "www.example.com", appID: "")]
        #expect(StoredVerdict(state: Self.state(code: "ok", status: 200, headers: json, body: other, approved: other), needs: anonymous).status == .unjudged)
        #expect(StoredVerdict(state: Self.state(code: "ok", status: 200, headers: json, body: other, approved: other), needs: anonymous).associated == nil)
        // Recorded once without an app ID and once with one: judged by the one known, as the
        // status (the page, the metrics) and refresh judge it; `show` said `?` here.
        let mixed = StoredVerdict(state: Self.state(code: "ok", status: 200, headers: json, body: listed, approved: listed), needs: anonymous + Self.needs)
        #expect(mixed.status == .associates && mixed.associated == true && mixed.code == "ok")
        let mixedNotListed = StoredVerdict(state: Self.state(code: "ok", status: 200, headers: json, body: other, approved: other), needs: anonymous + Self.needs)
        #expect(mixedNotListed.status == .fails && mixedNotListed.associated == false)
        // Never fetched.
        var pending = Self.state(code: "ok", status: 200)
        pending.lastResult = nil
        let never = StoredVerdict(state: pending, needs: Self.needs)
        #expect(never.status == .pending && never.code == nil && never.associates == nil)
    }

    @Test func cdnFailuresGetTheCDNFixes() {
        let unknown = StoredVerdict(state: Self.state(code: "cdn-unknown-domain", status: 405, route: .cdn), needs: Self.needs)
        #expect(unknown.fix?.contains("24 hours") == true)
        let unreachable = StoredVerdict(state: Self.state(code: "cdn-unreachable", status: nil, route: .cdn), needs: Self.needs)
        #expect(unreachable.fix?.contains("network path to the CDN") == true)
    }

    // MARK: - Page escaping

    /// The page with its JSON island of row bodies decoded in place: the markup a browser shows
    /// once every row is opened.
    static func expanded(_ html: String) throws -> (page: String, island: String, bodies: [String]) {
        let start = try #require(html.range(of: "<script type=\"application/json\" id=\"bodies\">"))
        let end = try #require(html[start.upperBound...].range(of: "</script>"))
        let island = String(html[start.upperBound..<end.lowerBound])
        let bodies = try #require(try JSONSerialization.jsonObject(with: Data(island.utf8)) as? [String])
        return (html.replacingCharacters(in: start.lowerBound..<end.upperBound, with: bodies.joined(separator: "\n")), island, bodies)
    }

    @Test func thePageEscapesEveryStoredText() throws {
        let evilHost = "<script>alert(1)</script>.example"
        let evilApp = "\"><img src=x onerror=alert(2)>"
        let evilBody = #"{"applinks":{"details":[{"appIDs":["</pre><script>alert(3)</script>"],"components":[{"/":"/*"}]}]}}"#
        var state = HostState(key: HostKey(host: evilHost), tier: 0,
                              lastResult: StoredResult(code: "ok", reason: "<b>bold</b> & 'quoted'", httpStatus: 200, url: "https://x/<i>",
                                                       headers: [], body: Array(evilBody.utf8), fetchedAt: Date(timeIntervalSince1970: 1_800_000_000)),
                              approvedBody: Array(evilBody.utf8), nextCheck: Date(timeIntervalSince1970: 1_800_086_400),
                              addedAt: Date(timeIntervalSince1970: 1_799_000_000))
        state.approvedAt = state.lastResult?.fetchedAt
        let needs = [EntryNeed(entry: "applinks:\(evilHost)", service: .applinks, host: evilHost, appID: evilApp)]
        let history = [HistoryEvent(key: HostKey(host: evilHost), at: Date(timeIntervalSince1970: 1_800_000_000), kind: .failed,
                                    detail: HistoryDetail(code: "<u>code</u>", reason: "\u{202E}reversed\u{1B}[31m"))]
        var page = StatusPage()
        page.add(StoredVerdict(state: state, needs: needs), history: history)
        let raw = try page.render(store: "/tmp/<store>", generatedAt: Date(timeIntervalSince1970: 1_800_000_000), version: "test")
        // The island of bodies can hold no '<' at all, so no text closes its element.
        let (html, island, bodies) = try Self.expanded(raw)
        #expect(!island.contains("<") && bodies.count == 1)
        for raw in ["<script>alert", "<img", "<b>bold", "<u>code", "<i>", "<store>", "\u{202E}", "\u{1B}"] {
            #expect(!html.contains(raw), "\(raw) reached the page unescaped")
        }
        #expect(html.contains("&lt;u&gt;code&lt;/u&gt;"))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;.example"))
        #expect(html.contains("\"&gt;&lt;img src=x onerror=alert(2)&gt;"))
        #expect(html.contains("data-host=\"&lt;script&gt;alert(1)&lt;/script&gt;.example\""))
        #expect(html.contains(" &quot;&gt;&lt;img src=x onerror=alert(2)&gt;\">"), "the app ID in data-q, quotes escaped in the attribute")
        #expect(html.contains("&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;"))
        #expect(html.contains("\\u{202e}reversed\\u{1b}[31m"))
        // Exactly the page's own script and its own <pre>.
        #expect(html.components(separatedBy: "<script").count == 2, "the page's own script only")
        #expect(html.components(separatedBy: "<pre>").count == 2)
        // Nothing is loaded from anywhere.
        #expect(html.contains("default-src 'none'"))
        for external in ["src=\"http", "href=\"http", "url(", "@import", "fetch(", "XMLHttpRequest"] {
            #expect(!html.contains(external), "\(external)")
        }
    }

    /// A tampered store's times (far past any date, infinite, not a number) make a page, not a
    /// crash: the sort keys are clamped whole seconds, and a time that is not a number is 0.
    @Test func timesOutOfEveryRangeMakeAPage() throws {
        var page = StatusPage()
        for (index, seconds) in [-1e300, 1e300, Double.infinity, -Double.infinity, Double.nan, 1_800_000_000.75].enumerated() {
            let time = Date(timeIntervalSince1970: seconds)
            let host = "h\(index).example"
            let state = HostState(key: HostKey(host: host), tier: 0,
                                  lastResult: StoredResult(code: "http-client-error", reason: "HTTP 404", httpStatus: 404, url: "https://\(host)/x",
                                                           headers: [], body: nil, fetchedAt: time),
                                  nextCheck: time, addedAt: time)
            page.add(StoredVerdict(state: state, needs: []),
                     history: [HistoryEvent(key: HostKey(host: host), at: time, kind: .failed, detail: HistoryDetail(code: "x"))])
        }
        let html = try Self.expanded(page.render(store: "s", generatedAt: Date(timeIntervalSince1970: 1_800_000_000), version: "test")).page
        for key in ["-9000000000000000", "9000000000000000", "1800000000"] {
            #expect(html.contains("data-check=\"\(key)\"") && html.contains("data-change=\"\(key)\""), "\(key)")
        }
        #expect(html.contains("data-check=\"0\""), "not a number")
        #expect(page.hostCount == 6)
    }

    /// A host no app needs any more is left out of the page (it is not checked any more) and counted.
    @Test func hostsNoAppNeedsAreLeftOutAndCounted() throws {
        func verdict(_ host: String, unneeded: Bool) -> StoredVerdict {
            var state = HostState(key: HostKey(host: host), tier: 0,
                                  lastResult: StoredResult(code: "http-client-error", reason: "HTTP 404", httpStatus: 404, url: "https://\(host)/x",
                                                           headers: [], body: nil, fetchedAt: Date(timeIntervalSince1970: 1_800_000_000)),
                                  nextCheck: Date(timeIntervalSince1970: 1_800_086_400), addedAt: Date(timeIntervalSince1970: 1_799_000_000))
            state.unneededSince = unneeded ? Date(timeIntervalSince1970: 1_800_000_100) : nil
            return StoredVerdict(state: state, needs: [])
        }
        var page = StatusPage()
        page.add(verdict("kept.example", unneeded: false), history: [])
        page.add(verdict("gone.example", unneeded: true), history: [])
        #expect(page.hostCount == 1 && page.unneededCount == 1 && page.count(.fails) == 1)
        let html = try Self.expanded(page.render(store: "s", generatedAt: Date(timeIntervalSince1970: 1_800_000_000), version: "test")).page
        #expect(html.contains("kept.example") && !html.contains("gone.example"))
        #expect(html.contains("1 host no app needs any more is left out"))

        var all = StatusPage()
        all.add(verdict("kept.example", unneeded: false), history: [])
        #expect(try !all.render(store: "s", generatedAt: Date(timeIntervalSince1970: 1_800_000_000), version: "test").contains("left out"))
    }

    @Test func approvedFilesAreIndentedInSourceOrder() throws {
        let body = ##"{"webcredentials":{"apps":["A.b"]},"applinks":{"details":[{"appIDs":["A.b","C.d"],"components":[{"/":"/x","#":"no_universal_links","exclude":true}]}]}}"##
        var state = HostState(key: HostKey(host: "example.com"), tier: 0,
                              lastResult: StoredResult(code: "ok", reason: "HTTP 200", httpStatus: 200, url: "https://example.com/x", headers: [],
                                                       body: Array(body.utf8), fetchedAt: Date(timeIntervalSince1970: 1_800_000_000)),
                              approvedBody: Array(body.utf8), nextCheck: Date(timeIntervalSince1970: 1_800_086_400),
                              addedAt: Date(timeIntervalSince1970: 1_799_000_000))
        state.approvedAt = Date(timeIntervalSince1970: 1_800_000_000)
        var page = StatusPage()
        page.add(StoredVerdict(state: state, needs: []), history: [])
        let html = try Self.expanded(page.render(store: "s", generatedAt: Date(timeIntervalSince1970: 1_800_000_000), version: "test")).page
        #expect(html.contains("""
            {
              "webcredentials": {
                "apps": ["A.b"]
              },
              "applinks": {
            """))
        #expect(html.contains("\"exclude\": true"))
    }
}
