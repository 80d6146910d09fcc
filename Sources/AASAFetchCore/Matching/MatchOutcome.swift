/// The answer for one URL and one app.
public enum MatchDecision: String, Codable, Sendable, Hashable, CaseIterable {
    /// A rule matched: the link opens the app.
    case match
    /// An `exclude` rule (or a legacy `NOT ` path) matched first: the link stays in the browser.
    case exclude
    /// No rule decided.
    case noMatch = "no_match"
}

/// The rule that decided, inside a detail.
public enum DecidingRule: Sendable, Hashable {
    /// An entry of the detail's `components`, by index.
    case component(Int)
    /// An entry of the detail's legacy `paths`, by index.
    case legacyPath(Int)

    /// The index inside `components` or `paths`.
    public var index: Int {
        switch self {
        case .component(let index), .legacyPath(let index): index
        }
    }

    /// `"component"` or `"path"`.
    public var kind: String {
        switch self {
        case .component: "component"
        case .legacyPath: "path"
        }
    }
}

/// The decision of one association file for one URL and one app, with the rule that decided.
public struct MatchOutcome: Sendable, Hashable {
    /// The decision.
    public var decision: MatchDecision
    /// The index in `applinks.details` of the detail that decided; `nil` for ``MatchDecision/noMatch``.
    public var detail: Int?
    /// The rule that decided; `nil` for ``MatchDecision/noMatch``.
    public var rule: DecidingRule?
    /// The deciding rule as JSON-like text (`{"/":"/buy/*"}`, or the legacy path string).
    public var ruleText: String?

    /// Creates an outcome.
    public init(decision: MatchDecision, detail: Int? = nil, rule: DecidingRule? = nil, ruleText: String? = nil) {
        self.decision = decision
        self.detail = detail
        self.rule = rule
        self.ruleText = ruleText
    }

    /// No rule decided.
    public static let noMatch = MatchOutcome(decision: .noMatch)
}

/// One line of the matching line protocol: `{"id":0,"decision":"match"}`.
public struct MatchLineResponse: Codable, Sendable, Hashable {
    /// The request's `id`, echoed.
    public var id: Int
    /// The decision.
    public var decision: MatchDecision

    /// Creates a response line.
    public init(id: Int, decision: MatchDecision) {
        self.id = id
        self.decision = decision
    }
}
