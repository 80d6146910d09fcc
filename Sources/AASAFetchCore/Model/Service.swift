/// An associated-domains service: the part before the colon of an entitlement entry and a
/// top-level key of the association file.
public enum Service: Sendable, Hashable, Codable, CustomStringConvertible, Comparable {
    /// Universal links.
    case applinks
    /// Shared web credentials, Password AutoFill and passkeys.
    case webcredentials
    /// Handoff from a web browser to the app.
    case activitycontinuation
    /// App Clip invocation.
    case appclips
    /// Extensible and platform single sign-on.
    case authsrv
    /// A service name Apple does not document; kept so that nothing is silently dropped.
    case unknown(String)

    /// The services Apple documents, in the order they are listed in output.
    public static let known: [Service] = [.applinks, .webcredentials, .activitycontinuation, .appclips, .authsrv]

    /// Creates a service from its name; an undocumented name becomes ``unknown(_:)``.
    public init(name: String) {
        switch name {
        case "applinks": self = .applinks
        case "webcredentials": self = .webcredentials
        case "activitycontinuation": self = .activitycontinuation
        case "appclips": self = .appclips
        case "authsrv": self = .authsrv
        default: self = .unknown(name)
        }
    }

    /// The name as written in entitlements and association files.
    public var name: String {
        switch self {
        case .applinks: "applinks"
        case .webcredentials: "webcredentials"
        case .activitycontinuation: "activitycontinuation"
        case .appclips: "appclips"
        case .authsrv: "authsrv"
        case .unknown(let name): name
        }
    }

    /// Whether Apple documents this service.
    public var isKnown: Bool {
        if case .unknown = self { return false }
        return true
    }

    public var description: String { name }

    public init(from decoder: any Decoder) throws {
        self.init(name: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }

    public static func < (lhs: Service, rhs: Service) -> Bool {
        func rank(_ s: Service) -> Int { known.firstIndex(of: s) ?? known.count }
        return (rank(lhs), lhs.name) < (rank(rhs), rhs.name)
    }
}
