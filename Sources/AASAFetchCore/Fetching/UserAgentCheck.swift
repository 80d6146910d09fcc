import CurlTransport

/// Whether an origin answers user agents differently: the same URL asked for with several user
/// agents, and the verdict when the agent that matters is refused while another is served. Used
/// by `diagnose` (its `user-agent` step, three agents) and by the fetch pipeline (one extra request
/// after a 403, for the `user-agent-blocked` warning).
public enum UserAgentCheck {
    /// The user agent of a device's own download (`swcd`).
    public static let deviceUserAgent = "swcd (unknown version) CFNetwork/1568.200.51 Darwin/24.1.0"
    /// A browser's user agent.
    public static let browserUserAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
    /// What to change when the origin treats user agents differently.
    public static let fix = "the origin treats user agents differently (a firewall, WAF or bot filter?): serve the file to every user agent, including AASA-Bot (Apple's CDN) and CFNetwork (devices)"

    /// What the answers to several user agents say.
    public enum Verdict: Sendable, Hashable {
        /// Every agent got the same answer.
        case same
        /// The agent that matters is refused while another gets HTTP 200 (`user-agent-blocked`).
        case blocked(message: String)
        /// The answers differ otherwise (`user-agent-differs`).
        case differs
    }

    /// Asks for `url` once per agent (no retries; the run's other network options), in parallel;
    /// the answers come back in the order of `agents`.
    static func probe(
        url: String, agents: [(label: String, userAgent: String)], options: FetchOptions, transport: any HTTPTransferring
    ) async -> [UserAgentProbe] {
        var options = options
        options.retryDelays = []
        let base = options
        return await withTaskGroup(of: (Int, UserAgentProbe).self) { group in
            for (index, agent) in agents.enumerated() {
                var agentOptions = base
                agentOptions.userAgent = agent.userAgent
                let fetcher = AASAFetcher(transport: transport, options: agentOptions)
                group.addTask {
                    var attempts: [FetchAttempt] = []
                    switch await fetcher.fetchWithRetries(url: url, attempts: &attempts) {
                    case .response(let response, _), .notModified(let response, _):
                        return (index, UserAgentProbe(label: agent.label, userAgent: agent.userAgent, httpStatus: response.status, code: "ok"))
                    case .failure(let failure):
                        return (index, UserAgentProbe(label: agent.label, userAgent: agent.userAgent, httpStatus: nil, code: failure.kind.rawValue))
                    }
                }
            }
            var collected: [(Int, UserAgentProbe)] = []
            for await probe in group { collected.append(probe) }
            return collected.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// The verdict on the answers: `blocked` when the agent that matters (`mattering`; the first
    /// probe when none has it) did not get HTTP 200 while another did.
    static func verdict(_ probes: [UserAgentProbe], mattering: String) -> Verdict {
        guard Set(probes.map(\.outcome)).count > 1, let first = probes.first else { return .same }
        let matteringProbe = probes.first { $0.userAgent == mattering } ?? first
        let served = probes.filter { $0.httpStatus == 200 }
        let refused = probes.filter { $0.httpStatus != 200 }
        guard matteringProbe.httpStatus != 200, !served.isEmpty else { return .differs }
        let message = refused.map { "\($0.userAgent) gets \($0.outcome)" }.joined(separator: ", ")
            + " while " + served.map(\.label).joined(separator: " and ") + " get\(served.count == 1 ? "s" : "") HTTP 200"
        return .blocked(message: message)
    }

    /// The fetch pipeline's check after a 403 to `agent` (the run's user agent): one request with
    /// another agent (the browser's, or the device's when the run already sends the browser's).
    /// Returns the `user-agent-blocked` warning when that one gets the file, else `nil`.
    static func afterForbidden(url: String, agent: String, options: FetchOptions, transport: any HTTPTransferring) async -> Finding? {
        let other = agent == browserUserAgent ? ("device", deviceUserAgent) : ("browser", browserUserAgent)
        let answers = await probe(url: url, agents: [other], options: options, transport: transport)
        let refused = UserAgentProbe(label: "run", userAgent: agent, httpStatus: 403, code: "ok")
        guard case .blocked(let message) = verdict([refused] + answers, mattering: agent) else { return nil }
        return .warning("user-agent-blocked", message, location: url, fix: fix)
    }
}
