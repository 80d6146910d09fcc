import CurlTransport
import Foundation
import Synchronization

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
    public static let deviceUserAgent = UserAgentCheck.deviceUserAgent
    /// A browser's user agent, for the user-agent check.
    public static let browserUserAgent = UserAgentCheck.browserUserAgent

    let transport: any HTTPTransferring
    let cdnTransport: any HTTPTransferring
    let options: FetchOptions
    let route: RouteChoice
    let cdnBase: String
    let probe: any NetworkProbing
    /// What this diagnoser's walks saw of the network, reused by the next entry of the same host.
    let memo = Memo()

    /// Creates a diagnoser.
    /// - Parameters:
    ///   - transport: The HTTP client of the origin's requests (one ``CurlClient`` for the whole run).
    ///   - cdnTransport: The client of the CDN's requests, which keeps one connection to it (a
    ///     client of its own: a per-host limit on the origin's client would make the user-agent
    ///     check's requests to one host wait for each other); `nil` is `transport`.
    ///   - options: The network options of the run.
    ///   - route: `origin`, `cdn` or `both`.
    ///   - cdnBase: The CDN's base URL.
    ///   - probe: Name resolution and the bare TCP connect (the system's; tests script them).
    public init(transport: any HTTPTransferring, cdnTransport: (any HTTPTransferring)? = nil, options: FetchOptions,
                route: RouteChoice = .origin, cdnBase: String = CDNFetcher.defaultBase,
                probe: any NetworkProbing = SystemNetworkProbe()) {
        self.transport = transport
        self.cdnTransport = cdnTransport ?? transport
        self.options = options
        self.route = route
        self.cdnBase = cdnBase
        self.probe = probe
    }

    /// Diagnoses one entry for these app IDs (empty: association cannot be judged, a warning).
    public func diagnose(_ entry: AssociatedDomainEntry, appIDs: [String]) async -> Diagnosis {
        var walk = Walk(entry: entry, appIDs: appIDs, route: route)
        await walk.run(diagnoser: self)
        return walk.diagnosis
    }

    // MARK: - What the network said

    /// The answers a walk got from the network, kept for the run: `applinks:H` and
    /// `webcredentials:H` are one host, whose DNS, connect, download, CDN copy and user-agent
    /// check were each done again per entry (four entries of one slow host took 17 s and 24
    /// requests). A later entry of the same host replays them: its steps show what the first
    /// entry's requests saw, timings included.
    final class Memo: Sendable {
        /// The steps the origin's walk added and what it returned, by host and the entry's mode
        /// (a `?mode=` entry is fetched with the device's user agent and its own rules).
        struct Origin: Sendable {
            var steps: [DiagnosisStep]
            var result: HostFetchResult?
            var userAgentURL: String?
            var userAgent: String
        }

        private let state = Mutex<(origin: [String: Origin], cdn: [String: HostFetchResult], userAgents: [String: [UserAgentProbe]])>(([:], [:], [:]))

        func origin(_ key: String) -> Origin? { state.withLock { $0.origin[key] } }
        func keep(origin: Origin, for key: String) { state.withLock { $0.origin[key] = origin } }
        func cdn(_ host: String) -> HostFetchResult? { state.withLock { $0.cdn[host] } }
        func keep(cdn: HostFetchResult, for host: String) { state.withLock { $0.cdn[host] = cdn } }
        func userAgents(_ key: String) -> [UserAgentProbe]? { state.withLock { $0.userAgents[key] } }
        func keep(userAgents: [UserAgentProbe], for key: String) { state.withLock { $0.userAgents[key] = userAgents } }
    }

    // MARK: - The walk

    /// One entry's walk through the steps; each step is a method in the file named after it.
    struct Walk {
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
                let key = "\(host) \(entry.mode.map { "\($0)" } ?? "")"
                let origin: Memo.Origin
                if let seen = diagnoser.memo.origin(key) {
                    seen.steps.forEach { add($0) }
                    origin = seen
                } else {
                    let before = diagnosis.steps.count
                    let walked = await originSteps(host: host, diagnoser: diagnoser)
                    origin = Memo.Origin(steps: Array(diagnosis.steps[before...]), result: walked.result,
                                         userAgentURL: walked.userAgentURL, userAgent: walked.userAgent)
                    diagnoser.memo.keep(origin: origin, for: key)
                }
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
                userAgentURL = AASAFetcher.wellKnownURL(host)
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
    }
}
