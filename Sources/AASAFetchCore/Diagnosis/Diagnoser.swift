import CurlTransport
import Foundation
import IDNA

/// Walks the steps the OS takes to associate one entitlement entry and stops at the first that
/// fails (`aasa-fetch diagnose`): entry → host → DNS → TCP → TLS → HTTP → JSON → structure → app ID
/// and service → CDN, then a user-agent check. Each step is passed, warned or failed, with what it
/// saw and, when it is not passed, what to change.
///
/// `?mode=developer` entries are judged by developer-mode rules: fetched directly with the device's
/// user agent, and any *valid* certificate is accepted (an untrusted or self-signed chain is a
/// warning; an expired, not yet valid or wrongly named one still fails).
public struct Diagnoser: Sendable {
    /// The user agent of a device's own download (`swcd`), used for `?mode=` entries and the check.
    public static let deviceUserAgent = "swcd (unknown version) CFNetwork/1568.200.51 Darwin/24.1.0"
    /// A browser's user agent, for the user-agent check.
    public static let browserUserAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"

    private let transport: any HTTPTransferring
    private let options: FetchOptions
    private let route: RouteChoice
    private let cdnBase: String

    /// Creates a diagnoser.
    /// - Parameters:
    ///   - transport: The HTTP client (one ``CurlClient`` for the whole run).
    ///   - options: The network options of the run.
    ///   - route: `origin`, `cdn` or `both`.
    ///   - cdnBase: The CDN's base URL.
    public init(transport: any HTTPTransferring, options: FetchOptions, route: RouteChoice = .origin,
                cdnBase: String = CDNFetcher.defaultBase) {
        self.transport = transport
        self.options = options
        self.route = route
        self.cdnBase = cdnBase
    }

    /// Diagnoses one entry for these app IDs (empty: association cannot be judged, a warning).
    public func diagnose(_ entry: AssociatedDomainEntry, appIDs: [String]) async -> Diagnosis {
        var walk = Walk(entry: entry, appIDs: appIDs, route: route)
        await walk.run(diagnoser: self)
        return walk.diagnosis
    }

    // MARK: - The walk

    fileprivate struct Walk {
        let entry: AssociatedDomainEntry
        let appIDs: [String]
        let effectiveRoute: RouteChoice
        var diagnosis: Diagnosis
        var stopped = false

        init(entry: AssociatedDomainEntry, appIDs: [String], route: RouteChoice) {
            self.entry = entry
            self.appIDs = appIDs
            let direct = entry.mode != nil
            effectiveRoute = direct ? .origin : route
            diagnosis = Diagnosis(
                entry: entry.raw, normalized: entry.normalized, service: entry.service, domain: entry.domain,
                host: entry.host, mode: entry.mode,
                developerMode: entry.mode == .developer || entry.mode == .developerManaged,
                route: effectiveRoute, url: nil, appIDs: appIDs, associated: nil, code: "ok", failedStep: nil,
                steps: [], userAgents: [], cdn: nil)
        }

        var developerMode: Bool { diagnosis.developerMode }

        /// Adds a step; a failed one stops the walk and sets the diagnosis' code.
        mutating func add(_ step: DiagnosisStep) {
            diagnosis.steps.append(step)
            if step.status == .failed, !stopped {
                stopped = true
                diagnosis.failedStep = step.step
                diagnosis.code = step.code
                diagnosis.associated = false
            }
        }

        mutating func run(diagnoser: Diagnoser) async {
            entitlementStep()
            guard !stopped, let host = entry.host, let service = entry.service else {
                diagnosis.associated = false
                return
            }
            hostStep(host: host, diagnoser: diagnoser)
            var judged: HostFetchResult?
            var originResult: HostFetchResult?
            var userAgentURL: String?
            var matteringAgent = diagnoser.options.userAgent
            if effectiveRoute != .cdn {
                let origin = await originSteps(host: host, diagnoser: diagnoser)
                originResult = origin.result
                judged = origin.result
                userAgentURL = origin.userAgentURL
                matteringAgent = origin.userAgent
            } else {
                judged = await cdnStep(host: host, service: service, origin: nil, diagnoser: diagnoser)
            }
            if !stopped, let judged {
                diagnosis.url = judged.url
                bodySteps(judged, service: service)
            }
            if !stopped, effectiveRoute == .both, let originResult {
                _ = await cdnStep(host: host, service: service, origin: originResult, diagnoser: diagnoser)
            }
            if effectiveRoute == .cdn, let cdn = diagnosis.cdn, cdn.code == "cdn-origin-failure",
               cdn.headers?.swcError == "SWCERR00101" {
                userAgentURL = "https://\(host)\(AASAFetcher.wellKnownPath)"
            }
            if let userAgentURL {
                await userAgentStep(url: userAgentURL, mattering: matteringAgent, diagnoser: diagnoser)
            }
            if !stopped {
                diagnosis.code = "ok"
                let association = diagnosis.steps.first { $0.step == "association" }
                diagnosis.associated = association?.code == "app-id-unknown" ? nil : true
            }
        }

        // MARK: Entitlement and host

        mutating func entitlementStep() {
            var details: [String] = []
            if let service = entry.service { details.append("service: \(service.name)\(service.isKnown ? "" : " (unknown to Apple)")") }
            if let domain = entry.domain { details.append("domain: \(domain)") }
            if entry.isWildcard, let host = entry.host {
                details.append("wildcard: covers every subdomain of \(host), not \(host) itself")
            }
            if let host = entry.host, host.split(separator: ".").contains(where: { $0.hasPrefix("xn--") }) {
                details.append("Punycode: \(host) (\(IDNAForm.unicode(host)))")
            }
            switch entry.mode {
            case .developer?, .developerManaged?:
                details.append("mode: \(entry.mode!.rawValue) — only devices in developer mode; direct fetch, any valid certificate accepted")
            case .managed?:
                details.append("mode: managed — only MDM-managed devices; direct fetch, a system-trusted certificate required")
            case nil:
                details.append("mode: none — devices on iOS 14+/macOS 11+ get the file through Apple's CDN")
            }
            let errors = entry.findings.filter { $0.severity == .error }
            let warnings = entry.findings.filter { $0.severity == .warning }
            let raw = entry.raw ?? "(not a string)"
            if let first = errors.first {
                add(DiagnosisStep(step: "entitlement", title: "Entitlement entry", status: .failed, code: first.code,
                                  summary: "\(raw): \(first.message)", details: details, findings: entry.findings,
                                  fix: first.fix ?? entry.normalized.map { "write '\($0)'" }))
            } else if let first = warnings.first {
                add(DiagnosisStep(step: "entitlement", title: "Entitlement entry", status: .warned, code: first.code,
                                  summary: "\(raw): \(first.message)", details: details, findings: entry.findings, fix: first.fix))
            } else {
                add(DiagnosisStep(step: "entitlement", title: "Entitlement entry", status: .passed,
                                  summary: "\(raw) is well formed", details: details, findings: entry.findings))
            }
        }

        mutating func hostStep(host: String, diagnoser: Diagnoser) {
            var details: [String] = []
            let originURL = "https://\(host)\(AASAFetcher.wellKnownPath)"
            let cdnURL = CDNFetcher(transport: diagnoser.transport, options: diagnoser.options, base: diagnoser.cdnBase).url(for: host)
            let summary: String
            switch effectiveRoute {
            case .origin:
                summary = "\(host): the device fetches \(originURL)"
                if entry.mode != nil {
                    details.append("?mode= entries are fetched from the origin directly, never through Apple's CDN")
                    if diagnoser.route != .origin { details.append("--route \(diagnoser.route.rawValue) does not apply to this entry") }
                } else {
                    details.append("iOS 14+/macOS 11+ devices read \(cdnURL) instead (--route cdn or both to check it)")
                }
            case .cdn:
                summary = "\(host): the device fetches \(cdnURL) (Apple's CDN)"
                details.append("the CDN fetches \(originURL) on its own schedule")
            case .both:
                summary = "\(host): the origin \(originURL), then Apple's CDN \(cdnURL)"
            }
            if entry.isWildcard { details.append("\(entry.domain ?? "") is served by the file of \(host)") }
            if diagnoser.options.extraCAFile != nil { details.append("--cacert \(diagnoser.options.extraCAFile!) is trusted besides the system store") }
            add(DiagnosisStep(step: "host", title: "Host fetched", status: .passed, summary: summary, details: details))
        }

        // MARK: JSON, structure, association

        mutating func bodySteps(_ result: HostFetchResult, service: Service) {
            let body = result.body ?? []
            let source = result.route == .cdn ? "the CDN's copy" : "the file"
            switch AASADecoder.decode(body) {
            case .invalidJSON(let error, _):
                let looksHTML = AASAFetcher.looksLikeHTML(body)
                let finding = result.findings.first { $0.code == "invalid-json" }
                add(DiagnosisStep(
                    step: "json", title: "JSON", status: .failed, code: "invalid-json",
                    summary: "\(source) is not valid JSON: line \(error.line), column \(error.column): \(error.message)"
                        + (looksHTML ? " (it looks like an HTML page)" : ""),
                    details: ["at line \(error.line), column \(error.column): \(error.excerpt)", "kind: \(error.kind.rawValue)"],
                    findings: finding.map { [$0] } ?? [],
                    fix: finding?.fix ?? "fix the JSON syntax"))
                return
            case .notAnAssociationFile(let reason, _):
                add(DiagnosisStep(step: "json", title: "JSON", status: .passed, summary: "\(source) is valid JSON (\(body.count) bytes)"))
                add(DiagnosisStep(
                    step: "structure", title: "Structure", status: .failed, code: "not-an-association-file",
                    summary: "valid JSON but not an association file: \(reason)",
                    findings: result.findings.filter { $0.code == "not-an-association-file" },
                    fix: "the top level must be an object with applinks, webcredentials, activitycontinuation, appclips or authsrv"))
                return
            case .document(let document, _):
                if let bom = result.findings.first(where: { $0.code == "bom" }) {
                    add(DiagnosisStep(step: "json", title: "JSON", status: .warned, code: "bom",
                                      summary: "\(source) is valid JSON after a UTF-8 byte order mark", findings: [bom], fix: bom.fix))
                } else {
                    add(DiagnosisStep(step: "json", title: "JSON", status: .passed, summary: "\(source) is valid JSON (\(body.count) bytes)"))
                }
                structureStep(document: document, body: body)
                associationStep(document: document, service: service, host: result.host, source: source)
            }
        }

        mutating func structureStep(document: AASADocument, body: [UInt8]) {
            let lint = AASALinter.lint(body).filter { $0.code != "bom" }
            var details = ["services: " + document.services.map(\.name).joined(separator: ", ")]
            if let applinks = document.applinks {
                details.append("applinks: \(applinks.details.count) detail\(applinks.details.count == 1 ? "" : "s")")
            }
            let serious = lint.filter { $0.severity != .info }
            if let first = serious.first {
                add(DiagnosisStep(step: "structure", title: "Structure", status: .warned, code: first.code,
                                  summary: "\(serious.count) lint finding\(serious.count == 1 ? "" : "s"); first: \(first.message)",
                                  details: details, findings: lint, fix: first.fix))
            } else {
                add(DiagnosisStep(step: "structure", title: "Structure", status: .passed, summary: "no lint findings",
                                  details: details, findings: lint))
            }
        }

        mutating func associationStep(document: AASADocument, service: Service, host: String, source: String) {
            let listed = document.appIDs(for: service)
            let details = ["\(service.name) lists: " + (listed.isEmpty ? "nothing" : listed.joined(separator: ", "))]
            guard !appIDs.isEmpty else {
                add(DiagnosisStep(step: "association", title: "App ID and service", status: .warned, code: "app-id-unknown",
                                  summary: "no app ID given, so association cannot be judged", details: details,
                                  fix: "pass --app-id TEAMID.bundle.id, or use entitlements with application-identifier"))
                return
            }
            let missing = appIDs.filter { !listed.contains($0) }
            guard let appID = missing.first else {
                add(DiagnosisStep(step: "association", title: "App ID and service", status: .passed,
                                  summary: "\(appIDs.joined(separator: ", ")) listed for \(service.name) in \(source) of \(host)", details: details))
                return
            }
            var message = "\(appID) is not listed for \(service.name) in \(source) of \(host)"
            let elsewhere = document.services.filter { $0 != service && document.appIDs(for: $0).contains(appID) }
            if !elsewhere.isEmpty {
                message += " (it is listed only under \(elsewhere.map(\.name).joined(separator: ", ")))"
            } else if !document.services.contains(service) {
                message += " (the file has no \(service.name) section)"
            }
            let fix = service == .applinks
                ? "add \"\(appID)\" to the appIDs of a detail under applinks.details"
                : "add \"\(appID)\" to \(service.name).apps"
            add(DiagnosisStep(step: "association", title: "App ID and service", status: .failed, code: "app-not-listed",
                              summary: message, details: details,
                              findings: [.error("app-not-listed", message, fix: fix)], fix: fix))
        }

        // MARK: CDN

        /// The CDN step: fetches the CDN's copy; with `origin` compares it by meaning.
        /// - Returns: the CDN result (for `--route cdn`, the one the body steps judge).
        mutating func cdnStep(host: String, service: Service, origin: HostFetchResult?, diagnoser: Diagnoser) async -> HostFetchResult? {
            let fetcher = CDNFetcher(transport: diagnoser.transport, options: diagnoser.options, base: diagnoser.cdnBase)
            let result = await fetcher.fetch(host: host)
            let headers = result.cdn
            var details = ["GET \(result.url) → " + (result.httpStatus.map { "HTTP \($0)" } ?? result.code)
                + (headers.map { $0.httpVersion.isEmpty ? "" : " over HTTP/\($0.httpVersion)" } ?? "")]
            if let headers {
                if let reason = headers.failureReason {
                    details.append("Apple-Failure-Reason: \(reason)" + (headers.swcError.map { " (code \($0)" + (headers.originStatus.map { ", origin status \($0))" } ?? ")") } ?? ""))
                }
                if let decoded = headers.failureDetails {
                    details.append("Apple-Failure-Details: " + decoded.keys.sorted().map { "\($0) = \(decoded[$0] ?? "")" }.joined(separator: "; "))
                } else if let raw = headers.failureDetailsRaw {
                    details.append("Apple-Failure-Details: \(raw)")
                }
                if let from = headers.from { details.append("Apple-From: \(from)") }
                if let direct = headers.tryDirect { details.append("Apple-Try-Direct: \(direct)") }
                if let format = headers.originFormat { details.append("Apple-Origin-Format: \(format)") }
                details.append(headers.cacheSummary)
            }
            let listed = result.document.map { $0.appIDs(for: service) }
            let cdnAssociated: Bool? = listed.map { ids in appIDs.isEmpty ? nil : appIDs.allSatisfy(ids.contains) } ?? false

            var changes: [AASAChange]?
            if let origin, let originDocument = origin.document, let cdnDocument = result.document {
                changes = AASADiff.changes(from: cdnDocument, to: originDocument)
            }
            let record = CDNRecord(result: result, associated: cdnAssociated, changes: changes)
            diagnosis.cdn = record
            let primary = result.findings.first { $0.severity == .error }

            if result.code.hasPrefix("cdn-") {
                add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .failed, code: result.code, summary: result.reason,
                                  details: details, findings: result.findings, fix: primary?.fix))
                return nil
            }
            guard let origin else {
                // --route cdn: the body steps judge the CDN's copy.
                add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .passed, summary: "the CDN answers 200", details: details))
                return result
            }
            if result.code != "ok" {
                add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .failed, code: result.code,
                                  summary: "the CDN's copy is unusable: \(result.reason)", details: details,
                                  findings: result.findings, fix: primary?.fix))
                return result
            }
            if let changes, !changes.isEmpty {
                let originAssociated = appIDs.isEmpty ? nil : Optional(appIDs.allSatisfy(origin.document?.appIDs(for: service).contains ?? { _ in false }))
                let comparison = RoutedRun.compare(origin: origin, originAssociated: originAssociated, cdn: result, cdnAssociated: cdnAssociated)
                let finding = comparison.findings.first
                details += changes.map { "differs: \($0.description)" }
                let blocking = cdnAssociated == false
                add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: blocking ? .failed : .warned, code: "cdn-stale",
                                  summary: (finding?.message ?? "the CDN's copy differs from the origin's file")
                                    + (blocking ? "; the CDN's copy does not list the app, so devices do not associate yet" : ""),
                                  details: details, findings: comparison.findings, fix: finding?.fix))
                return result
            }
            add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .passed,
                              summary: "the CDN serves a copy that means the same as the origin's file", details: details))
            return result
        }

        // MARK: User agents

        mutating func userAgentStep(url: String, mattering: String, diagnoser: Diagnoser) async {
            var options = diagnoser.options
            options.retryDelays = []
            options.verifyPeer = developerMode ? false : options.verifyPeer
            let agents = [("aasa-bot", diagnoser.options.userAgent), ("device", Diagnoser.deviceUserAgent),
                          ("browser", Diagnoser.browserUserAgent)]
            let transport = diagnoser.transport
            let probes = await withTaskGroup(of: (Int, UserAgentProbe).self) { group in
                for (index, agent) in agents.enumerated() {
                    var agentOptions = options
                    agentOptions.userAgent = agent.1
                    let fetcher = AASAFetcher(transport: transport, options: agentOptions)
                    group.addTask {
                        var attempts: [FetchAttempt] = []
                        switch await fetcher.fetchWithRetries(url: url, attempts: &attempts) {
                        case .response(let response, _), .notModified(let response, _):
                            return (index, UserAgentProbe(label: agent.0, userAgent: agent.1, httpStatus: response.status, code: "ok"))
                        case .failure(let failure):
                            return (index, UserAgentProbe(label: agent.0, userAgent: agent.1, httpStatus: nil, code: failure.kind.rawValue))
                        }
                    }
                }
                var collected: [(Int, UserAgentProbe)] = []
                for await probe in group { collected.append(probe) }
                return collected.sorted { $0.0 < $1.0 }.map(\.1)
            }
            diagnosis.userAgents = probes
            let details = probes.map { "\($0.userAgent) → \($0.outcome)" }
            let outcomes = Set(probes.map(\.outcome))
            guard outcomes.count > 1 else {
                diagnosis.steps.append(DiagnosisStep(step: "user-agent", title: "User agents", status: .passed,
                                                     summary: "every user agent gets the same answer (\(probes.first?.outcome ?? "none"))",
                                                     details: details))
                return
            }
            let matteringProbe = probes.first { $0.userAgent == mattering } ?? probes[0]
            let served = probes.filter { $0.httpStatus == 200 }
            let blocked = probes.filter { $0.httpStatus != 200 }
            let fix = "the origin treats user agents differently (a firewall, WAF or bot filter?): serve the file to every user agent, including AASA-Bot (Apple's CDN) and CFNetwork (devices)"
            let message = blocked.map { "\($0.userAgent) gets \($0.outcome)" }.joined(separator: ", ")
                + (served.isEmpty ? "" : " while " + served.map(\.label).joined(separator: " and ") + " get\(served.count == 1 ? "s" : "") HTTP 200")
            if matteringProbe.httpStatus != 200, !served.isEmpty {
                let step = DiagnosisStep(step: "user-agent", title: "User agents", status: .failed, code: "user-agent-blocked",
                                         summary: message, details: details,
                                         findings: [.error("user-agent-blocked", message, location: url, fix: fix)], fix: fix)
                diagnosis.steps.append(step)
                // The user-agent check explains the HTTP failure: it is the more precise code.
                if let index = diagnosis.steps.firstIndex(where: { $0.step == "http" && $0.status == .failed }) {
                    diagnosis.steps[index].code = "user-agent-blocked"
                    diagnosis.steps[index].fix = fix
                    diagnosis.steps[index].findings.append(.error("user-agent-blocked", message, location: url, fix: fix))
                    if diagnosis.failedStep == "http" { diagnosis.code = "user-agent-blocked" }
                } else if !stopped {
                    add(step)
                } else {
                    diagnosis.steps.append(step)
                }
            } else {
                diagnosis.steps.append(DiagnosisStep(step: "user-agent", title: "User agents", status: .warned, code: "user-agent-differs",
                                                     summary: "the origin answers user agents differently: " + details.joined(separator: "; "),
                                                     details: details, fix: fix))
            }
        }
    }
}

/// The Unicode form of a Punycode host, for display only.
enum IDNAForm {
    static func unicode(_ host: String) -> String {
        (try? IDNA.toUnicode(host)) ?? host
    }
}

// MARK: - DNS, TCP, TLS, HTTP on the origin

extension Diagnoser.Walk {
    mutating func originSteps(host: String, diagnoser: Diagnoser) async -> (result: HostFetchResult?, userAgentURL: String?, userAgent: String) {
        let options = diagnoser.options
        var userAgent = options.userAgent
        if entry.mode != nil, userAgent == FetchOptions().userAgent { userAgent = Diagnoser.deviceUserAgent }

        // DNS: every address, private ones flagged; --resolve / --connect-to said where they came from.
        let target = ConnectTarget(host: host, port: 443, resolve: options.resolve, connectTo: options.connectTo)
        var dnsDetails: [String] = []
        if let via = target.connectToEntry {
            dnsDetails.append("--connect-to \(via): connections to \(host):443 go to \(target.host):\(target.port)")
        }
        var addresses: [String]
        if let fixed = target.fixedAddresses {
            addresses = fixed
            dnsDetails.append("address\(fixed.count == 1 ? "" : "es") from --resolve \(target.resolveEntry ?? "")")
        } else if NetworkProbe.isNumeric(target.host) {
            addresses = [target.host]
            dnsDetails.append("address from --connect-to")
        } else {
            switch await NetworkProbe.resolve(target.host) {
            case .success(let found):
                addresses = found
            case .failure(let error):
                let fix = AASAFetcher.fix(for: .dnsFailure)
                add(DiagnosisStep(step: "dns", title: "DNS", status: .failed, code: "dns-failure",
                                  summary: "\(target.host) does not resolve: \(error.message)", details: dnsDetails, fix: fix))
                return (nil, nil, userAgent)
            }
        }
        let privateOnes = addresses.filter(AddressPolicy.isPrivateOrReserved)
        dnsDetails += addresses.map { "\($0)" + (privateOnes.contains($0) ? " (private or reserved)" : "") }
        let summary = "\(host) → \(addresses.joined(separator: ", "))"
            + (target.connectToEntry != nil ? " (via --connect-to)" : (target.fixedAddresses != nil ? " (from --resolve)" : ""))
        let privateFix = AASAFetcher.fix(for: .privateAddress)
        if !privateOnes.isEmpty, privateOnes.count == addresses.count, !options.allowPrivateAddresses {
            add(DiagnosisStep(step: "dns", title: "DNS", status: .failed, code: "private-address",
                              summary: "\(summary): only private or reserved addresses; Apple's CDN refuses them (SWCERR00202) and so does this tool without --allow-private",
                              details: dnsDetails, fix: privateFix))
            return (nil, nil, userAgent)
        } else if !privateOnes.isEmpty, entry.mode == nil {
            let why = options.allowPrivateAddresses
                ? "allowed by --allow-private, but Apple's CDN refuses them (SWCERR00202); only ?mode= direct fetches on a device could reach them"
                : "those are skipped; Apple's CDN refuses them too"
            add(DiagnosisStep(step: "dns", title: "DNS", status: .warned, code: "private-address",
                              summary: "\(summary): \(privateOnes.joined(separator: ", ")) private or reserved — \(why)",
                              details: dnsDetails, fix: privateFix))
        } else {
            add(DiagnosisStep(step: "dns", title: "DNS", status: .passed, summary: summary, details: dnsDetails))
        }

        // TCP: a bare connect to each usable address until one answers.
        let usable = options.allowPrivateAddresses ? addresses : addresses.filter { !privateOnes.contains($0) }
        var tcpDetails: [String] = []
        var connected = false
        var sawTimeout = false
        for address in usable {
            switch await NetworkProbe.connect(address: address, port: target.port, timeout: options.connectTimeout) {
            case .connected(let milliseconds):
                tcpDetails.append("\(address) port \(target.port): connected in \(milliseconds) ms")
                connected = true
            case .failed(let reason):
                tcpDetails.append("\(address) port \(target.port): \(reason)")
            case .timedOut:
                sawTimeout = true
                tcpDetails.append("\(address) port \(target.port): no answer within \(options.connectTimeout) s")
            }
            if connected { break }
        }
        guard connected else {
            let code = sawTimeout ? "timeout" : "connect-failure"
            add(DiagnosisStep(step: "tcp", title: "TCP connect", status: .failed, code: code,
                              summary: "no TCP connection to \(target.host) port \(target.port)", details: tcpDetails,
                              fix: sawTimeout ? "open port \(target.port) to every address (a firewall that drops packets?)" : AASAFetcher.fix(for: .connectFailure)))
            return (nil, nil, userAgent)
        }
        add(DiagnosisStep(step: "tcp", title: "TCP connect", status: .passed, summary: tcpDetails.last ?? "connected",
                          details: tcpDetails.count > 1 ? tcpDetails : []))

        // TLS and HTTP: the download itself, certificates collected.
        var fetchOptions = options
        fetchOptions.userAgent = userAgent
        fetchOptions.collectCertificates = true
        var fetcher = AASAFetcher(transport: diagnoser.transport, options: fetchOptions)
        let wellKnown = "https://\(host)\(AASAFetcher.wellKnownPath)"
        var attempts: [FetchAttempt] = []
        var outcome = await fetcher.fetchWithRetries(url: wellKnown, attempts: &attempts)
        var tlsStep: DiagnosisStep?

        if case .failure(let failure) = outcome, Self.isTLS(failure) {
            // Look at what the certificate says, without trusting it.
            var probeOptions = fetchOptions
            probeOptions.verifyPeer = false
            let probe = AASAFetcher(transport: diagnoser.transport, options: probeOptions)
            var probeAttempts: [FetchAttempt] = []
            let seen = await probe.fetchWithRetries(url: wellKnown, attempts: &probeAttempts)
            var certificates: [PeerCertificate] = []
            if case .response(let response, _) = seen { certificates = response.certificates }
            var details = Self.describe(certificates)
            let problem = certificates.first.flatMap { CertificateCheck.problem($0, host: host, now: Date()) }
            if developerMode, failure.kind == .tlsUntrusted, problem == nil, case .response = seen {
                details.append("developer mode: the chain is not trusted, but a device in developer mode accepts any valid certificate")
                tlsStep = DiagnosisStep(step: "tls", title: "TLS", status: .warned, code: "tls-untrusted",
                                        summary: "untrusted certificate accepted by developer-mode rules: \(failure.message)",
                                        details: details, fix: "release builds (without ?mode=developer) need a certificate from a publicly trusted CA")
                fetcher = probe
                outcome = seen
                attempts += probeAttempts
            } else {
                let code = problem?.code ?? failure.kind.rawValue
                let kind = TransferFailureKind(rawValue: code) ?? failure.kind
                var summary = AASAFetcher.describe(failure, host: host, options: options)
                if let problem, problem.code != failure.kind.rawValue { summary = problem.message }
                if developerMode { details.append("developer mode accepts an untrusted chain, but never an expired, not yet valid or wrongly named certificate") }
                add(DiagnosisStep(step: "tls", title: "TLS", status: .failed, code: code, summary: summary,
                                  details: details, fix: AASAFetcher.fix(for: kind)))
                return (nil, nil, userAgent)
            }
        }

        switch outcome {
        case .failure(let failure):
            let step = Self.phase(of: failure)
            if step == "http" {
                add(DiagnosisStep(step: "tls", title: "TLS", status: .passed,
                                  summary: "the handshake completed (the transfer failed afterwards, so no certificate details)"))
            }
            add(DiagnosisStep(step: step, title: step == "http" ? "HTTP" : step.uppercased(), status: .failed, code: failure.kind.rawValue,
                              summary: AASAFetcher.describe(failure, host: host, options: options),
                              details: attempts.map(Self.describe), fix: AASAFetcher.fix(for: failure.kind)))
            return (nil, step == "http" ? wellKnown : nil, userAgent)
        case .response(let response, let reliesOnExtraCA), .notModified(let response, let reliesOnExtraCA):
            add(tlsStep ?? Self.tlsStep(response, reliesOnExtraCA: reliesOnExtraCA, developerMode: developerMode, caFile: options.extraCAFile))
        }

        var url = wellKnown
        var httpDetails: [String] = []
        if case .response(let response, _) = outcome, response.status == 404 {
            let legacy = "https://\(host)\(AASAFetcher.legacyRootPath)"
            let fallback = await fetcher.fetchWithRetries(url: legacy, attempts: &attempts)
            if fetcher.evaluate(fallback, host: host, url: legacy).code == "ok" {
                outcome = fallback
                url = legacy
            } else if case .response(let other, _) = fallback {
                httpDetails.append("the legacy root path \(legacy) answers HTTP \(other.status) too")
            } else if case .failure(let other) = fallback {
                httpDetails.append("the legacy root path \(legacy) failed too: \(other.kind.rawValue)")
            }
        }
        var result = fetcher.evaluate(outcome, host: host, url: url)
        if url != wellKnown {
            result.findings.insert(.warning(
                "legacy-root-path",
                "the file is served only at \(AASAFetcher.legacyRootPath); Apple's CDN reads only \(AASAFetcher.wellKnownPath), so iOS 14+ devices never see it",
                location: url, fix: "serve the file at \(wellKnown)"), at: 0)
        }
        result.attempts = attempts
        guard case .response(let response, _) = outcome else { return (result, url, userAgent) }
        httpDetails.insert("GET \(url) → HTTP \(response.status) (HTTP/\(response.httpVersion), User-Agent \(userAgent))", at: 0)
        if let location = result.redirectLocation { httpDetails.append("Location: \(location)") }
        httpDetails.append("Content-Type: \(response.header("Content-Type") ?? "(none)")")
        httpDetails.append("Content-Encoding: \(response.header("Content-Encoding") ?? "none")")
        httpDetails.append("size: \(response.body.count) bytes decoded" + (response.header("Content-Length").map { ", Content-Length \($0)" } ?? ", no Content-Length"))
        if attempts.count > 1 { httpDetails.append("requests: " + attempts.map(Self.describe).joined(separator: "; ")) }
        let httpCodes: Set<String> = ["http-redirect", "http-client-error", "http-server-error", "http-unexpected-status"]
        if httpCodes.contains(result.code) {
            let finding = result.findings.first { $0.code == result.code }
            add(DiagnosisStep(step: "http", title: "HTTP", status: .failed, code: result.code, summary: result.reason,
                              details: httpDetails, findings: result.findings.filter { $0.severity != .info }, fix: finding?.fix))
            return (result, url, userAgent)
        }
        let warnings = result.findings.filter { ["content-type", "signed-file", "legacy-root-path"].contains($0.code) }
        if let first = warnings.first {
            add(DiagnosisStep(step: "http", title: "HTTP", status: .warned, code: first.code, summary: first.message,
                              details: httpDetails, findings: warnings, fix: first.fix))
        } else {
            add(DiagnosisStep(step: "http", title: "HTTP", status: .passed,
                              summary: "HTTP \(response.status), \(response.header("Content-Type") ?? "no Content-Type"), \(response.body.count) bytes",
                              details: httpDetails))
        }
        return (result, url, userAgent)
    }

    static func isTLS(_ failure: TransferFailure) -> Bool {
        switch failure.kind {
        case .tlsUntrusted, .tlsExpired, .tlsNotYetValid, .tlsHostnameMismatch, .tlsFailure: true
        default: false
        }
    }

    /// The step a transfer failure belongs to: a connect-phase timeout or a broken handshake is TLS
    /// (the bare TCP connect already succeeded), the rest of the transfer is HTTP.
    static func phase(of failure: TransferFailure) -> String {
        let text = failure.message.lowercased()
        switch failure.kind {
        case .dnsFailure, .privateAddress: return "dns"
        case .connectFailure: return "tcp"
        case .timeout: return text.contains("connection timed out") || text.contains("ssl") ? "tls" : "http"
        case .transferFailure: return text.contains("ssl") || text.contains("handshake") ? "tls" : "http"
        case .tlsUntrusted, .tlsExpired, .tlsNotYetValid, .tlsHostnameMismatch, .tlsFailure: return "tls"
        case .tooLarge, .invalidRequest, .invalidResponse, .headersTooLarge, .descriptorsExhausted, .cancelled: return "http"
        }
    }

    static func describe(_ attempt: FetchAttempt) -> String {
        "\(attempt.url): " + (attempt.httpStatus.map { "HTTP \($0)" } ?? attempt.code) + " in \(attempt.milliseconds) ms"
    }

    static func describe(_ certificates: [PeerCertificate]) -> [String] {
        guard !certificates.isEmpty else { return ["no certificate details (the server did not complete a handshake)"] }
        var lines: [String] = []
        for (index, certificate) in certificates.enumerated() {
            lines.append("certificate \(index): \(certificate.subject) — issued by \(certificate.issuer)")
            lines.append("  valid from \(certificate.notBefore) until \(certificate.notAfter)")
            if !certificate.subjectAltNames.isEmpty { lines.append("  names: \(certificate.subjectAltNames.joined(separator: ", "))") }
        }
        lines.append("chain ends at: \(certificates.last?.issuer ?? "")")
        return lines
    }

    static func tlsStep(_ response: TransferResponse, reliesOnExtraCA: Bool, developerMode: Bool, caFile: String?) -> DiagnosisStep {
        var details = describe(response.certificates)
        details.append(reliesOnExtraCA ? "trusted through --cacert \(caFile ?? "")" : "trusted by the system store")
        details.append("protocol: HTTP/\(response.httpVersion) over TLS; handshake done \(Int(response.timings.tlsHandshake * 1000)) ms after start")
        let leaf = response.certificates.first
        if let leaf, let end = CertificateCheck.date(leaf.notAfter) {
            let days = Int(end.timeIntervalSinceNow / 86_400)
            if days < 14 {
                return DiagnosisStep(step: "tls", title: "TLS", status: .warned, code: "tls-expires-soon",
                                     summary: "the certificate expires in \(days) day\(days == 1 ? "" : "s") (\(leaf.notAfter))",
                                     details: details, fix: "renew the certificate before it expires")
            }
        }
        if reliesOnExtraCA, !developerMode {
            return DiagnosisStep(step: "tls", title: "TLS", status: .warned, code: "custom-root",
                                 summary: "the certificate is trusted only through --cacert; a device accepts that only for ?mode=developer entries",
                                 details: details, fix: "use a certificate from a publicly trusted CA, or ?mode=developer entries while testing")
        }
        let names = leaf.map { $0.subjectAltNames.joined(separator: ", ") } ?? ""
        return DiagnosisStep(step: "tls", title: "TLS", status: .passed,
                             summary: "valid certificate" + (names.isEmpty ? "" : " for \(names)") + (leaf.map { ", until \($0.notAfter)" } ?? ""),
                             details: details)
    }
}

/// Where a connection to HOST:PORT really goes under curl's `--connect-to` and `--resolve`.
struct ConnectTarget {
    /// The host connected to (after `--connect-to`).
    var host: String
    /// The port connected to.
    var port: Int
    /// The `--connect-to` entry used, if any.
    var connectToEntry: String?
    /// Addresses given by a `--resolve` entry, if any.
    var fixedAddresses: [String]?
    /// The `--resolve` entry used, if any.
    var resolveEntry: String?

    init(host: String, port: Int, resolve: [String], connectTo: [String]) {
        self.host = host
        self.port = port
        for entry in connectTo {
            let parts = Self.fields(entry)
            guard parts.count >= 4 else { continue }
            guard parts[0].isEmpty || parts[0].lowercased() == host.lowercased(), parts[1].isEmpty || Int(parts[1]) == port else { continue }
            self.host = parts[2].isEmpty ? host : Self.unbracket(parts[2])
            self.port = parts[3].isEmpty ? port : (Int(parts[3]) ?? port)
            connectToEntry = entry
            break
        }
        for entry in resolve {
            var text = Substring(entry)
            if text.hasPrefix("-") { continue }
            if text.hasPrefix("+") { text = text.dropFirst() }
            let parts = Self.fields(String(text))
            guard parts.count >= 3, parts[0].lowercased() == self.host.lowercased(), Int(parts[1]) == self.port else { continue }
            fixedAddresses = parts[2...].joined(separator: ":").split(separator: ",").map { Self.unbracket(String($0)) }
            resolveEntry = entry
            break
        }
    }

    /// Splits at colons outside brackets.
    static func fields(_ entry: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var bracket = false
        for character in entry {
            if character == "[" { bracket = true }
            if character == "]" { bracket = false }
            if character == ":", !bracket {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts
    }

    static func unbracket(_ text: String) -> String {
        text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
    }
}

/// The checks a device in developer mode still makes on an untrusted certificate: its dates and its names.
enum CertificateCheck {
    /// Parses libcurl's certificate dates (`Jan  1 00:00:00 2026 GMT` or `2026-01-01 00:00:00 GMT`).
    static func date(_ text: String) -> Date? {
        let collapsed = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["MMM d HH:mm:ss yyyy zzz", "yyyy-MM-dd HH:mm:ss zzz", "MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: collapsed) { return date }
        }
        return nil
    }

    /// Whether a DNS name on a certificate covers `host` (one leading `*` label at most).
    static func nameMatches(_ name: String, host: String) -> Bool {
        let name = name.lowercased()
        let host = host.lowercased()
        if name == host { return true }
        guard name.hasPrefix("*.") else { return false }
        let suffix = name.dropFirst(1)
        guard host.hasSuffix(suffix) else { return false }
        return !host.dropLast(suffix.count).contains(".") && host.count > suffix.count
    }

    /// The first problem of a leaf certificate for `host`: expired, not yet valid, wrong name.
    static func problem(_ certificate: PeerCertificate, host: String, now: Date) -> (code: String, message: String)? {
        if let end = date(certificate.notAfter), end < now {
            return ("tls-expired", "the certificate expired on \(certificate.notAfter)")
        }
        if let start = date(certificate.notBefore), start > now {
            return ("tls-not-yet-valid", "the certificate is valid only from \(certificate.notBefore)")
        }
        var names = certificate.subjectAltNames
        if names.isEmpty, let range = certificate.subject.range(of: "CN=") {
            names = [String(certificate.subject[range.upperBound...].prefix { $0 != "," && $0 != "/" })]
        }
        if !names.contains(where: { nameMatches($0, host: host) }) {
            return ("tls-hostname-mismatch", "the certificate names \(names.joined(separator: ", ")), not \(host)")
        }
        return nil
    }
}
