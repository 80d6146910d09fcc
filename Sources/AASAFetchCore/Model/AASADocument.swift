/// A decoded apple-app-site-association file: the typed model every other part reads.
///
/// The decoder (``AASADecoder``) fills it from JSON bytes; the matcher, linter and diff read it.
/// Locations are JSON pointers into the original file (`/applinks/details/0/components/2`).
public struct AASADocument: Sendable, Hashable {
    /// The `applinks` service, when present and an object.
    public var applinks: AppLinks?
    /// The `apps` arrays of the other services (`webcredentials`, `activitycontinuation`,
    /// `appclips`, `authsrv`, and undocumented ones), keyed by service.
    public var serviceApps: [Service: [String]]
    /// The services named at the top level, in file order (documented and undocumented).
    public var services: [Service]

    /// Creates a document.
    public init(applinks: AppLinks? = nil, serviceApps: [Service: [String]] = [:], services: [Service] = []) {
        self.applinks = applinks
        self.serviceApps = serviceApps
        self.services = services
    }

    /// The app IDs the file names for a service, in file order without duplicates.
    ///
    /// For `applinks` these are the effective app IDs of every detail (`appIDs` wins over `appID`,
    /// and the keys of the legacy dictionary form); for the other services the `apps` array.
    public func appIDs(for service: Service) -> [String] {
        var seen = Set<String>()
        let all: [String]
        if service == .applinks {
            all = applinks?.details.flatMap(\.appIDs) ?? []
        } else {
            all = serviceApps[service] ?? []
        }
        return all.filter { seen.insert($0).inserted }
    }
}

/// The `applinks` object.
public struct AppLinks: Sendable, Hashable {
    /// The details, in file order (the legacy dictionary form is converted, in key order).
    public var details: [AppLinksDetail]
    /// Domain-level `defaults`.
    public var defaults: ComponentDefaults?
    /// `substitutionVariables`: custom variable name → values (values may hold `*` and `?`).
    public var substitutionVariables: [String: [String]]
    /// The legacy `apps` array when present (it must be empty).
    public var legacyApps: [String]?
    /// Whether `details` was written in the obsolete dictionary form keyed by app ID.
    public var detailsIsDictionary: Bool

    /// Creates an `applinks` object.
    public init(
        details: [AppLinksDetail] = [],
        defaults: ComponentDefaults? = nil,
        substitutionVariables: [String: [String]] = [:],
        legacyApps: [String]? = nil,
        detailsIsDictionary: Bool = false
    ) {
        self.details = details
        self.defaults = defaults
        self.substitutionVariables = substitutionVariables
        self.legacyApps = legacyApps
        self.detailsIsDictionary = detailsIsDictionary
    }
}

/// One entry of `applinks.details`.
public struct AppLinksDetail: Sendable, Hashable {
    /// The app IDs this detail applies to: `appIDs` when that key is present (even empty),
    /// else `[appID]` when present, else none.
    public var appIDs: [String]
    /// `components`, when present (then `paths` is ignored). An empty array is kept as empty.
    public var components: [ComponentRule]?
    /// Legacy `paths`, when present.
    public var paths: [String]?
    /// App-level `defaults`.
    public var defaults: ComponentDefaults?
    /// JSON pointer of this detail.
    public var location: String

    /// Creates a detail.
    public init(
        appIDs: [String],
        components: [ComponentRule]? = nil,
        paths: [String]? = nil,
        defaults: ComponentDefaults? = nil,
        location: String = ""
    ) {
        self.appIDs = appIDs
        self.components = components
        self.paths = paths
        self.defaults = defaults
        self.location = location
    }
}

/// The component keys one level of `defaults` sets (`applinks.defaults` or a detail's
/// `defaults`); `nil` means the level leaves the key out, so it is inherited from the next level
/// (component > detail `defaults` > `applinks.defaults`; see
/// ``ComponentRule/resolved(detailDefaults:applinksDefaults:)``).
///
/// ``ComponentRule/options`` uses the same type for the component's own `caseSensitive` and
/// `percentEncoded`; there the pattern keys and `exclude` are never set (they are the rule's own
/// fields).
public struct ComponentDefaults: Sendable, Hashable {
    /// The `/` path pattern every component without its own inherits.
    public var path: String?
    /// The `?` query pattern every component without its own inherits (as a whole).
    public var query: QueryPattern?
    /// The `#` fragment pattern every component without its own inherits.
    public var fragment: String?
    /// `exclude`, for every component without its own.
    public var exclude: Bool?
    /// Whether matching is case-sensitive; `nil` inherits.
    public var caseSensitive: Bool?
    /// Whether patterns are written percent-encoded; `nil` inherits.
    public var percentEncoded: Bool?

    /// Creates defaults.
    public init(
        path: String? = nil, query: QueryPattern? = nil, fragment: String? = nil, exclude: Bool? = nil,
        caseSensitive: Bool? = nil, percentEncoded: Bool? = nil
    ) {
        self.path = path
        self.query = query
        self.fragment = fragment
        self.exclude = exclude
        self.caseSensitive = caseSensitive
        self.percentEncoded = percentEncoded
    }
}

/// One object of a detail's `components` array.
public struct ComponentRule: Sendable, Hashable {
    /// The `/` path pattern; `nil` when absent (inherited from `defaults`, else matches any path).
    public var path: String?
    /// The `?` query pattern; `nil` when absent (inherited from `defaults`, else matches any query).
    public var query: QueryPattern?
    /// The `#` fragment pattern; `nil` when absent (inherited from `defaults`, else matches any fragment).
    public var fragment: String?
    /// Whether a match blocks the link instead of opening the app; `nil` when absent (inherited
    /// from `defaults`, else `false`).
    public var exclude: Bool?
    /// The `comment`, ignored by the system.
    public var comment: String?
    /// Component-level `caseSensitive` and `percentEncoded` (only these two are read here).
    public var options: ComponentDefaults
    /// JSON pointer of this component.
    public var location: String

    /// Creates a component rule.
    public init(
        path: String? = nil,
        query: QueryPattern? = nil,
        fragment: String? = nil,
        exclude: Bool? = nil,
        comment: String? = nil,
        options: ComponentDefaults = ComponentDefaults(),
        location: String = ""
    ) {
        self.path = path
        self.query = query
        self.fragment = fragment
        self.exclude = exclude
        self.comment = comment
        self.options = options
        self.location = location
    }
}

/// The `?` key of a component.
public enum QueryPattern: Sendable, Hashable {
    /// A string pattern compared with the whole query.
    case string(String)
    /// A dictionary of query item name → value pattern, in file order.
    case items([QueryItemPattern])
    /// A dictionary with a non-string value: Apple ignores the whole dictionary, so it matches any query.
    case ignored
}

/// One `name: pattern` pair of a query dictionary.
public struct QueryItemPattern: Sendable, Hashable {
    /// The query item name.
    public var name: String
    /// The value pattern.
    public var pattern: String

    /// Creates a pair.
    public init(name: String, pattern: String) {
        self.name = name
        self.pattern = pattern
    }
}
