/// An association file's `applinks` compiled once for matching many URLs.
///
/// Semantics (Apple's documentation, the conformance cases checked against `swcutil`):
/// * details in file order; only details that list the app (``AppLinksDetail/appIDs``) count;
///   the first of them that reaches a decision decides, else the next one is tried;
/// * inside a detail with `components`, the first component whose specified parts (`/`, `?`,
///   `#`) all match decides: `exclude` blocks and stops, else it is a match; an absent part
///   matches anything, an absent query or fragment reads as the empty string;
/// * a detail without `components` uses its legacy `paths`: only the path, always
///   case-sensitive and percent-encoded, a `NOT ` prefix excludes;
/// * every key a component leaves out (`/`, `?`, `#`, `exclude`, `caseSensitive`,
///   `percentEncoded`) comes from the detail's `defaults`, else `applinks.defaults`; a key no level
///   sets is absent (`exclude` then `false`, the two flags `true`); a `?` is taken as a whole
///   (dictionaries are not merged); legacy `paths` take no defaults;
/// * `percentEncoded: true` compares the parts as written in the URL (escapes and their hex case
///   significant); `false` percent-decodes the URL part and leaves the pattern as written;
/// * paths: leading and trailing runs of `/` are insignificant on both sides, and a pattern
///   ending in `/*` also matches the path without that last segment (`/buy/*` matches `/buy`);
/// * query dictionaries: every item with the name must match, an absent item reads as `""`,
///   items not named are ignored; a dictionary with a non-string value matches any query.
public struct CompiledAssociation: Sendable {
    /// The document this was compiled from.
    public var document: AASADocument { source.document }
    /// The document behind one reference, so that copying a compiled file (``URLMatcher`` does
    /// per decision) retains three references, not every array and string of the document.
    private let source: Source
    let details: [CompiledDetail]
    let detailsByApp: [String: [Int]]

    private final class Source: Sendable {
        let document: AASADocument
        init(_ document: AASADocument) { self.document = document }
    }

    /// Compiles the `applinks` of a document (a document without `applinks` never matches).
    public init(document: AASADocument) {
        self.source = Source(document)
        let applinks = document.applinks
        let variables = applinks?.substitutionVariables ?? [:]
        var details: [CompiledDetail] = []
        var byApp: [String: [Int]] = [:]
        let budget = CompiledPattern.Budget()
        for (index, detail) in (applinks?.details ?? []).enumerated() {
            details.append(CompiledDetail(index: index, detail: detail, applinksDefaults: applinks?.defaults, variables: variables, budget: budget))
            var seen = Set<String>()
            for appID in detail.appIDs where seen.insert(appID).inserted {
                byApp[appID, default: []].append(index)
            }
        }
        self.details = details
        self.detailsByApp = byApp
    }

    /// Whether some detail lists the app.
    public func listsApp(_ appID: String) -> Bool {
        detailsByApp[appID] != nil
    }

    /// Decides a URL for an app with this file alone (the URL's host is not checked; use
    /// ``URLMatcher`` for host selection). A URL that cannot be split, or whose scheme is not
    /// `http`/`https`, is ``MatchDecision/noMatch``.
    public func decide(url: String, appID: String) -> MatchOutcome {
        guard let indices = detailsByApp[appID] else { return .noMatch }
        return URLInput.with(url) { input -> MatchOutcome in
            guard let input, input.isHTTP else { return .noMatch }
            var context = URLContext(input: input)
            return decide(detailIndices: indices, context: &context)
        }
    }

    /// Decides as the line protocol does: the file was served for `domain` and the app's
    /// entitlement is `applinks:<domain>`, so a URL whose host differs is
    /// ``MatchDecision/noMatch``; an empty or `nil` domain skips the host check. The domain is
    /// read as a URL's host is (lower case, Unicode in Punycode), as `match --host` reads it.
    public func decide(url: String, appID: String, domain: String?) -> MatchOutcome {
        guard let written = domain, !written.isEmpty else { return decide(url: url, appID: appID) }
        let host = URLParts.normalisedHost(written)
        let matcher = URLMatcher(entitlementDomains: [host], files: [host: self])
        return matcher.decide(url: url, appID: appID).outcome
    }

    func decide(appID: String, context: inout URLContext) -> MatchOutcome {
        guard let indices = detailsByApp[appID] else { return .noMatch }
        return decide(detailIndices: indices, context: &context)
    }

    private func decide(detailIndices: [Int], context: inout URLContext) -> MatchOutcome {
        for index in detailIndices {
            if let outcome = details[index].decide(context: &context) { return outcome }
        }
        return .noMatch
    }
}

/// One compiled detail.
final class CompiledDetail: Sendable {
    enum Body: Sendable {
        case components([CompiledComponent], PathPrefilter?)
        case paths([CompiledLegacyPath])
        case nothing
    }

    let index: Int
    let body: Body

    init(index: Int, detail: AppLinksDetail, applinksDefaults: ComponentDefaults?, variables: [String: [String]], budget: CompiledPattern.Budget) {
        self.index = index
        if let components = detail.components {
            let compiled = components.enumerated().map { position, rule in
                CompiledComponent(
                    index: position, written: rule,
                    resolved: rule.resolved(detailDefaults: detail.defaults, applinksDefaults: applinksDefaults),
                    variables: variables, budget: budget
                )
            }
            body = .components(compiled, compiled.count >= PathPrefilter.threshold ? PathPrefilter(compiled) : nil)
        } else if let paths = detail.paths {
            body = .paths(paths.enumerated().map { CompiledLegacyPath(index: $0, source: $1, variables: variables, budget: budget) })
        } else {
            body = .nothing
        }
    }

    /// The decision of this detail, or `nil` when none of its rules matched.
    func decide(context: inout URLContext) -> MatchOutcome? {
        switch body {
        case .nothing:
            return nil
        case .paths(let paths):
            for path in paths where context.matchesPath(path.pattern, percentEncoded: true) {
                return MatchOutcome(
                    decision: path.isExclusion ? .exclude : .match, detail: index,
                    rule: .legacyPath(path.index), ruleText: path.source
                )
            }
            return nil
        case .components(let components, let prefilter):
            if let prefilter {
                return prefilter.withCandidates(context: &context) { candidates, context -> MatchOutcome? in
                    for word in 0..<candidates.count {
                        var bits = candidates[word]
                        while bits != 0 {
                            let position = word << 6 | bits.trailingZeroBitCount
                            bits &= bits &- 1
                            let component = components[position]
                            if component.matches(context: &context) { return outcome(component) }
                        }
                    }
                    return nil
                }
            }
            for component in components where component.matches(context: &context) {
                return outcome(component)
            }
            return nil
        }
    }

    private func outcome(_ component: CompiledComponent) -> MatchOutcome {
        MatchOutcome(
            decision: component.exclude ? .exclude : .match, detail: index,
            rule: .component(component.index), ruleText: component.ruleText
        )
    }
}

/// One compiled legacy `paths` entry: a path pattern of the same engine as a component's
/// (case-sensitive), with the file's substitution variables as every pattern has them (built-in
/// ones were expanded and the file's own never matched).
final class CompiledLegacyPath: Sendable {
    let index: Int
    let source: String
    let isExclusion: Bool
    let pattern: CompiledPattern

    init(index: Int, source: String, variables: [String: [String]], budget: CompiledPattern.Budget) {
        self.index = index
        self.source = source
        isExclusion = source.hasPrefix("NOT ")
        pattern = CompiledPattern(isExclusion ? String(source.dropFirst(4)) : source, role: .path, caseSensitive: true, variables: variables, budget: budget)
    }
}

/// One compiled `components` entry.
final class CompiledComponent: Sendable {
    enum Query: Sendable {
        case any
        case whole(CompiledPattern)
        case items([(name: [UInt8], pattern: CompiledPattern)])
    }

    let index: Int
    /// The component with the keys it inherits from `defaults` filled in.
    let rule: ComponentRule
    /// The keys it inherits, in ``ComponentKey`` order.
    let inherited: [InheritedKey]
    let caseSensitive: Bool
    let percentEncoded: Bool
    let exclude: Bool
    let path: CompiledPattern?
    let query: Query
    let fragment: CompiledPattern?
    /// The component as written (without inherited keys).
    let ruleText: String

    init(index: Int, written: ComponentRule, resolved: ResolvedComponent, variables: [String: [String]], budget: CompiledPattern.Budget) {
        let rule = resolved.rule
        let caseSensitive = resolved.caseSensitive
        self.index = index
        self.rule = rule
        self.inherited = resolved.inherited
        self.caseSensitive = caseSensitive
        self.percentEncoded = resolved.percentEncoded
        exclude = resolved.isExclusion
        path = rule.path.map { CompiledPattern($0, role: .path, caseSensitive: caseSensitive, variables: variables, budget: budget) }
        fragment = rule.fragment.map { CompiledPattern($0, role: .plain, caseSensitive: caseSensitive, variables: variables, budget: budget) }
        switch rule.query {
        case nil, .ignored?:
            query = .any
        case .string(let pattern)?:
            query = .whole(CompiledPattern(pattern, role: .plain, caseSensitive: caseSensitive, variables: variables, budget: budget))
        case .items(let items)?:
            query = .items(items.map { item in
                (
                    name: Array((caseSensitive ? item.name : UTF8Text.caseFolded(item.name)).utf8),
                    pattern: CompiledPattern(item.pattern, role: .plain, caseSensitive: caseSensitive, variables: variables, budget: budget)
                )
            })
        }
        ruleText = RuleText.render(written)
    }

    /// The level a pattern key came from, or `nil` when the component sets it.
    func inheritedLevel(_ key: ComponentKey) -> DefaultsLevel? {
        inherited.first { $0.key == key }?.level
    }

    /// Whether every specified part matches.
    @inline(__always)
    func matches(context: inout URLContext) -> Bool {
        if let fragment, !context.matches(fragment, part: .fragment, percentEncoded: percentEncoded) { return false }
        if let path, !context.matchesPath(path, percentEncoded: percentEncoded) { return false }
        switch query {
        case .any:
            return true
        case .whole(let pattern):
            return context.matches(pattern, part: .query, percentEncoded: percentEncoded)
        case .items(let items):
            for item in items where !context.queryItemMatches(name: item.name, pattern: item.pattern, percentEncoded: percentEncoded) {
                return false
            }
            return true
        }
    }
}

/// Renders a component as compact JSON-like text for reports.
enum RuleText {
    static func render(_ rule: ComponentRule) -> String {
        var fields: [String] = []
        if let path = rule.path { fields.append("\"/\":\(quoted(path))") }
        if let query = rule.query { fields.append("\"?\":\(self.query(query))") }
        if let fragment = rule.fragment { fields.append("\"#\":\(quoted(fragment))") }
        if let exclude = rule.exclude { fields.append("\"exclude\":\(exclude)") }
        if let value = rule.options.caseSensitive { fields.append("\"caseSensitive\":\(value)") }
        if let value = rule.options.percentEncoded { fields.append("\"percentEncoded\":\(value)") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func quoted(_ string: String) -> String {
        Canonical.quote(string)
    }

    /// A `?` value as JSON-like text, items in file order.
    static func query(_ query: QueryPattern) -> String {
        switch query {
        case .string(let string): quoted(string)
        case .items(let items): "{" + items.map { "\(quoted($0.name)):\(quoted($0.pattern))" }.joined(separator: ",") + "}"
        case .ignored: "{…ignored…}"
        }
    }
}
