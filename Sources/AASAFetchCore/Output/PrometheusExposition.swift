import Foundation

/// Prometheus's text exposition format (version 0.0.4), the format node_exporter's textfile
/// collector reads: for each metric family a `# HELP` line, a `# TYPE` line and its samples
/// together, `name{label="value",…} value` one per line, every line ending in a line feed.
///
/// Escaping, exactly as the format defines it: in label values a backslash, a double quote and a
/// line feed become `\\`, `\"` and `\n`; in help text a backslash and a line feed become `\\` and
/// `\n`. Values are written as integers when they are whole, else in Swift's shortest round-trip
/// form (`0.25`, `1e-05`), and `NaN`, `+Inf`, `-Inf`.
public struct PrometheusExposition: Sendable {
    /// The kinds of metric family this writer emits.
    public enum FamilyType: String, Sendable {
        /// A value that goes up and down (and every value of a snapshot).
        case gauge
        /// A value that only goes up.
        case counter
    }

    /// The text written so far.
    public private(set) var text = ""

    /// Creates an empty exposition.
    public init() {}

    /// Starts a metric family: its `# HELP` and `# TYPE` lines. Its samples must follow.
    public mutating func family(_ name: String, type: FamilyType, help: String) {
        precondition(Self.isValidName(name), "invalid metric name \(name)")
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(type.rawValue)\n"
    }

    /// Writes one sample of the current family.
    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        sample(name, labels: labels.map { (key: $0.key, value: $0.value) }, value)
    }

    /// Writes one sample of the current family, without labels.
    public mutating func sample(_ name: String, _ value: Double) {
        sample(name, labels: [], value)
    }

    /// Writes one sample of the current family, labels in the order given.
    public mutating func sample(_ name: String, labels: [(key: String, value: String)], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (index, label) in labels.enumerated() {
                precondition(Self.isValidLabelName(label.key), "invalid label name \(label.key)")
                if index > 0 { text += "," }
                text += "\(label.key)=\"\(Self.escapeLabelValue(label.value))\""
            }
            text += "}"
        }
        text += " \(Self.format(value))\n"
    }

    /// A label value escaped: `\` → `\\`, `"` → `\"`, line feed → `\n`.
    public static func escapeLabelValue(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// Help text escaped: `\` → `\\`, line feed → `\n`.
    public static func escapeHelp(_ help: String) -> String {
        help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// A sample value as the format writes it.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return String(value)
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_" || first == ":" else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" || $0 == ":" }
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`.
    public static func isValidLabelName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_" else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
