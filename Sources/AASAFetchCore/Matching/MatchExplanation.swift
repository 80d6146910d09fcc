/// Why a URL got its decision, for `match --json` (one object a line, every key present) and
/// human output.
public struct MatchExplanation: Codable, Sendable, Hashable {
    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// The URL as given.
    public var url: String
    /// The app ID.
    public var appID: String
    /// The decision.
    public var decision: MatchDecision
    /// The host whose file decided (for ``MatchDecision/noMatch``: `nil`).
    public var host: String?
    /// The index of the deciding detail in `applinks.details`.
    public var detail: Int?
    /// The deciding rule.
    public var component: RuleReport?
    /// One sentence saying why.
    public var reason: String
    /// For ``MatchDecision/noMatch``: the rule that came nearest to matching and what failed.
    public var nearest: NearMiss?

    /// Creates an explanation.
    public init(
        url: String, appID: String, decision: MatchDecision, host: String? = nil, detail: Int? = nil,
        component: RuleReport? = nil, reason: String, nearest: NearMiss? = nil
    ) {
        self.url = url
        self.appID = appID
        self.decision = decision
        self.host = host
        self.detail = detail
        self.component = component
        self.reason = reason
        self.nearest = nearest
    }
}

/// A rule inside a detail.
public struct RuleReport: Codable, Sendable, Hashable {
    /// `"component"` (an entry of `components`) or `"path"` (an entry of legacy `paths`).
    public var kind: String
    /// Its index.
    public var index: Int
    /// The rule as JSON-like text, as written in the file.
    public var rule: String
    /// The keys the component leaves out and takes from `defaults` (which key, which level,
    /// which value); empty when it inherits none (and for legacy paths).
    public var inherited: [InheritedKey]

    /// Creates a report.
    public init(kind: String, index: Int, rule: String, inherited: [InheritedKey] = []) {
        self.kind = kind
        self.index = index
        self.rule = rule
        self.inherited = inherited
    }

    /// `; from defaults: "/":"/shop/*" from the detail's defaults, …`, or empty.
    var inheritedSuffix: String {
        guard !inherited.isEmpty else { return "" }
        return "; from defaults: " + inherited.map(\.summary).joined(separator: ", ")
    }
}

/// The rule nearest to matching a URL that no rule matched, and the parts that failed.
public struct NearMiss: Codable, Sendable, Hashable {
    /// The host of the file holding the rule.
    public var host: String?
    /// The detail index.
    public var detail: Int
    /// The rule.
    public var component: RuleReport
    /// The parts that did not match (at least one).
    public var failures: [PartFailure]
    /// How many of the rule's specified parts matched (nearer rules have more).
    public var matchedParts: Int
    /// Parts that did not match beyond those listed in ``failures``, which lists at most
    /// ``listedFailures`` (a rule of 13,000 query items made a 600 KB answer).
    public var unlistedFailures: Int

    /// The most failures a near miss lists.
    public static let listedFailures = 20

    /// Creates a near miss.
    public init(host: String?, detail: Int, component: RuleReport, failures: [PartFailure], matchedParts: Int = 0, unlistedFailures: Int = 0) {
        self.host = host
        self.detail = detail
        self.component = component
        self.failures = failures
        self.matchedParts = matchedParts
        self.unlistedFailures = unlistedFailures
    }

    /// Whether this miss is nearer than `other`: more matched parts, then fewer failures
    /// (ties keep the earlier rule).
    func isNearer(than other: NearMiss?) -> Bool {
        guard let other else { return true }
        if matchedParts != other.matchedParts { return matchedParts > other.matchedParts }
        return failures.count + unlistedFailures < other.failures.count + other.unlistedFailures
    }
}

/// One part of a rule that did not match the URL.
public struct PartFailure: Codable, Sendable, Hashable {
    /// Which part of the URL.
    public enum Part: String, Codable, Sendable, Hashable {
        /// The `/` pattern against the path.
        case path
        /// The `?` string pattern against the whole query.
        case query
        /// One `?` dictionary entry against the items of that name.
        case queryItem
        /// The `#` pattern against the fragment.
        case fragment
    }

    /// The part.
    public var part: Part
    /// The query item name, for ``Part/queryItem``.
    public var name: String?
    /// The pattern.
    public var pattern: String
    /// The URL text the pattern was compared with (decoded when `percentEncoded` is false;
    /// for an absent item, query or fragment the empty string).
    public var text: String
    /// Whether the pattern would match if compared case-insensitively.
    public var caseOnly: Bool
    /// Substitution variables with no fitting value: replacing them with `*` would match (an
    /// undefined variable is always listed).
    public var variablesWithoutValue: [String]
    /// The `defaults` level the pattern comes from, when the component does not set it itself.
    public var inheritedFrom: DefaultsLevel?
    /// Whether the pattern needs more automaton states than allowed
    /// (``CompiledPattern/isTooComplex``), so it is never matched.
    public var tooComplex: Bool

    /// Creates a failure.
    public init(
        part: Part, name: String? = nil, pattern: String, text: String, caseOnly: Bool = false, variablesWithoutValue: [String] = [],
        inheritedFrom: DefaultsLevel? = nil, tooComplex: Bool = false
    ) {
        self.tooComplex = tooComplex
        self.part = part
        self.name = name
        self.pattern = pattern
        self.text = text
        self.caseOnly = caseOnly
        self.variablesWithoutValue = variablesWithoutValue
        self.inheritedFrom = inheritedFrom
    }

    /// A short human description (`path "/Help/1" does not match "/help/*" (case only)`).
    public var summary: String {
        var text = switch part {
        case .path: "path \(RuleText.quoted(self.text)) does not match \(RuleText.quoted(pattern))"
        case .query: "query \(RuleText.quoted(self.text)) does not match \(RuleText.quoted(pattern))"
        case .queryItem: "query item \(RuleText.quoted(name ?? "")) value \(RuleText.quoted(self.text)) does not match \(RuleText.quoted(pattern))"
        case .fragment: "fragment \(RuleText.quoted(self.text)) does not match \(RuleText.quoted(pattern))"
        }
        if caseOnly { text += " (case only)" }
        if !variablesWithoutValue.isEmpty {
            text += " (no fitting value for " + variablesWithoutValue.map { "$(\($0))" }.joined(separator: ", ") + ")"
        }
        if let inheritedFrom { text += " (pattern from \(inheritedFrom.displayName))" }
        if tooComplex {
            text += " (the pattern is too complex to match: over \(CompiledPattern.maxStates) states, over \(CompiledPattern.maxStatesPerFile) for the whole file, or over \(CompiledPattern.maxSteps) steps against this text)"
        }
        return text
    }
}

extension CompiledAssociation {
    /// Explains the decision of this file alone (no host check).
    public func explain(url: String, appID: String) -> MatchExplanation {
        URLInput.with(url) { input -> MatchExplanation in
            guard let input else {
                return MatchExplanation(url: url, appID: appID, decision: .noMatch, reason: "the URL cannot be split into scheme, host and path")
            }
            guard input.isHTTP else {
                return MatchExplanation(url: url, appID: appID, decision: .noMatch, reason: "universal links are http or https URLs only")
            }
            var context = URLContext(input: input)
            return Explainer(url: url, appID: appID).explain(files: [(nil, self)], context: &context)
        }
    }

    /// The nearest rule of the details listing the app, or `nil` when none has a rule.
    func nearestMiss(appID: String, host: String?, context: inout URLContext) -> NearMiss? {
        var best: NearMiss?
        for index in detailsByApp[appID] ?? [] {
            switch details[index].body {
            case .nothing:
                continue
            case .paths(let paths):
                for path in paths {
                    let failure = failureIfAny(path.pattern, part: .path, name: nil, percentEncoded: true, context: &context)
                    guard let failure else { continue }
                    let miss = NearMiss(
                        host: host, detail: index,
                        component: RuleReport(kind: "path", index: path.index, rule: path.source), failures: [failure]
                    )
                    if miss.isNearer(than: best) { best = miss }
                }
            case .components(let components, _):
                for component in components {
                    let (failures, total) = partFailures(component, context: &context)
                    guard total > 0 else { continue }
                    var specified = (component.path == nil ? 0 : 1) + (component.fragment == nil ? 0 : 1)
                    switch component.query {
                    case .any: break
                    case .whole: specified += 1
                    case .items(let items): specified += items.count
                    }
                    let miss = NearMiss(
                        host: host, detail: index,
                        component: RuleReport(kind: "component", index: component.index, rule: component.ruleText, inherited: component.inherited),
                        failures: failures, matchedParts: specified - total, unlistedFailures: total - failures.count
                    )
                    if miss.isNearer(than: best) { best = miss }
                }
            }
        }
        return best
    }

    /// The parts of `component` that fail the URL, at most ``NearMiss/listedFailures`` of them,
    /// and how many fail in all.
    private func partFailures(_ component: CompiledComponent, context: inout URLContext) -> (listed: [PartFailure], total: Int) {
        var failures: [PartFailure] = []
        var total = 0
        let encoded = component.percentEncoded
        if let path = component.path, var failure = failureIfAny(path, part: .path, name: nil, percentEncoded: encoded, context: &context) {
            failure.inheritedFrom = component.inheritedLevel(.path)
            failures.append(failure)
            total += 1
        }
        switch component.query {
        case .any:
            break
        case .whole(let pattern):
            if var failure = failureIfAny(pattern, part: .query, name: nil, percentEncoded: encoded, context: &context) {
                failure.inheritedFrom = component.inheritedLevel(.query)
                failures.append(failure)
                total += 1
            }
        case .items(let items):
            // The names as written, found by their compared bytes: built once, when an item fails
            // (looking each one up by a scan of the items was quadratic: 140 s for a 128 KiB file).
            var names: [[UInt8]: String]?
            for item in items where !context.queryItemMatches(name: item.name, pattern: item.pattern, percentEncoded: encoded) {
                total += 1
                guard failures.count < NearMiss.listedFailures else { continue }
                if names == nil { names = itemNames(component) }
                let values = context.items(percentEncoded: encoded, caseSensitive: item.pattern.caseSensitive)
                let name = names?[item.name] ?? String(decoding: item.name, as: UTF8.self)
                let texts = values.filter { $0.name == item.name }.map { String(decoding: $0.value, as: UTF8.self) }
                let failing = texts.first { !item.pattern.matches($0) } ?? texts.first ?? ""
                var itemFailure = failure(item.pattern, part: .queryItem, name: name, text: failing)
                itemFailure.inheritedFrom = component.inheritedLevel(.query)
                failures.append(itemFailure)
            }
        }
        if let fragment = component.fragment,
           var failure = failureIfAny(fragment, part: .fragment, name: nil, percentEncoded: encoded, context: &context) {
            failure.inheritedFrom = component.inheritedLevel(.fragment)
            total += 1
            if failures.count < NearMiss.listedFailures { failures.append(failure) }
        }
        return (failures, total)
    }

    /// The keys the deciding component took from `defaults` (none for legacy paths).
    func inheritedKeys(detail: Int, rule: DecidingRule) -> [InheritedKey] {
        guard case .component(let position) = rule, details.indices.contains(detail),
              case .components(let components, _) = details[detail].body, components.indices.contains(position)
        else { return [] }
        return components[position].inherited
    }

    private static func replacing(_ target: String, with replacement: String, in source: String) -> String {
        var result = ""
        var rest = Substring(source)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }

    /// The query item names of `component` as written, by the bytes they are compared as (the
    /// first of names that compare the same).
    private func itemNames(_ component: CompiledComponent) -> [[UInt8]: String] {
        var names: [[UInt8]: String] = [:]
        if case .items(let items)? = component.rule.query {
            for item in items {
                let key = Array((component.caseSensitive ? item.name : UTF8Text.caseFolded(item.name)).utf8)
                if names[key] == nil { names[key] = item.name }
            }
        }
        return names
    }

    private func failureIfAny(
        _ pattern: CompiledPattern, part: PartFailure.Part, name: String?, percentEncoded: Bool, context: inout URLContext
    ) -> PartFailure? {
        let urlPart: URLContext.Part = switch part {
        case .path: .path
        case .query, .queryItem: .query
        case .fragment: .fragment
        }
        let bytes = context.text(urlPart, percentEncoded: percentEncoded, caseSensitive: true)
        let text = String(decoding: bytes, as: UTF8.self)
        // The URL's budget spent (by the decision, or parts before this one): out of work.
        guard context.steps <= CompiledPattern.maxSteps else {
            return PartFailure(part: part, name: name, pattern: pattern.source, text: text, tooComplex: true)
        }
        let (matched, steps) = pattern.matchCost(text, startingAt: context.steps)
        context.steps = steps
        if matched { return nil }
        if steps > CompiledPattern.maxSteps {
            // Out of work, not a plain mismatch: explaining would cost as much again.
            return PartFailure(part: part, name: name, pattern: pattern.source, text: text, tooComplex: true)
        }
        return failure(pattern, part: part, name: name, text: text)
    }

    private func failure(_ pattern: CompiledPattern, part: PartFailure.Part, name: String?, text: String) -> PartFailure {
        let variables = document.applinks?.substitutionVariables ?? [:]
        if pattern.isTooComplex {
            // Compiling it again to explain would cost what the limit refused.
            return PartFailure(part: part, name: name, pattern: pattern.source, text: text, tooComplex: true)
        }
        var caseOnly = false
        if pattern.caseSensitive {
            caseOnly = CompiledPattern(pattern.source, role: pattern.role, caseSensitive: false, variables: variables).matches(text)
        }
        var culprits: [String] = []
        var seen = Set<String>()
        for variable in pattern.referencedVariables where seen.insert(variable).inserted {
            if pattern.undefinedVariables.contains(variable) {
                culprits.append(variable)
                continue
            }
            let loosened = Self.replacing("$(\(variable))", with: "*", in: pattern.source)
            if CompiledPattern(loosened, role: pattern.role, caseSensitive: pattern.caseSensitive, variables: variables).matches(text) {
                culprits.append(variable)
            }
        }
        return PartFailure(part: part, name: name, pattern: pattern.source, text: text, caseOnly: caseOnly, variablesWithoutValue: culprits)
    }
}

extension URLMatcher {
    /// Explains the decision for a URL: the deciding file, detail and rule, or for
    /// ``MatchDecision/noMatch`` why (host not covered, app not listed, nearest rule).
    public func explain(url: String, appID: String) -> MatchExplanation {
        URLInput.with(url) { input -> MatchExplanation in
            guard let input, let host = input.host else {
                return MatchExplanation(url: url, appID: appID, decision: .noMatch, reason: "the URL cannot be split into scheme, host and path")
            }
            guard !host.isEmpty else {
                return MatchExplanation(url: url, appID: appID, decision: .noMatch, reason: "the URL has no host, so it is no universal link")
            }
            guard input.isHTTP else {
                return MatchExplanation(url: url, appID: appID, decision: .noMatch, reason: "universal links are http or https URLs only")
            }
            let candidates = candidateHosts(normalisedHost: host)
            if candidates.isEmpty {
                return MatchExplanation(
                    url: url, appID: appID, decision: .noMatch,
                    reason: entitlementDomains.isEmpty
                        ? "host \(host) is not covered: no usable applinks entitlement entry"
                        : "host \(host) is not covered by the entitlement entries \(entitlementDomains.joined(separator: ", "))"
                )
            }
            let present = candidates.compactMap { candidate in files[candidate].map { (Optional(candidate), $0) } }
            if present.isEmpty {
                return MatchExplanation(
                    url: url, appID: appID, decision: .noMatch,
                    reason: "no association file for \(candidates.joined(separator: ", "))"
                )
            }
            var context = URLContext(input: input)
            return Explainer(url: url, appID: appID).explain(files: present, context: &context)
        }
    }
}

/// Shared explanation logic over candidate files in order.
struct Explainer {
    let url: String
    let appID: String

    func explain(files: [(host: String?, file: CompiledAssociation)], context: inout URLContext) -> MatchExplanation {
        for (host, file) in files {
            let outcome = file.decide(appID: appID, context: &context)
            guard outcome.decision != .noMatch, let detail = outcome.detail, let rule = outcome.rule else { continue }
            let report = RuleReport(
                kind: rule.kind, index: rule.index, rule: outcome.ruleText ?? "", inherited: file.inheritedKeys(detail: detail, rule: rule)
            )
            let verb = outcome.decision == .match ? "matched" : "matched an exclusion"
            let place = host.map { " of the file for \($0)" } ?? ""
            return MatchExplanation(
                url: url, appID: appID, decision: outcome.decision, host: host, detail: detail, component: report,
                reason: "\(rule.kind) \(rule.index) of detail \(detail)\(place) \(verb): \(report.rule)\(report.inheritedSuffix)"
            )
        }
        if !files.contains(where: { $0.file.listsApp(appID) }) {
            return MatchExplanation(url: url, appID: appID, decision: .noMatch, reason: "no applinks detail lists \(appID)")
        }
        var nearest: NearMiss?
        for (host, file) in files {
            if let miss = file.nearestMiss(appID: appID, host: host, context: &context), miss.isNearer(than: nearest) {
                nearest = miss
            }
        }
        guard let nearest else {
            return MatchExplanation(url: url, appID: appID, decision: .noMatch, reason: "the details listing \(appID) have no rules")
        }
        let summary = nearest.failures.map(\.summary).joined(separator: "; ")
            + (nearest.unlistedFailures > 0 ? "; and \(nearest.unlistedFailures) more parts of the rule fail" : "")
        return MatchExplanation(
            url: url, appID: appID, decision: .noMatch,
            reason: "no rule matched; nearest is \(nearest.component.kind) \(nearest.component.index) of detail \(nearest.detail): \(summary)",
            nearest: nearest
        )
    }
}
