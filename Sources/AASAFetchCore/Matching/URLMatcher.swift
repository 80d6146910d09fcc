/// The decision for a URL over an app's entitlement: which file decided and how.
public struct HostMatchOutcome: Sendable, Hashable {
    /// The host whose file decided (`example.com` for a `*.example.com` entry); `nil` for
    /// ``MatchDecision/noMatch``.
    public var host: String?
    /// The decision inside that file.
    public var outcome: MatchOutcome

    /// The decision.
    public var decision: MatchDecision { outcome.decision }

    /// Creates an outcome.
    public init(host: String?, outcome: MatchOutcome) {
        self.host = host
        self.outcome = outcome
    }
}

/// Matches URLs against the association files of an app's `applinks` entitlement entries.
///
/// Candidate files for a URL's host (as Apple's `swcutil` reads them): the file of the exact
/// entitlement host first, then for each `*.D` entry whose `D` the host ends in (`.D`, at least
/// one more label; `*.D` never covers `D`) the file downloaded from `D`, longest `D` first. The
/// first file that reaches a decision decides; no decision in one file moves to the next.
public struct URLMatcher: Sendable {
    /// The entitlement entries' domains, `example.com` or `*.example.com` (lower-cased; an
    /// `applinks:` prefix and a `?mode=` suffix are removed).
    public let entitlementDomains: [String]
    /// The compiled association files, keyed by the host each was downloaded from.
    public let files: [String: CompiledAssociation]

    private let exactHosts: Set<String>
    /// Wildcard parents, longest first.
    private let wildcardParents: [String]

    /// Creates a matcher.
    ///
    /// - Parameters:
    ///   - entitlementDomains: the `applinks` entries (`example.com`, `*.example.com`,
    ///     `applinks:www.example.com?mode=developer`).
    ///   - files: the approved files, keyed by the host they were downloaded from; an entry with
    ///     no file is skipped.
    public init(entitlementDomains: [String], files: [String: CompiledAssociation]) {
        let domains = entitlementDomains.map(Self.normalisedEntry)
        self.entitlementDomains = domains
        var normalisedFiles: [String: CompiledAssociation] = [:]
        for (host, file) in files { normalisedFiles[Self.normalisedEntry(host)] = file }
        self.files = normalisedFiles
        exactHosts = Set(domains.filter { !$0.hasPrefix("*.") })
        var parents: [String] = []
        for domain in domains where domain.hasPrefix("*.") {
            let parent = String(domain.dropFirst(2))
            if !parents.contains(parent) { parents.append(parent) }
        }
        wildcardParents = parents.sorted { $0.count > $1.count }
    }

    /// Creates a matcher from one compiled file per host, with one exact entitlement entry
    /// for each host.
    public init(files: [String: CompiledAssociation]) {
        self.init(entitlementDomains: files.keys.sorted(), files: files)
    }

    private static func normalisedEntry(_ entry: String) -> String {
        var value = Substring(entry)
        if value.hasPrefix("applinks:") { value = value.dropFirst("applinks:".count) }
        if let mark = value.firstIndex(of: "?") { value = value[..<mark] }
        var host = String(value).lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// The hosts whose files are consulted for a URL host, in order (files not present are
    /// included; ``decide(url:appID:)`` skips them).
    public func candidateHosts(forHost host: String) -> [String] {
        candidateHosts(normalisedHost: Self.normalisedEntry(host))
    }

    /// The candidate hosts for a host already normalised by the URL splitter.
    func candidateHosts(normalisedHost host: String) -> [String] {
        var result: [String] = []
        forEachCandidate(normalisedHost: host) { candidate in
            result.append(candidate)
            return false
        }
        return result
    }

    /// Calls `body` with each candidate host in order until it returns `true`.
    @inline(__always)
    private func forEachCandidate(normalisedHost host: String, _ body: (String) -> Bool) {
        var exact = false
        if exactHosts.contains(host) {
            exact = true
            if body(host) { return }
        }
        guard !wildcardParents.isEmpty else { return }
        let hostBytes = host.utf8
        for parent in wildcardParents {
            let parentBytes = parent.utf8
            guard hostBytes.count > parentBytes.count + 1, !(exact && parent == host) else { continue }
            let dot = hostBytes.index(hostBytes.endIndex, offsetBy: -(parentBytes.count + 1))
            guard hostBytes[dot] == 0x2E, hostBytes[hostBytes.index(after: dot)...].elementsEqual(parentBytes) else { continue }
            if body(parent) { return }
        }
    }

    /// Decides a URL for an app.
    public func decide(url: String, appID: String) -> HostMatchOutcome {
        URLInput.with(url) { input -> HostMatchOutcome in
            // A URL without a host (`https:///a`) is no universal link.
            guard let input, input.isHTTP, let host = input.host, !host.isEmpty else {
                return HostMatchOutcome(host: nil, outcome: .noMatch)
            }
            var context = URLContext(input: input)
            var result = HostMatchOutcome(host: nil, outcome: .noMatch)
            forEachCandidate(normalisedHost: host) { candidate in
                guard let file = files[candidate] else { return false }
                let outcome = file.decide(appID: appID, context: &context)
                guard outcome.decision != .noMatch else { return false }
                result = HostMatchOutcome(host: candidate, outcome: outcome)
                return true
            }
            return result
        }
    }
}
