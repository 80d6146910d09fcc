/// How serious a finding is.
///
/// `error` findings make a domain fail to associate (or a file fail to lint); `warning` findings
/// leave the answer intact but point at something a device may treat differently; `info` is a note.
public enum Severity: String, Sendable, Codable, Hashable, Comparable, CaseIterable {
    case info
    case warning
    case error

    private var rank: Int {
        switch self {
        case .info: 0
        case .warning: 1
        case .error: 2
        }
    }

    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
}

/// One problem or note about an input, with a stable machine-readable code.
///
/// Codes are kebab-case strings that never change meaning between releases (new codes may be
/// added, none renamed). The message is for people and may change.
public struct Finding: Sendable, Codable, Hashable {
    /// The stable code, e.g. `entitlement-port` or `http-redirect`.
    public var code: String
    /// How serious the finding is.
    public var severity: Severity
    /// One line for people.
    public var message: String
    /// Where in the input the finding points: a JSON pointer (`/applinks/details/0`), a
    /// `line:column` position, or an entitlement entry; `nil` when it concerns the whole input.
    public var location: String?
    /// The 1-based line in an association file the finding points at (a syntax error's position,
    /// or where the value a JSON pointer names starts); `nil` when it points at no place in a file.
    public var line: Int?
    /// The 1-based column (in Unicode scalars) that goes with ``line``.
    public var column: Int?
    /// What to change, when there is a clear fix.
    public var fix: String?

    /// Creates a finding.
    public init(code: String, severity: Severity, message: String, location: String? = nil,
                line: Int? = nil, column: Int? = nil, fix: String? = nil) {
        self.code = code
        self.severity = severity
        self.message = message
        self.location = location
        self.line = line
        self.column = column
        self.fix = fix
    }

    /// Creates an error finding.
    public static func error(_ code: String, _ message: String, location: String? = nil, fix: String? = nil) -> Finding {
        Finding(code: code, severity: .error, message: message, location: location, fix: fix)
    }

    /// Creates a warning finding.
    public static func warning(_ code: String, _ message: String, location: String? = nil, fix: String? = nil) -> Finding {
        Finding(code: code, severity: .warning, message: message, location: location, fix: fix)
    }

    /// Creates an informational finding.
    public static func info(_ code: String, _ message: String, location: String? = nil, fix: String? = nil) -> Finding {
        Finding(code: code, severity: .info, message: message, location: location, fix: fix)
    }
}

extension Sequence where Element == Finding {
    /// Whether any finding is an error.
    public var containsError: Bool { contains { $0.severity == .error } }
}
