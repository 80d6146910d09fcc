/// A level of the `defaults` hierarchy a component key can come from.
public enum DefaultsLevel: String, Codable, Sendable, Hashable, CaseIterable {
    /// The `defaults` of the component's detail (app level).
    case detail
    /// `applinks.defaults` (domain level).
    case applinks

    /// `the detail's defaults` or `applinks.defaults`, for messages.
    public var displayName: String {
        switch self {
        case .detail: "the detail's defaults"
        case .applinks: "applinks.defaults"
        }
    }
}

/// A key a component can set and `defaults` can supply.
public enum ComponentKey: String, Codable, Sendable, Hashable, CaseIterable {
    /// `/`, the path pattern.
    case path = "/"
    /// `?`, the query pattern (a string or a dictionary).
    case query = "?"
    /// `#`, the fragment pattern.
    case fragment = "#"
    /// `exclude`.
    case exclude
    /// `caseSensitive`.
    case caseSensitive
    /// `percentEncoded`.
    case percentEncoded
}

/// A key a component leaves out and takes from `defaults`.
public struct InheritedKey: Codable, Sendable, Hashable {
    /// The key (`/`, `?`, `#`, `exclude`, `caseSensitive`, `percentEncoded`).
    public var key: ComponentKey
    /// Where it comes from: the detail's `defaults` or `applinks.defaults`.
    public var level: DefaultsLevel
    /// The value as compact JSON text (`"/shop/*"`, `{"ref":"???"}`, `true`).
    public var value: String

    /// Creates an inherited key.
    public init(key: ComponentKey, level: DefaultsLevel, value: String) {
        self.key = key
        self.level = level
        self.value = value
    }

    /// `"/":"/shop/*" from the detail's defaults`.
    public var summary: String {
        "\"\(key.rawValue)\":\(value) from \(level.displayName)"
    }
}

/// A component with the keys it leaves out filled in from `defaults`.
public struct ResolvedComponent: Sendable, Hashable {
    /// The component as the matcher reads it: its own keys, then those of the detail's
    /// `defaults`, then those of `applinks.defaults`; a key no level sets stays absent
    /// (`exclude` then means `false`, `caseSensitive` and `percentEncoded` `true`).
    public var rule: ComponentRule
    /// The keys taken from `defaults`, in ``ComponentKey`` order.
    public var inherited: [InheritedKey]

    /// Whether a match blocks the link.
    public var isExclusion: Bool { rule.exclude ?? false }
    /// The effective `caseSensitive`.
    public var caseSensitive: Bool { rule.options.caseSensitive ?? true }
    /// The effective `percentEncoded`.
    public var percentEncoded: Bool { rule.options.percentEncoded ?? true }
}

extension ComponentRule {
    /// This component with every key it leaves out taken from `detailDefaults`, else from
    /// `applinksDefaults` (Apple's `applinks.Defaults`: any component key; the more specific
    /// level wins). A key the component sets always wins; keys that are not component keys
    /// never reach the model, so they are ignored at every level.
    public func resolved(detailDefaults: ComponentDefaults?, applinksDefaults: ComponentDefaults?) -> ResolvedComponent {
        var rule = self
        var inherited: [InheritedKey] = []
        func pick<Value>(_ own: Value?, _ get: (ComponentDefaults) -> Value?, _ key: ComponentKey, _ text: (Value) -> String) -> Value? {
            if let own { return own }
            if let detail = detailDefaults, let value = get(detail) {
                inherited.append(InheritedKey(key: key, level: .detail, value: text(value)))
                return value
            }
            if let domain = applinksDefaults, let value = get(domain) {
                inherited.append(InheritedKey(key: key, level: .applinks, value: text(value)))
                return value
            }
            return nil
        }
        rule.path = pick(path, \.path, .path, RuleText.quoted)
        rule.query = pick(query, \.query, .query, RuleText.query)
        rule.fragment = pick(fragment, \.fragment, .fragment, RuleText.quoted)
        rule.exclude = pick(exclude, \.exclude, .exclude) { "\($0)" }
        rule.options.caseSensitive = pick(options.caseSensitive, \.caseSensitive, .caseSensitive) { "\($0)" }
        rule.options.percentEncoded = pick(options.percentEncoded, \.percentEncoded, .percentEncoded) { "\($0)" }
        return ResolvedComponent(rule: rule, inherited: inherited)
    }
}

extension AppLinks {
    /// The components of a detail as the matcher reads them (``ComponentRule/resolved(detailDefaults:applinksDefaults:)``);
    /// empty for a detail without `components` (legacy `paths` take no defaults).
    public func resolvedComponents(of detail: AppLinksDetail) -> [ResolvedComponent] {
        (detail.components ?? []).map { $0.resolved(detailDefaults: detail.defaults, applinksDefaults: defaults) }
    }
}
