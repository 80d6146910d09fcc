@testable import AASAFetchCore
import Foundation
import Testing

/// The run spool keeps what the in-memory path keeps (`EntryParser.parse`, `FetchPlan`,
/// `AssociationJudge`) and gives it back identically, a page at a time.
struct RunSpoolTests {
    static let appID = "ABCDE12345.com.example.app"
    /// Duplicates, a wildcard served by its parent, webcredentials beside applinks, malformed and
    /// unresolved entries, upper case, Unicode, an unknown service, and three priority tiers (DE region).
    static let strings: [String?] = [
        "applinks:shop.example.de", "applinks:www.example.com", "applinks:*.example.com", "webcredentials:www.example.com",
        "applinks:www.example.com", "applinks:bad/path", "applinks:example.fr", "applinks:$(DOMAIN)", "applinks:$(MISSING)",
        "applinks:EXAMPLE.net", "applinks:bücher.example", "weird:example.org", nil, "applinks:example.com:8443",
        "applinks:z.example.de", "applinks:example.com?mode=developer", "applinks:a.example.co",
    ]
    static let definitions = ["DOMAIN": "defined.example.org"]

    static func filled(pageSize: Int = 2) throws -> (RunSpool, [AssociatedDomainEntry], FetchPlan) {
        let prioritizer = DomainPrioritizer(region: "DE")
        let spool = try RunSpool(prioritizer: prioritizer)
        // Two appends: entries keep counting from the first (entitlements, then the list).
        try spool.append(definitions: definitions) { add in for string in strings.prefix(5) { try add(string) } }
        try spool.append(definitions: definitions) { add in for string in strings.dropFirst(5) { try add(string) } }
        let entries = EntryParser(definitions: definitions).parse(strings)
        return (spool, entries, FetchPlan(entries: entries, prioritizer: prioritizer))
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The spool is written once and read in order: a small page cache, not SQLite's 2 MiB.
    @Test func theSpoolKeepsASmallPageCache() throws {
        let (spool, _, _) = try Self.filled()
        defer { spool.remove() }
        #expect(try spool.pageCacheSetting() == -256)
    }

    @Test func entriesAndHostsMatchTheParserAndPlan() throws {
        let (spool, entries, plan) = try Self.filled()
        defer { spool.remove() }
        var verdicts: [EntryVerdict] = []
        try spool.forEachVerdict(.all) { verdicts.append($0) }
        #expect(verdicts == entries.map(EntryVerdict.init(parsed:)))
        #expect(verdicts.contains { $0.findings.contains { $0.code == "entitlement-duplicate" } })

        var cursor = spool.hostCursor(pageSize: 2)
        var hosts: [RunSpool.SpooledHost] = []
        while let host = try cursor.next() { hosts.append(host) }
        #expect(hosts.map(\.host) == plan.fetches.map(\.host))
        #expect(hosts.map(\.tier) == plan.fetches.map(\.tier))
        #expect(Set(hosts.map(\.tier)) == [0, 1, 2])
        for fetch in plan.fetches {
            #expect(try spool.verdicts(of: fetch.host) == fetch.entryIndexes.map { EntryVerdict(parsed: entries[$0]) })
        }
        // What registration reads, a page at a time: each host's entries without their findings.
        let withoutFindings = plan.fetches.map { fetch in
            fetch.entryIndexes.map { index in
                var entry = entries[index]
                entry.findings = []
                entry.line = nil
                return entry
            }
        }
        #expect(try spool.entries(of: hosts) == withoutFindings)
        #expect(try spool.entries(of: Array(hosts.suffix(2))) == Array(withoutFindings.suffix(2)))
        #expect(try spool.entries(of: []) == [])
        // Any list of hosts, in any order: the page is read in one query, then put in the list's order.
        #expect(try spool.entries(of: hosts.reversed()) == withoutFindings.reversed())
        #expect(try spool.entries(of: [hosts[0], hosts[hosts.count - 1], hosts[0]])
                    == [withoutFindings[0], withoutFindings[hosts.count - 1], withoutFindings[0]])
        let sizes = try spool.sizes()
        #expect(sizes.entries == entries.count)
        #expect(sizes.hosts == plan.fetches.count)
        #expect(sizes.longestHost == plan.fetches.map(\.host.count).max())

        var unfetchable: [EntryVerdict] = []
        try spool.forEachVerdict(.unfetchable) { unfetchable.append($0) }
        #expect(unfetchable == verdicts.filter { !$0.entry.isFetchable })
        var own: [EntryVerdict] = []
        try spool.forEachVerdict(.fetchableWithOwnFindings) { own.append($0) }
        #expect(own == verdicts.filter { $0.entry.isFetchable && $0.findings.contains { $0.code.hasPrefix("entitlement-") } })
    }

    /// Judging host by host through the spool gives the in-memory report's domains, entries and counts.
    @Test func judgingMatchesTheInMemoryJudge() throws {
        let plan = FetchPlan(entries: EntryParser(definitions: Self.definitions).parse(Self.strings), prioritizer: DomainPrioritizer(region: "DE"))
        let listed = try AASADecoder.decodeDocument(Array(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[]}]}}"#.utf8))
        let results = plan.fetches.enumerated().map { position, fetch in
            switch position % 3 {
            case 0:
                HostFetchResult(host: fetch.host, route: .origin, url: "https://\(fetch.host)/x", code: "ok", reason: "fetched",
                                httpStatus: 200, document: listed, reliesOnExtraCA: true, startOrder: position)
            case 1:
                HostFetchResult(host: fetch.host, route: .origin, url: "https://\(fetch.host)/x", code: "tls-untrusted",
                                reason: "untrusted", findings: [.error("tls-untrusted", "untrusted")], startOrder: position)
            default:
                HostFetchResult(host: fetch.host, route: .origin, url: "https://\(fetch.host)/x", code: "ok", reason: "fetched",
                                httpStatus: 200, document: listed, startOrder: position)
            }
        }
        for appIDs in [[Self.appID], []] {
            let (spool, _, _) = try Self.filled()
            defer { spool.remove() }
            let report = AssociationJudge.report(plan: plan, results: results, appIDs: appIDs, appIDSource: .option, region: "DE")
            for (position, result) in results.enumerated() {
                let domain = try spool.judge(result, tier: plan.fetches[position].tier, appIDs: appIDs)
                #expect(try Self.json(domain) == Self.json(report.domains[position]))
            }
            var verdicts: [EntryVerdict] = []
            try spool.forEachVerdict(.all) { verdicts.append($0) }
            #expect(verdicts == report.entries)
            let summary = AssociationJudge.summary(
                counts: try spool.counts(), domains: plan.fetches.count,
                domainWarnings: report.domains.reduce(0) { $0 + $1.warningCount }, runFindings: []
            )
            #expect(summary == report.summary)
        }
    }

    /// `--route cdn|both` through the spool: the downloads, records, verdicts and counts of the
    /// in-memory run (``RoutedRun/split(_:route:)``, judged as the CLI's `PlanSource` judges).
    /// Hosts with entries with and without a mode (split over two routes with `cdn`), a host with
    /// `?mode=` entries only, duplicates, wildcards and unfetchable entries. `readAhead`: the
    /// cursor reads each page's verdicts with it (as the fetch run's does), or the judge reads them.
    @Test(arguments: [RouteChoice.cdn, .both], [false, true])
    func routedJudgingMatchesTheSplitPlan(route: RouteChoice, readAhead: Bool) throws {
        let strings = Self.strings + ["applinks:only.example.org?mode=managed", "webcredentials:shop.example.de?mode=developer+managed",
                                      "applinks:only.example.org?mode=developer", "applinks:shop.example.de?mode=developer+managed"]
        let prioritizer = DomainPrioritizer(region: "DE")
        let entries = EntryParser(definitions: Self.definitions).parse(strings)
        let (routed, comparison) = RoutedRun.split(FetchPlan(entries: entries, prioritizer: prioritizer), route: route)
        #expect(route == .both || routed.fetches.contains { $0.route == .origin } && routed.fetches.contains { $0.route == .cdn })
        let listed = try AASADecoder.decodeDocument(Array(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[]}]}}"#.utf8))
        let other = try AASADecoder.decodeDocument(Array(#"{"applinks":{"details":[{"appIDs":["ZZZZZ12345.com.other"],"components":[]}]}}"#.utf8))
        func result(_ host: String, _ route: Route, _ position: Int) -> HostFetchResult {
            let url = route == .cdn ? "https://cdn.test/a/v1/\(host)" : "https://\(host)/x"
            return switch (position + (route == .cdn ? 1 : 0)) % 3 {
            case 0: HostFetchResult(host: host, route: route, url: url, code: "ok", reason: "fetched", httpStatus: 200, document: listed, startOrder: position)
            case 1: HostFetchResult(host: host, route: route, url: url, code: "http-404", reason: "404",
                                    findings: [.error("http-404", "not found")], startOrder: position)
            default: HostFetchResult(host: host, route: route, url: url, code: "ok", reason: "fetched", httpStatus: 200, document: other, startOrder: position)
            }
        }

        for appIDs in [[Self.appID], []] {
            // The in-memory run: PlanSource's judge.
            var verdicts = entries.map(EntryVerdict.init(parsed:))
            var comparisonVerdicts = verdicts
            var expected: [DomainReport] = []
            for (position, fetch) in routed.fetches.enumerated() {
                var domain = AssociationJudge.judgeHost(fetch, result: result(fetch.host, fetch.route, position), verdicts: &verdicts, appIDs: appIDs)
                RoutedRun.attachCDNRecord(to: &domain, result: result(fetch.host, fetch.route, position))
                if let compared = comparison.first(where: { $0.host == fetch.host }) {
                    let cdnResult = result(fetch.host, .cdn, position)
                    let cdnDomain = AssociationJudge.judgeHost(compared, result: cdnResult, verdicts: &comparisonVerdicts, appIDs: appIDs)
                    RoutedRun.attachComparison(to: &domain, origin: result(fetch.host, fetch.route, position), cdnDomain: cdnDomain, cdnResult: cdnResult)
                }
                expected.append(domain)
            }

            // The spool: its hosts expanded into the route's downloads, as the CLI's SpoolSource does.
            let spool = try RunSpool(prioritizer: prioritizer)
            defer { spool.remove() }
            try spool.append(definitions: Self.definitions) { add in for string in strings { try add(string) } }
            #expect(try spool.sizes(route: route).fetches == routed.fetches.count)
            #expect(try spool.sizes(route: .origin).fetches == spool.sizes().hosts)
            var cursor = spool.hostCursor(pageSize: 3, forJudging: readAhead)
            var units: [(host: RunSpool.SpooledHost, route: Route, entries: DownloadEntries, compared: Bool)] = []
            while let host = try cursor.next() {
                if route == .both {
                    units.append((host, .origin, .all, host.servesPlain))
                } else {
                    if host.servesPlain { units.append((host, .cdn, .plain, false)) }
                    if host.servesModes { units.append((host, .origin, .moded, false)) }
                }
            }
            #expect(units.map { "\($0.host.host) \($0.route) \($0.host.tier)" } == routed.fetches.map { "\($0.host) \($0.route) \($0.tier)" })
            #expect(units.filter(\.compared).map(\.host.host) == comparison.map(\.host))
            for (position, unit) in units.enumerated() {
                let domain = try spool.judge(result(unit.host.host, unit.route, position), tier: unit.host.tier, entries: unit.entries,
                                             comparison: unit.compared ? result(unit.host.host, .cdn, position) : nil, appIDs: appIDs)
                #expect(try Self.json(domain) == Self.json(expected[position]), "\(unit.host.host) \(unit.route)")
            }
            // (Read only now: a read writes the pending verdicts first, which would hide a split
            // host's second download writing back stale verdicts of the first one's entries.)
            for (position, unit) in units.enumerated() {
                let served = try spool.verdicts(of: unit.host.host, unit.entries).map(\.entry)
                #expect(served == routed.fetches[position].entryIndexes.map { entries[$0] })
            }
            #expect(expected.contains { $0.cdn != nil })
            #expect(route == .cdn || expected.contains { $0.findings.contains { $0.code == "cdn-stale" } })
            var spooled: [EntryVerdict] = []
            try spool.forEachVerdict(.all) { spooled.append($0) }
            #expect(spooled == verdicts)
            #expect(try spool.counts() == EntryCounts(verdicts))
        }
    }

    @Test func removeDeletesTheFolder() throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("spool-parent-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: parent) }
        let spool = try RunSpool(parent: parent.path, prioritizer: DomainPrioritizer(region: nil))
        try spool.append(definitions: [:]) { add in try add("applinks:example.com") }
        #expect(FileManager.default.fileExists(atPath: spool.path))
        #expect(spool.directory.hasPrefix(parent.path))
        spool.remove()
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
        // An unwritable parent is a spool error, not a crash.
        #expect(throws: SpoolError.self) { try RunSpool(parent: "/proc/no-such-dir", prioritizer: DomainPrioritizer(region: nil)) }
    }

    /// The sweep reads an entry's name from its record alone: a short record that ends where
    /// unmapped memory begins (as the last one of `readdir`'s buffer can) is read without a crash.
    /// Copying the whole `dirent` out of it read 256 bytes of name and crashed about one spooled
    /// run in a hundred.
    @Test func anEntryNameIsReadToItsRecordsEndOnly() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let mapped = mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        try #require(mapped != MAP_FAILED)
        let pages = try #require(mapped)
        defer { munmap(pages, 2 * page) }
        #expect(mprotect(pages + page, page, PROT_NONE) == 0)
        let name = "aasa-fetch-spool-42-x"
        let nameOffset = try #require(MemoryLayout<dirent>.offset(of: \dirent.d_name))
        let length = (nameOffset + name.utf8.count + 1 + 7) & ~7
        let record = pages + page - length
        let lengthOffset = try #require(MemoryLayout<dirent>.offset(of: \dirent.d_reclen))
        record.storeBytes(of: UInt16(length), toByteOffset: lengthOffset, as: UInt16.self)
        for (index, byte) in (Array(name.utf8) + [0]).enumerated() {
            record.storeBytes(of: byte, toByteOffset: nameOffset + index, as: UInt8.self)
        }
        #expect(RunSpool.entryName(UnsafePointer(record.assumingMemoryBound(to: dirent.self))) == name)
    }

    /// A spool folder that an ended run left (its lock free, its process gone) is removed by the
    /// next spool made in the same parent; a live spool (locked), a folder whose process lives, a
    /// locked one, a file, a link and other names are left as they are.
    @Test func abandonedSpoolsAreRemovedAndLiveOnesKept() throws {
        let files = FileManager.default
        let parent = files.temporaryDirectory.appendingPathComponent("spool-sweep-\(UUID().uuidString)")
        try files.createDirectory(at: parent, withIntermediateDirectories: true)
        defer { try? files.removeItem(at: parent) }
        // A process ID whose process has ended.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let ended = child.processIdentifier
        func folder(_ name: String) throws -> String {
            let path = parent.appendingPathComponent(name).path
            try files.createDirectory(atPath: path, withIntermediateDirectories: false)
            try Data("x".utf8).write(to: URL(fileURLWithPath: path).appendingPathComponent("spool.sqlite"))
            return path
        }
        let live = try RunSpool(parent: parent.path, prioritizer: DomainPrioritizer(region: nil))
        defer { live.remove() }
        // The live spool holds its lock: another open file description cannot take it.
        let probe = open(live.directory, O_RDONLY | O_DIRECTORY)
        #expect(probe >= 0)
        #expect(flock(probe, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        close(probe)

        let abandoned = try folder("aasa-fetch-spool-\(ended)-DEADBEEF")
        let ownProcess = try folder("aasa-fetch-spool-\(getpid())-0000AAAA")
        let held = try folder("aasa-fetch-spool-\(ended)-HELD0000")
        let holder = open(held, O_RDONLY | O_DIRECTORY)
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
        defer { close(holder) }
        let target = try folder("target")
        let link = parent.appendingPathComponent("aasa-fetch-spool-\(ended)-LINK0000").path
        try files.createSymbolicLink(atPath: link, withDestinationPath: target)
        let plainFile = parent.appendingPathComponent("aasa-fetch-spool-\(ended)-FILE0000").path
        try Data().write(to: URL(fileURLWithPath: plainFile))
        let otherNames = try ["aasa-fetch-spool-x-00000000", "aasa-fetch-spool-\(ended)", "other-\(ended)-DEADBEEF"].map(folder)

        #expect(RunSpool.removeAbandoned(in: parent.path) == 1)
        #expect(!files.fileExists(atPath: abandoned))
        for kept in [live.directory, ownProcess, held, target, link, plainFile] + otherNames {
            #expect(files.fileExists(atPath: kept), "\(kept) removed")
        }
        #expect(files.fileExists(atPath: target + "/spool.sqlite"), "the link's target was emptied")

        // Made as any spool is made, the next spool sweeps first.
        let later = try folder("aasa-fetch-spool-\(ended)-0BADF00D")
        let next = try RunSpool(parent: parent.path, prioritizer: DomainPrioritizer(region: nil))
        #expect(!files.fileExists(atPath: later))
        #expect(files.fileExists(atPath: live.directory) && files.fileExists(atPath: next.directory))
        next.remove()
        // A missing parent is nothing to sweep.
        #expect(RunSpool.removeAbandoned(in: parent.appendingPathComponent("missing").path) == 0)
    }

    /// Findings kept in the spool are read back without Foundation's decoder, exactly as it read them.
    @Test func findingsReadBackAsJSONDecoderReadsThem() throws {
        let odd = "quote \" backslash \\ slash / tab \t nl \n del \u{7F} c1 \u{85} ls \u{2028} é 😀 \u{0}"
        let findings = [
            Finding(code: "http-404", severity: .error, message: odd, location: "/applinks/details/0", line: 3, column: 14, fix: odd),
            Finding(code: "entitlement-duplicate", severity: .warning, message: "m"),
            Finding(code: "x", severity: .info, message: "", location: "", line: 0, column: -1, fix: ""),
        ]
        for list in [findings, [], [findings[1]]] {
            // What the spool writes is JSON that Foundation reads as the same findings, too.
            for text in [RunSpool.spoolBytes(list), try ReportJSONWriter(style: .compact).encode(list), Array(try JSONEncoder().encode(list))] {
                let expected = try JSONDecoder().decode([Finding].self, from: Data(text))
                #expect(expected == list)
                #expect(RunSpool.parsedFindings(text) == expected)
                #expect(try RunSpool.decodeFindings(Data(text)) == expected)
            }
        }
        // Other shapes are left to JSONDecoder, which accepts or rejects them as before.
        for text in ["{}", "[1]", "[{\"code\":\"a\"}]", "[{\"code\":\"a\",\"severity\":\"fatal\",\"message\":\"m\"}]",
                     "[{\"code\":\"a\",\"severity\":\"info\",\"message\":\"m\",\"line\":1.5}]", "not json"] {
            #expect(RunSpool.parsedFindings(Array(text.utf8)) == nil, "\(text)")
            #expect(throws: (any Error).self) { try RunSpool.decodeFindings(Data(text.utf8)) }
        }
        #expect(try RunSpool.decodeFindings(nil) == [])
    }
}
