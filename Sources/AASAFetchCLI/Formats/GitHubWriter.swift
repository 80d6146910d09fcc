import AASAFetchCore
import Foundation

/// GitHub Actions workflow commands: one `::error|warning|notice file=F,line=L,col=C,title=CODE::message`
/// line per problem (a finding's fix follows its message), and a closing `::notice::` with the
/// command's tally. `file`, `line` and `col` appear only when known. Values are escaped as
/// GitHub's toolkit escapes them (``escapeData(_:)``, ``escapeProperty(_:)``), so no text from a
/// server or a file can end a command or start another.
struct GitHubWriter: CIWriter {
    let write: (String) -> Void

    /// `%`, CR and LF as `%25`, `%0D`, `%0A` (the toolkit's `escapeData`), and every other
    /// control character as human output writes it (``TerminalText/escaped(_:)``): an ESC, OSC 8
    /// link or bidi override from a server reached the log viewer, which renders ANSI sequences.
    static func escapeData(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": result += "%25"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            case _ where TerminalText.isControl(scalar): result += TerminalText.escaped(String(scalar))
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// ``escapeData(_:)`` and also `:` and `,` as `%3A` and `%2C` (the toolkit's `escapeProperty`).
    static func escapeProperty(_ text: String) -> String {
        escapeData(text).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }

    /// The command word of a severity.
    static func command(_ severity: Severity) -> String {
        switch severity {
        case .error: "error"
        case .warning: "warning"
        case .info: "notice"
        }
    }

    /// One workflow command line for a problem.
    static func line(_ problem: CIProblem) -> String {
        var properties: [String] = []
        if let file = problem.location.file {
            properties.append("file=\(escapeProperty(file))")
            if let line = problem.location.line {
                properties.append("line=\(line)")
                if let column = problem.location.column { properties.append("col=\(column)") }
            }
        }
        properties.append("title=\(escapeProperty(problem.code))")
        return "::\(command(problem.severity)) \(properties.joined(separator: ","))::\(escapeData(problem.messageWithFix))\n"
    }

    func begin(command: String) {}

    func loose(_ problems: [CIProblem]) {
        for problem in problems { write(Self.line(problem)) }
    }

    func openSuite(_ name: String, counts: CICounts) {}

    func testCase(_ item: CICase) {
        for problem in item.problems { write(Self.line(problem)) }
    }

    func closeSuite() {}

    func finish(summary: String) {
        write("::notice title=aasa-fetch::\(Self.escapeData(summary))\n")
    }
}
