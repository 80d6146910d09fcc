import Foundation

/// One sample read back from a Prometheus text file.
public struct PrometheusSample: Sendable, Hashable {
    /// The metric name.
    public var name: String
    /// The labels, unescaped.
    public var labels: [String: String]
    /// The value.
    public var value: Double
}

/// One metric family read back: its help (unescaped), type and samples in file order.
public struct PrometheusFamily: Sendable {
    /// The family name.
    public var name: String
    /// The `# HELP` text, unescaped.
    public var help: String
    /// The `# TYPE` word.
    public var type: String
    /// The samples.
    public var samples: [PrometheusSample]

    /// The value of the sample whose labels include `labels`, when exactly one does.
    public func value(_ labels: [String: String]) -> Double? {
        let matching = samples.filter { sample in labels.allSatisfy { sample.labels[$0.key] == $0.value } }
        return matching.count == 1 ? matching[0].value : nil
    }
}

/// A strict reader of Prometheus's text exposition format (0.0.4), written independently of the
/// tool's writer so that tests read the file the way a scraper would: every line ends in a line
/// feed; each family's `# HELP` and `# TYPE` come once, before its samples, which stay together;
/// label values use only the escapes `\\`, `\"` and `\n`; no label set repeats in a family.
public enum PrometheusTextParser {
    /// What is wrong with a file, and where.
    public struct ParseError: Error, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// Parses a whole file.
    public static func parse(_ text: String) throws -> [PrometheusFamily] {
        guard text.isEmpty || text.hasSuffix("\n") else { throw ParseError(line: 0, message: "the file does not end with a line feed") }
        var families: [PrometheusFamily] = []
        var seen = Set<String>()
        var labelSets = Set<String>()
        for (index, raw) in text.dropLast().split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = String(raw)
            func fail(_ message: String) -> ParseError { ParseError(line: number, message: message) }
            if line.hasPrefix("# HELP ") {
                let rest = line.dropFirst(7)
                guard let space = rest.firstIndex(of: " ") else { throw fail("HELP without text") }
                let name = String(rest[..<space])
                guard !seen.contains(name) else { throw fail("family \(name) appears twice") }
                seen.insert(name)
                families.append(PrometheusFamily(name: name, help: try unescapeHelp(String(rest[rest.index(after: space)...]), fail),
                                                 type: "", samples: []))
                labelSets = []
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                guard parts.count == 2, let last = families.last, last.name == parts[0], last.type.isEmpty, last.samples.isEmpty else {
                    throw fail("TYPE does not follow its HELP")
                }
                guard ["gauge", "counter", "untyped", "histogram", "summary"].contains(String(parts[1])) else { throw fail("unknown type") }
                families[families.count - 1].type = String(parts[1])
            } else if line.hasPrefix("#") || line.isEmpty {
                throw fail("unexpected line '\(line)'")
            } else {
                var sample = try parseSample(line, fail)
                guard let last = families.last, !last.type.isEmpty, sample.name == last.name else {
                    throw fail("sample \(sample.name) outside its family")
                }
                let identity = sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)\u{0}\($0.value)" }.joined(separator: "\u{1}")
                guard labelSets.insert(identity).inserted else { throw fail("label set repeated in \(sample.name)") }
                sample.name = last.name
                families[families.count - 1].samples.append(sample)
            }
        }
        return families
    }

    private static func unescapeHelp(_ text: String, _ fail: (String) -> ParseError) throws -> String {
        var out = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            guard character == "\\" else { out.append(character); continue }
            switch iterator.next() {
            case "\\": out.append("\\")
            case "n": out.append("\n")
            default: throw fail("bad escape in HELP")
            }
        }
        return out
    }

    private static func parseSample(_ line: String, _ fail: (String) -> ParseError) throws -> PrometheusSample {
        let scalars = Array(line.unicodeScalars)
        var index = 0
        var name = ""
        while index < scalars.count, scalars[index] != "{", scalars[index] != " " {
            name.unicodeScalars.append(scalars[index])
            index += 1
        }
        guard !name.isEmpty, name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || $0 == "_" || $0 == ":" || ("0"..."9").contains($0) }),
              !("0"..."9").contains(name.unicodeScalars.first!) else { throw fail("bad metric name '\(name)'") }
        var labels: [String: String] = [:]
        if index < scalars.count, scalars[index] == "{" {
            index += 1
            while true {
                guard index < scalars.count else { throw fail("unterminated labels") }
                if scalars[index] == "}" { index += 1; break }
                var key = ""
                while index < scalars.count, scalars[index] != "=" {
                    key.unicodeScalars.append(scalars[index])
                    index += 1
                }
                guard !key.isEmpty, key.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }),
                      index + 1 < scalars.count, scalars[index + 1] == "\"" else { throw fail("bad label name '\(key)'") }
                index += 2
                var value = ""
                while true {
                    guard index < scalars.count else { throw fail("unterminated label value") }
                    let scalar = scalars[index]
                    index += 1
                    if scalar == "\"" { break }
                    if scalar == "\n" { throw fail("raw line feed in a label value") }
                    if scalar == "\\" {
                        guard index < scalars.count else { throw fail("dangling escape") }
                        let escaped = scalars[index]
                        index += 1
                        switch escaped {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw fail("bad escape \\\(escaped) in a label value")
                        }
                    } else {
                        value.unicodeScalars.append(scalar)
                    }
                }
                guard labels[key] == nil else { throw fail("label \(key) twice") }
                labels[key] = value
                guard index < scalars.count else { throw fail("unterminated labels") }
                if scalars[index] == "," { index += 1 } else if scalars[index] != "}" { throw fail("expected , or }") }
            }
        }
        guard index < scalars.count, scalars[index] == " " else { throw fail("no value") }
        let valueText = String(String.UnicodeScalarView(scalars[(index + 1)...]))
        let value: Double
        switch valueText {
        case "NaN": value = .nan
        case "+Inf": value = .infinity
        case "-Inf": value = -.infinity
        default:
            guard let parsed = Double(valueText), !valueText.contains(" ") else { throw fail("bad value '\(valueText)'") }
            value = parsed
        }
        return PrometheusSample(name: name, labels: labels, value: value)
    }
}
