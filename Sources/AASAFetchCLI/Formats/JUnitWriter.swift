import AASAFetchCore
import Foundation

/// JUnit XML: `<testsuites name="aasa-fetch COMMAND">`, one `<testsuite name tests failures errors
/// skipped time>` per group, one `<testcase classname name time>` per case, with
/// `<failure message type>` (a failed case: the problems, each with its fix, in the body),
/// `<error>` (a case that could not be checked), `<skipped>` (not judged) and `<system-out>`
/// (the warnings and notes of a case that passed). Problems about the run as a whole (its inputs,
/// a warning said once for every host) form a group `run` of one case, failed when one is an error. The root carries no counts: groups are written as they are known.
///
/// Every text is XML-escaped (``escape(_:attribute:)``), control characters that XML 1.0 forbids
/// included, so the document always parses.
struct JUnitWriter: CIWriter {
    let write: (String) -> Void

    /// `text` for XML 1.0 character data (`attribute`: a double-quoted attribute value): `&`, `<`,
    /// `>` (and `"`, and TAB, LF, CR as character references in attributes) escaped; a character
    /// XML 1.0 forbids (C0 controls but TAB, LF and CR; U+FFFE, U+FFFF) written as `\u{XX}`.
    static func escape(_ text: String, attribute: Bool = false) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"" where attribute: result += "&quot;"
            case "\t" where attribute: result += "&#9;"
            case "\n" where attribute: result += "&#10;"
            case "\r": result += "&#13;"
            case "\t", "\n": result.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }

    static func seconds(_ time: Double) -> String { String(format: "%.3f", time) }

    func begin(command: String) {
        write("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"\(Self.escape("aasa-fetch \(command)", attribute: true))\">\n")
    }

    func loose(_ problems: [CIProblem]) {
        guard !problems.isEmpty else { return }
        let error = problems.first { $0.severity == .error }
        var copy = self
        copy.suite("run", [CICase(suite: "run", name: "run", outcome: error.map { .failed(code: $0.code) } ?? .passed,
                                     time: nil, problems: problems)])
    }

    func openSuite(_ name: String, counts: CICounts) {
        write("  <testsuite name=\"\(Self.escape(name, attribute: true))\" tests=\"\(counts.tests)\" failures=\"\(counts.failures)\" errors=\"\(counts.errors)\" skipped=\"\(counts.skipped)\" time=\"\(Self.seconds(counts.time))\">\n")
    }

    /// The body of a failure or of `system-out`: one problem a line, each fix under it.
    static func body(_ problems: [CIProblem]) -> String {
        problems.map { problem in
            var text = "\(problem.severity.rawValue) \(problem.code): \(problem.message)"
            if let file = problem.location.file {
                text += " (\(file)\(problem.location.line.map { ":\($0)" } ?? "")\(problem.location.column.map { ":\($0)" } ?? ""))"
            }
            if let fix = problem.fix { text += "\n  fix: \(fix)" }
            return text
        }.joined(separator: "\n")
    }

    func testCase(_ item: CICase) {
        var text = "    <testcase classname=\"\(Self.escape(item.suite, attribute: true))\" name=\"\(Self.escape(item.name, attribute: true))\" time=\"\(Self.seconds(item.time ?? 0))\""
        let primary: (code: String, tag: String)?
        switch item.outcome {
        case .failed(let code): primary = (code, "failure")
        case .error(let code): primary = (code, "error")
        case .passed, .skipped: primary = nil
        }
        if let primary {
            let first = item.problems.first { $0.code == primary.code } ?? item.problems.first
            let message = first.map { "\($0.code): \($0.message)" } ?? primary.code
            text += ">\n      <\(primary.tag) message=\"\(Self.escape(message, attribute: true))\" type=\"\(Self.escape(primary.code, attribute: true))\">"
            text += Self.escape(Self.body(item.problems)) + "</\(primary.tag)>\n    </testcase>\n"
        } else if case .skipped(let why) = item.outcome {
            text += ">\n      <skipped message=\"\(Self.escape(why, attribute: true))\"/>\n"
            if !item.problems.isEmpty { text += "      <system-out>\(Self.escape(Self.body(item.problems)))</system-out>\n" }
            text += "    </testcase>\n"
        } else if !item.problems.isEmpty {
            text += ">\n      <system-out>\(Self.escape(Self.body(item.problems)))</system-out>\n    </testcase>\n"
        } else {
            text += "/>\n"
        }
        write(text)
    }

    func closeSuite() {
        write("  </testsuite>\n")
    }

    func finish(summary: String) {
        write("</testsuites>\n")
    }
}
