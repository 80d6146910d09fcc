import CurlTransport

/// The verdict on one entitlement entry.
public struct EntryVerdict: Sendable, Hashable, Encodable {
    /// The parsed entry.
    public var entry: AssociatedDomainEntry
    /// `true` when every app ID is listed for the service, `false` when not (or the entry is
    /// invalid or its host failed), `nil` when no app ID is known so the question cannot be judged.
    public var associated: Bool?
    /// `ok`, or the first failure code (an `entitlement-…` code, the host's failure, `app-not-listed`).
    public var code: String
    /// Findings about the entry and its association.
    public var findings: [Finding]

    /// Creates a verdict.
    public init(entry: AssociatedDomainEntry, associated: Bool?, code: String, findings: [Finding]) {
        self.entry = entry
        self.associated = associated
        self.code = code
        self.findings = findings
    }

    /// The verdict before anything is fetched: entries with an error fail (a Unicode host too,
    /// which is fetched but never associates, as `fetch` says), the rest are open.
    public init(parsed entry: AssociatedDomainEntry) {
        self.init(entry: entry, associated: entry.errorCode == nil ? nil : false, code: entry.errorCode ?? "ok",
                  findings: entry.findings)
    }

    /// The JSON shape of a verdict: the entry's fields and the verdict's side by side.
    struct Record: Encodable {
        var index: Int
        var entry: String?
        var normalized: String?
        var service: Service?
        var domain: String?
        var host: String?
        var wildcard: Bool
        var mode: AlternateMode?
        var associated: Bool?
        var code: String
        var findings: [Finding]

        init(_ verdict: EntryVerdict) {
            index = verdict.entry.index
            entry = verdict.entry.raw
            normalized = verdict.entry.normalized
            service = verdict.entry.service
            domain = verdict.entry.domain
            host = verdict.entry.host
            wildcard = verdict.entry.isWildcard
            mode = verdict.entry.mode
            associated = verdict.associated
            code = verdict.code
            findings = verdict.findings
        }
    }

    /// Encodes ``Record``, the flat JSON shape.
    public func encode(to encoder: any Encoder) throws {
        try Record(self).encode(to: encoder)
    }
}

/// The verdict on one downloaded host: the per-domain record of every run.
public struct DomainReport: Sendable, Encodable {
    /// The host fetched.
    public var host: String
    /// The entitlement entries it serves, as written.
    public var entries: [String]
    /// The route.
    public var route: Route
    /// The priority tier.
    public var tier: Int
    /// The position in which its download started.
    public var startOrder: Int
    /// `true` when every entry it serves associates every app, `false` when one does not, `nil` when unjudged.
    public var associated: Bool?
    /// `ok`, or the first failure code.
    public var code: String
    /// One line on the outcome.
    public var reason: String
    /// HTTP status of the response the verdict rests on.
    public var httpStatus: Int?
    /// The URL of that response.
    public var url: String
    /// The redirect target of a 3xx answer.
    public var redirectLocation: String?
    /// `Content-Type` of that response.
    public var contentType: String?
    /// Body size in bytes (decoded).
    public var bytes: Int?
    /// App IDs the file lists, per service.
    public var appIDs: [String: [String]]
    /// Whether the certificate verified only through `--cacert`.
    public var reliesOnExtraCA: Bool
    /// Findings about the download, the file and the association, most serious first.
    public var findings: [Finding]
    /// Every request made.
    public var attempts: [FetchAttempt]
    /// Apple's CDN's answer for this host: with `--route cdn` the record's own answer, with
    /// `--route both` the CDN's side compared with the origin's; `nil` for origin-only records.
    public var cdn: CDNRecord? = nil
    /// The verdicts of the entries it serves, as this host's answer left them (in ``entries``'
    /// order): what the CI formats report per entry. Not part of the JSON shape.
    public var verdicts: [EntryVerdict] = []

    /// The number of warning findings.
    public var warningCount: Int { findings.filter { $0.severity == .warning }.count }

    private enum CodingKeys: String, CodingKey {
        case host, entries, route, tier, startOrder, associated, code, reason, httpStatus, url
        case redirectLocation, contentType, bytes, appIDs, reliesOnExtraCA = "customRoot", findings, attempts, cdn
    }
}

/// Counts over a run.
public struct RunSummary: Sendable, Hashable, Codable {
    /// Entitlement entries.
    public var entries: Int
    /// Hosts downloaded.
    public var domains: Int
    /// Entries that associate.
    public var associated: Int
    /// Entries that fail to associate.
    public var failed: Int
    /// Entries that could not be judged (no app ID known).
    public var unjudged: Int
    /// Warning findings over all entries and domains.
    public var warnings: Int
}

/// Where the app IDs of a run came from.
public enum AppIDSource: String, Sendable, Codable {
    /// `--app-id`.
    case option
    /// The entitlements' `application-identifier`.
    case entitlements
    /// The signed entitlements of the app given with `--app`.
    case app
    /// Nowhere: association could not be judged.
    case none
}

/// The result of `aasa-fetch` over a set of entries: what `--json` prints (keys in this order;
/// the streaming run writes the same document piece by piece).
public struct RunReport: Sendable, Encodable {
    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// The app IDs checked.
    public var appIDs: [String]
    /// Where they came from.
    public var appIDSource: AppIDSource
    /// The region used for priorities, when known.
    public var region: String?
    /// Findings about the inputs as a whole (app ID source, entitlements file).
    public var findings: [Finding]
    /// Every host downloaded, in the order downloads started.
    public var domains: [DomainReport]
    /// Every entry with its verdict, in entitlement order.
    public var entries: [EntryVerdict]
    /// Counts.
    public var summary: RunSummary

    /// Creates a report.
    public init(appIDs: [String], appIDSource: AppIDSource, region: String?, entries: [EntryVerdict],
                domains: [DomainReport], findings: [Finding], summary: RunSummary) {
        self.appIDs = appIDs
        self.appIDSource = appIDSource
        self.region = region
        self.findings = findings
        self.domains = domains
        self.entries = entries
        self.summary = summary
    }

    /// Whether every entry associates (or was unjudged), which makes the exit status 0.
    public var succeeded: Bool { summary.failed == 0 }
}

/// Judges association: joins parsed entries, fetch results and app IDs into a ``RunReport``.
public enum AssociationJudge {
    /// Builds the report.
    ///
    /// - Parameters:
    ///   - plan: the plan that was fetched.
    ///   - results: the fetch results, in plan order.
    ///   - appIDs: the app IDs to check; empty when unknown.
    public static func report(
        plan: FetchPlan,
        results: [HostFetchResult],
        appIDs: [String],
        appIDSource: AppIDSource,
        region: String?,
        findings: [Finding] = []
    ) -> RunReport {
        var verdicts = plan.entries.map(EntryVerdict.init(parsed:))
        var domains: [DomainReport] = []
        for (planned, result) in zip(plan.fetches, results) {
            domains.append(judgeHost(planned, result: result, verdicts: &verdicts, appIDs: appIDs))
        }
        let summary = Self.summary(
            verdicts: verdicts, domains: domains.count,
            domainWarnings: domains.reduce(0) { $0 + $1.warningCount }, runFindings: findings
        )
        return RunReport(appIDs: appIDs, appIDSource: appIDSource, region: region, entries: verdicts,
                         domains: domains, findings: findings, summary: summary)
    }

    /// Judges one downloaded host: updates the verdicts of the entries it serves (indexes into
    /// `verdicts`, the plan's entries) and returns the host's record. A streaming run calls this as
    /// each result arrives instead of keeping every result for ``report(plan:results:appIDs:appIDSource:region:findings:)``.
    public static func judgeHost(
        _ planned: PlannedFetch, result: HostFetchResult, verdicts: inout [EntryVerdict], appIDs: [String]
    ) -> DomainReport {
        for index in planned.entryIndexes {
            verdicts[index] = judge(verdicts[index], result: result, appIDs: appIDs)
        }
        return domainReport(planned: planned, result: result, verdicts: planned.entryIndexes.map { verdicts[$0] })
    }

    /// The counts of a run. Warnings are counted once: the entries' own (entitlement) warnings, the
    /// hosts' warnings (which already carry the association warnings of their entries) and the run's.
    public static func summary(verdicts: [EntryVerdict], domains: Int, domainWarnings: Int, runFindings: [Finding]) -> RunSummary {
        summary(counts: EntryCounts(verdicts), domains: domains, domainWarnings: domainWarnings, runFindings: runFindings)
    }

    /// ``summary(verdicts:domains:domainWarnings:runFindings:)`` from counts kept elsewhere (a
    /// ``RunSpool`` counts its verdicts in SQL).
    public static func summary(counts: EntryCounts, domains: Int, domainWarnings: Int, runFindings: [Finding]) -> RunSummary {
        RunSummary(
            entries: counts.entries,
            domains: domains,
            associated: counts.associated,
            failed: counts.failed,
            unjudged: counts.unjudged,
            warnings: counts.entitlementWarnings + domainWarnings + runFindings.filter { $0.severity == .warning }.count
        )
    }

    private static func judge(_ verdict: EntryVerdict, result: HostFetchResult, appIDs: [String]) -> EntryVerdict {
        var verdict = verdict
        let entryError = verdict.entry.errorCode
        guard result.code == "ok", let document = result.document, let service = verdict.entry.service else {
            verdict.associated = false
            verdict.code = entryError ?? result.code
            return verdict
        }
        if let entryError {
            verdict.associated = false
            verdict.code = entryError
            return verdict
        }
        let listed = document.appIDs(for: service)
        guard !appIDs.isEmpty else {
            verdict.associated = nil
            verdict.code = "ok"
            verdict.findings.append(.warning(
                "app-id-unknown",
                listed.isEmpty
                    ? "no app ID given, and the file lists none for \(service.name)"
                    : "no app ID given; the file lists for \(service.name): \(listed.joined(separator: ", "))",
                location: verdict.entry.raw,
                fix: "pass --app-id TEAMID.bundle.id, or use entitlements with application-identifier"
            ))
            return verdict
        }
        let missing = appIDs.filter { !listed.contains($0) }
        if missing.isEmpty {
            verdict.associated = true
            verdict.code = "ok"
            if result.reliesOnExtraCA, verdict.entry.mode != .developer, verdict.entry.mode != .developerManaged {
                verdict.findings.append(.warning(
                    "custom-root",
                    "the host's certificate is trusted only through --cacert; a device accepts it only for ?mode=developer entries",
                    location: verdict.entry.raw
                ))
            }
            return verdict
        }
        verdict.associated = false
        verdict.code = "app-not-listed"
        for appID in missing {
            verdict.findings.append(notListed(appID, service: service, document: document, host: result.host, location: verdict.entry.raw))
        }
        return verdict
    }

    /// At most `limit` of `items`, then how many more: a file listing 3,000 app IDs made a
    /// 95,000-character line per entry (the JSON keeps every app ID in `appIDs`).
    public static func shortList(_ items: [String], limit: Int = 5) -> String {
        guard items.count > limit else { return items.joined(separator: ", ") }
        return items.prefix(limit).joined(separator: ", ") + " and \(items.count - limit) more"
    }

    /// The `app-not-listed` finding for an app ID the file of `host` does not list for `service`:
    /// where else it is listed, or what the file lists instead, and what to add.
    public static func notListed(_ appID: String, service: Service, document: AASADocument, host: String, location: String?) -> Finding {
        // A service Apple does not document is never read from a file, whatever it lists: adding
        // the app there would change nothing.
        guard service.isKnown else {
            return .error(
                "app-not-listed",
                "'\(service.name)' is not a service Apple documents: devices read no \(service.name) section, so \(appID) never associates through this entry",
                location: location, fix: "use applinks, webcredentials, activitycontinuation, appclips or authsrv")
        }
        let listed = document.appIDs(for: service)
        let elsewhere = document.services.filter { $0 != service && document.appIDs(for: $0).contains(appID) }
        var message = "\(appID) is not listed for \(service.name) in the file of \(host)"
        if !elsewhere.isEmpty {
            message += " (it is listed only under \(elsewhere.map(\.name).joined(separator: ", ")))"
        } else if !document.services.contains(service) {
            message += " (the file has no \(service.name) section)"
        } else if !listed.isEmpty {
            message += " (it lists \(Self.shortList(listed)))"
        }
        return .error(
            "app-not-listed", message, location: location,
            fix: service == .applinks
                ? "add \"\(appID)\" to the appIDs of a detail under applinks.details"
                : "add \"\(appID)\" to \(service.name).apps"
        )
    }

    private static func domainReport(planned: PlannedFetch, result: HostFetchResult, verdicts: [EntryVerdict]) -> DomainReport {
        var associated: Bool? = true
        if verdicts.contains(where: { $0.associated == false }) {
            associated = false
        } else if verdicts.contains(where: { $0.associated == nil }) {
            associated = nil
        }
        let code = result.code != "ok" ? result.code : (verdicts.first { $0.code != "ok" }?.code ?? "ok")
        var appIDsByService: [String: [String]] = [:]
        for service in result.document?.services ?? [] {
            appIDsByService[service.name] = result.document?.appIDs(for: service)
        }
        var findings = result.findings
        if result.reliesOnExtraCA,
           verdicts.contains(where: { $0.entry.mode != .developer && $0.entry.mode != .developerManaged }) {
            findings.append(.warning(
                "custom-root",
                "the certificate is trusted only through --cacert; a device accepts that only for ?mode=developer entries",
                location: result.url,
                fix: "use a certificate from a publicly trusted CA, or ?mode=developer entries while testing"
            ))
        }
        for verdict in verdicts {
            for finding in verdict.findings where finding.code == "app-not-listed" || finding.code == "app-id-unknown" {
                if !findings.contains(finding) { findings.append(finding) }
            }
        }
        findings = findings.enumerated().sorted { ($1.element.severity, $0.offset) < ($0.element.severity, $1.offset) }.map(\.element)
        let reason: String
        if result.code != "ok" {
            reason = result.reason
        } else if let failing = verdicts.first(where: { $0.associated == false }) {
            reason = failing.findings.first { $0.severity == .error }?.message ?? failing.code
        } else {
            reason = result.reason
        }
        var report = DomainReport(
            host: result.host,
            entries: verdicts.map { $0.entry.raw ?? "" },
            route: result.route,
            tier: planned.tier,
            startOrder: result.startOrder,
            associated: associated,
            code: code,
            reason: reason,
            httpStatus: result.httpStatus,
            url: result.url,
            redirectLocation: result.redirectLocation,
            contentType: result.headers.first { $0.name.equalsIgnoringASCIICase("content-type") }?.value,
            bytes: result.body?.count,
            appIDs: appIDsByService,
            reliesOnExtraCA: result.reliesOnExtraCA,
            findings: findings,
            attempts: result.attempts
        )
        report.verdicts = verdicts
        return report
    }
}
