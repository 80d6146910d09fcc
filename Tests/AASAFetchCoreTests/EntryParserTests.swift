import AASAFetchCore
import Testing

struct EntryParserTests {
    private func parse(_ text: String, defines: [String: String] = [:]) -> AssociatedDomainEntry {
        EntryParser(definitions: defines).parse(text, index: 0)
    }

    /// Every entry error has its own code, and an entry with an error is not fetched
    /// (except a Unicode host, which is fetched under its Punycode name).
    @Test(arguments: [
        ("applinks:", "entitlement-empty-host"),
        ("applinks:*.", "entitlement-empty-host"),
        ("example.com", "entitlement-missing-service"),
        (":example.com", "entitlement-missing-service"),
        ("applinks:https://example.com", "entitlement-scheme"),
        ("applinks:example.com/path", "entitlement-path"),
        ("applinks:example.com#x", "entitlement-path"),
        ("applinks:example.com/", "entitlement-trailing-slash"),
        ("applinks:example.com?foo=bar", "entitlement-query"),
        ("applinks:example.com?mode=developer&x=1", "entitlement-query"),
        ("applinks:example.com?mode=debug", "entitlement-mode-invalid"),
        ("applinks:example.com:8080", "entitlement-port"),
        ("applinks:[::1]", "entitlement-ip-address"),
        ("applinks:[2001:db8::1]:443", "entitlement-ip-address"),
        ("applinks:[::1", "entitlement-ip-address"),
        ("applinks:fe80::1", "entitlement-ip-address"),
        ("applinks:127.0.0.1", "entitlement-ip-address"),
        // Numeric forms that resolvers read as IPv4 addresses were fetched as names.
        ("applinks:127.1", "entitlement-ip-address"),
        ("applinks:2130706433", "entitlement-ip-address"),
        ("applinks:0x7f000001", "entitlement-ip-address"),
        ("applinks:10.0.0.1.", "entitlement-ip-address"),
        ("applinks:example.com:", "entitlement-port"),
        ("https://example.com", "entitlement-scheme"),
        ("example.com:443", "entitlement-missing-service"),
        ("localhost:8080", "entitlement-missing-service"),
        ("localhost:8080?mode=developer", "entitlement-missing-service"),
        ("webcredentials:192.168.1.20:8443", "entitlement-ip-address"),
        ("appclips:*.example.com", "entitlement-wildcard-appclips"),
        ("applinks:www.*.example.com", "entitlement-wildcard-position"),
        ("applinks:*example.com", "entitlement-wildcard-position"),
        ("applinks:.example.com", "entitlement-invalid-host"),
        ("applinks:$(APP_DOMAIN)", "entitlement-unresolved-variable"),
        ("applinks:${APP_DOMAIN}", "entitlement-unresolved-variable"),
        ("applinks:xn--zz.example.com", "entitlement-invalid-punycode"),
        ("applinks:exa_mple.com", "entitlement-invalid-host"),
        ("applinks:-example.com", "entitlement-invalid-host"),
        ("applinks:example..com", "entitlement-invalid-host"),
    ])
    func errorCodes(entry: String, code: String) {
        let parsed = parse(entry)
        #expect(parsed.errorCode == code, "\(entry): \(parsed.findings)")
        let finding = parsed.findings.first { $0.code == code }
        #expect(finding?.severity == .error)
        if code != "entitlement-invalid-host" && code != "entitlement-invalid-punycode" {
            #expect(finding?.fix != nil, "\(entry) has no fix text")
        }
        #expect(!parsed.isFetchable)
    }

    /// The fix of an entry with a scheme is the domain alone, whatever form the URL took (it was the
    /// same bad entry, `applinks:http:`, or kept the port); an empty host before a colon is named
    /// as such (it was "includes a port (example.com)"); a variable is shown as written.
    @Test(arguments: [
        ("applinks:https:example.com", "entitlement-scheme", "write 'applinks:example.com'"),
        ("applinks:http:/example.com", "entitlement-scheme", "write 'applinks:example.com'"),
        ("applinks:https://example.com/path?x#y", "entitlement-scheme", "write 'applinks:example.com'"),
        ("webcredentials:https://a.example.com:8443/", "entitlement-scheme", "write 'webcredentials:a.example.com'"),
        ("applinks::example.com", "entitlement-empty-host", "write 'applinks:example.com'"),
        // A URL where the entry should be was an unknown service `https` with a path.
        ("https://www.example.com/", "entitlement-scheme", "write 'applinks:www.example.com'"),
        ("HTTP://example.com:8080", "entitlement-scheme", "write 'applinks:example.com'"),
        // A host with a port and no service was service `www.example.com` and host `8080`.
        ("www.example.com:8080", "entitlement-missing-service", "write 'applinks:www.example.com' (or webcredentials:, activitycontinuation:, appclips:, authsrv:)"),
        // Wildcard fixes were invalid themselves (`*.a.*.com`, `*.com`, `*.`).
        ("applinks:a.*.example.com", "entitlement-wildcard-position", "write 'applinks:*.example.com'"),
        ("applinks:*example.com", "entitlement-wildcard-position", "write 'applinks:*.example.com'"),
        ("applinks:a.*.com", "entitlement-wildcard-position", "write 'applinks:*.example.com'"),
        ("applinks:*", "entitlement-wildcard-position", "write 'applinks:*.example.com'"),
        ("applinks:*.*.example.com?mode=developer", "entitlement-wildcard-position", "write 'applinks:*.example.com?mode=developer'"),
        // The mode stays in the fix; an empty port and a doubled prefix are named as such.
        ("applinks:example.com/?mode=developer", "entitlement-trailing-slash", "write 'applinks:example.com?mode=developer'"),
        ("applinks:example.com:", "entitlement-port", "write 'applinks:example.com'"),
        ("applinks:applinks:example.com", "entitlement-invalid-host", "write 'applinks:example.com'"),
    ])
    func fixesNameTheDomainAlone(entry: String, code: String, fix: String) throws {
        let finding = try #require(parse(entry).findings.first { $0.severity == .error })
        #expect(finding.code == code, "\(entry): \(finding)")
        #expect(finding.fix == fix, "\(entry): \(finding)")
    }

    /// The app ID takes both variable forms, as entries do (`${AppIdentifierPrefix}` stayed as
    /// written, and the run judged a literal `${…}` app ID).
    @Test func theAppIDTakesBothVariableForms() {
        let table = ["AppIdentifierPrefix": "ABCDE12345.", "NAME": "demo"]
        #expect(AppID.expand("${AppIdentifierPrefix}com.example.${NAME}", definitions: table) == "ABCDE12345.com.example.demo")
        #expect(AppID.expand("$(AppIdentifierPrefix)com.example.$(NAME)", definitions: table) == "ABCDE12345.com.example.demo")
        #expect(AppID.expand("${TeamIdentifierPrefix}com.example", definitions: table) == nil)
        #expect(AppID.expand("ABCDE12345.com.example", definitions: [:]) == "ABCDE12345.com.example")
    }

    /// `entitlement-invalid-punycode` only when an `xn--` label is what fails: a long label or a
    /// disallowed character elsewhere was called invalid Punycode when any label started `xn--`.
    @Test func invalidPunycodeOnlyForTheLabelThatFails() {
        let long = String(repeating: "a", count: 64)
        #expect(parse("applinks:xn--bcher-kva.\(long).com").errorCode == "entitlement-invalid-host")
        #expect(parse("applinks:xn--bcher-kva.😀.com").errorCode == "entitlement-invalid-host")
        #expect(parse("applinks:xn--zz.\(long).com").errorCode == "entitlement-invalid-punycode")
        #expect(parse("applinks:xn--ls8h.example.com").errorCode == "entitlement-invalid-punycode")
        #expect(parse("applinks:xn--bcher-kva.example.com").errorCode == nil)
    }

    /// Nested Xcode variables resolve inner first (`$(HOST_$(CONFIGURATION))`); the first `)` ended
    /// the name, so the message named `HOST_$(CONFIGURATION` and its fix could not work.
    @Test func nestedVariablesResolve() throws {
        let defines = ["CONFIGURATION": "Debug", "HOST_Debug": "dev.example.com"]
        let entry = parse("applinks:$(HOST_$(CONFIGURATION))", defines: defines)
        #expect(entry.errorCode == nil && entry.host == "dev.example.com", "\(entry.findings)")
        #expect(parse("applinks:${HOST_$(CONFIGURATION)}", defines: defines).host == "dev.example.com")
        let missing = try #require(parse("applinks:$(HOST_$(CONFIGURATION))", defines: ["CONFIGURATION": "Release"]).findings.first)
        #expect(missing.code == "entitlement-unresolved-variable" && missing.fix == "pass --define HOST_Release=VALUE, or read the entitlements of the built app", "\(missing)")
        let inner = try #require(parse("applinks:$(HOST_$(CONFIGURATION))").findings.first)
        #expect(inner.fix?.hasPrefix("pass --define CONFIGURATION=VALUE") == true, "\(inner)")
        // Deeper than 8 levels is unresolved, not a stack overflow.
        let deep = String(repeating: "$(", count: 10_000) + "X" + String(repeating: ")", count: 10_000)
        #expect(parse("applinks:\(deep)").errorCode == "entitlement-unresolved-variable")
        #expect(parse("applinks:$(A").errorCode != "entitlement-unresolved-variable")
    }

    @Test func messagesNameWhatTheEntrySays() throws {
        #expect(try #require(parse("applinks:${APP_DOMAIN}").findings.first).message.contains("the Xcode variable ${APP_DOMAIN}"))
        #expect(try #require(parse("applinks:$(APP_DOMAIN)").findings.first).message.contains("the Xcode variable $(APP_DOMAIN)"))
        let both = try #require(parse("applinks:example.com?mode=developer+managed").findings.first)
        #expect(both.message.contains("only devices in both developer and managed mode use it"), "\(both.message)")
        #expect(try #require(parse("applinks:example.com?mode=managed").findings.first).message.contains("only managed devices use it"))
    }

    /// An IP literal is named as such (`[::1]` was "includes a port (1])"); a name whose last
    /// label is a number is one too (`1.2.3` is 1.2.0.3 to a resolver); names with numeric labels
    /// elsewhere stay domain names.
    @Test func ipLiteralsAreNamed() throws {
        let finding = try #require(parse("applinks:[::1]").findings.first)
        #expect(finding.message == "'applinks:[::1]' names the IP address [::1]; an entry names a domain, which devices look up by name")
        for entry in ["applinks:1.2.3.example.com", "applinks:123.example", "applinks:0x.example", "applinks:example.0x7g"] {
            #expect(parse(entry).errorCode != "entitlement-ip-address", "\(entry)")
        }
        for entry in ["applinks:256.1.1.1", "applinks:1.2.3", "applinks:example.0X1F"] {
            #expect(parse(entry).errorCode == "entitlement-ip-address", "\(entry)")
        }
    }

    @Test func nonStringElement() {
        let entries = EntryParser().parse([nil])
        #expect(entries[0].errorCode == "entitlement-not-string")
    }

    @Test func unicodeHostIsFetchedUnderPunycodeButIsAnError() throws {
        let entry = parse("applinks:上海.example.中国")
        #expect(entry.errorCode == "entitlement-not-punycode")
        #expect(entry.host == "xn--fhqz97e.example.xn--fiqs8s")
        let fix = try #require(entry.findings.first { $0.code == "entitlement-not-punycode" }?.fix)
        #expect(fix.contains("applinks:xn--fhqz97e.example.xn--fiqs8s"))
        // plan says what fetch says: it never associates (plan said null, "not judged").
        #expect(EntryVerdict(parsed: entry).associated == false)
        #expect(EntryVerdict(parsed: parse("applinks:example.com")).associated == nil)
        #expect(EntryVerdict(parsed: parse("applinks:https://example.com")).associated == false)
    }

    /// A label with `--` in its third and fourth place that is not Punycode names a host as it
    /// is. Regression: `entitlement-invalid-host` (libidn2's `IDN2_2HYPHEN`), never fetched.
    @Test func doubleHyphenLabelsThatAreNotPunycodeAreFetched() {
        for text in ["applinks:r3---sn-abc.googlevideo.com", "applinks:*.ab--cd.example.com", "webcredentials:ab--cd.example.com"] {
            let entry = parse(text)
            #expect(entry.findings.isEmpty, "\(text): \(entry.findings)")
            #expect(entry.isFetchable && entry.host?.contains("--") == true, "\(text)")
        }
    }

    @Test func wildcardFetchesTheParent() {
        let entry = parse("applinks:*.users.example.com")
        #expect(entry.isWildcard)
        #expect(entry.host == "users.example.com")
        #expect(entry.domain == "*.users.example.com")
        #expect(entry.findings.isEmpty)
    }

    @Test func warningsTrimAndLowerCase() {
        let entry = parse("  applinks:WWW.Example.COM \n")
        #expect(entry.errorCode == nil)
        #expect(entry.host == "www.example.com")
        #expect(Set(entry.findings.map(\.code)) == ["entitlement-whitespace", "entitlement-uppercase"])
        #expect(entry.findings.allSatisfy { $0.severity == .warning })
    }

    @Test(arguments: AlternateMode.allCases)
    func modesAreKept(mode: AlternateMode) {
        let entry = parse("webcredentials:example.com?mode=\(mode.rawValue)")
        #expect(entry.mode == mode)
        #expect(entry.service == .webcredentials)
        #expect(entry.host == "example.com")
        #expect(entry.normalized == "webcredentials:example.com?mode=\(mode.rawValue)")
        #expect(entry.findings.map(\.code) == ["entitlement-alternate-mode"])
    }

    @Test func unknownServiceIsKeptWithAWarning() {
        let entry = parse("Applinks:example.com")
        #expect(entry.service == .unknown("Applinks"))
        #expect(entry.isFetchable)
        let finding = entry.findings.first { $0.code == "entitlement-unknown-service" }
        #expect(finding?.severity == .warning)
        #expect(finding?.fix == "write 'applinks:'")
    }

    @Test func definesResolveVariables() {
        let entry = parse("applinks:$(APP_DOMAIN)", defines: ["APP_DOMAIN": "links.example.com"])
        #expect(entry.host == "links.example.com")
        #expect(entry.findings.isEmpty)
    }

    @Test func duplicatesAreFlagged() {
        let entries = EntryParser().parse(["applinks:example.com", "applinks:EXAMPLE.com", "webcredentials:example.com"])
        #expect(entries[1].findings.contains { $0.code == "entitlement-duplicate" })
        #expect(!entries[2].findings.contains { $0.code == "entitlement-duplicate" })
    }
}

struct DomainPrioritizerTests {
    @Test func tiersForChina() {
        let prioritizer = DomainPrioritizer(region: "CN")
        #expect(prioritizer.tier(of: "example.com") == 0)
        #expect(prioritizer.tier(of: "example.net") == 0)
        #expect(prioritizer.tier(of: "example.org") == 0)
        #expect(prioritizer.tier(of: "example.cn") == 1)
        #expect(prioritizer.tier(of: "example.xn--fiqs8s") == 1)
        #expect(prioritizer.tier(of: "example.xn--fiqz9s") == 1)
        #expect(prioritizer.tier(of: "example.de") == 2)
        #expect(prioritizer.tier(of: "example.io") == 2)
    }

    @Test(arguments: [("GB", "uk", 1), ("UK", "uk", 1), ("GB", "gb", 1), ("RU", "xn--p1ai", 1), ("DE", "uk", 2), ("TW", "xn--kpry57d", 1),
                   // ccTLDs the public suffix list names only through a wildcard or second-level names.
                   ("ZA", "za", 1), ("NP", "np", 1), ("KH", "kh", 1), ("BD", "bd", 1), ("JM", "jm", 1)])
    func regionTLDs(region: String, tld: String, tier: Int) {
        #expect(DomainPrioritizer(region: region).tier(of: "site.\(tld)") == tier)
    }

    @Test func noRegionMeansTwoTiers() {
        let prioritizer = DomainPrioritizer(region: nil)
        #expect(prioritizer.tier(of: "a.cn") == 2)
        #expect(prioritizer.tier(of: "a.com") == 0)
    }

    @Test(arguments: [
        (["LANG": "zh_CN.UTF-8"], "CN"),
        (["LC_ALL": "en_GB@euro", "LANG": "zh_CN.UTF-8"], "GB"),
        (["LC_MESSAGES": "de_DE.UTF-8", "LANG": "fr_FR.UTF-8"], "DE"),
        (["LANG": "C.UTF-8"], nil),
        (["LC_ALL": "POSIX", "LANG": "fr_FR.UTF-8"], nil),
        (["LANG": "fr"], nil),
        ([:], nil),
    ] as [([String: String], String?)])
    func regionFromEnvironment(environment: [String: String], expected: String?) {
        #expect(DomainPrioritizer.region(fromEnvironment: environment) == expected)
    }

    /// Priority orders, never drops: every host is planned once, tiers ascending, entitlement
    /// order kept inside a tier.
    @Test func planOrder() {
        let entries = EntryParser().parse([
            "applinks:a.de", "applinks:b.cn", "applinks:c.com", "webcredentials:c.com", "applinks:*.c.com",
            "applinks:d.xn--fiqs8s", "applinks:e.org", "applinks:f.io", "applinks:g.net",
        ])
        let plan = FetchPlan(entries: entries, prioritizer: DomainPrioritizer(region: "CN"))
        #expect(plan.fetches.map(\.host) == ["c.com", "e.org", "g.net", "b.cn", "d.xn--fiqs8s", "a.de", "f.io"])
        #expect(plan.fetches.map(\.tier) == [0, 0, 0, 1, 1, 2, 2])
        #expect(plan.fetches[0].entryIndexes == [2, 3, 4])
        let otherRegion = FetchPlan(entries: entries, prioritizer: DomainPrioritizer(region: "DE"))
        #expect(otherRegion.fetches.map(\.host) == ["c.com", "e.org", "g.net", "a.de", "b.cn", "d.xn--fiqs8s", "f.io"])
    }

    /// A plan built from a filtered list (as `match` keeps only the `applinks` entries) points at
    /// positions in its own entries, not at the entries' indexes in the original list.
    @Test func planOfAFilteredListIndexesItsOwnEntries() {
        let all = EntryParser().parse(["webcredentials:example.com", "applinks:example.com", "webcredentials:b.com", "applinks:*.b.com"])
        let applinks = all.filter { $0.service == .applinks }
        #expect(applinks.map(\.index) == [1, 3])
        let plan = FetchPlan(entries: applinks, prioritizer: DomainPrioritizer(region: nil))
        #expect(plan.fetches.map(\.host) == ["example.com", "b.com"])
        #expect(plan.fetches.map(\.entryIndexes) == [[0], [1]])
        for fetch in plan.fetches {
            #expect(fetch.entryIndexes.allSatisfy { plan.entries.indices.contains($0) && plan.entries[$0].host == fetch.host })
        }
    }
}
