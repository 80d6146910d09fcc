import AASAFetchTestSupport
import Foundation

/// Makes outputs comparable across runs: what changes from run to run (the working folder, other
/// temporary paths, the server's port, times, dates, durations, certificate dates, lease owners)
/// becomes a fixed placeholder. Both the golden files and the documents are compared after it.
///
/// The documents show real outputs, with the working folder written as `.` and the server's port
/// as ``displayPort`` (``display(_:)``), so a reader sees what a terminal shows.
struct OutputNormalizer {
    /// The port the documents show for the example sites.
    static let displayPort = 8443

    /// The working folder of the run.
    var folder: String
    /// The ports of the servers of the run.
    var ports: [Int]

    /// The text as the documents show it: the working folder as `.`, the port as ``displayPort``.
    func display(_ text: String) -> String {
        var text = text
        for prefix in [folder, "/private" + folder] {
            text = text.replacingOccurrences(of: prefix + "/", with: "")
            text = text.replacingOccurrences(of: prefix, with: ".")
        }
        text = text.replacingOccurrences(of: TestPaths.repository.path + "/", with: "")
        for port in ports {
            text = Self.replace(#"(?<![0-9])\#(port)(?![0-9])"#, in: text, with: String(Self.displayPort))
        }
        return text
    }

    /// The text with every varying part replaced by a placeholder.
    func normalize(_ text: String) -> String {
        var text = display(text)
        let rules: [(String, String)] = [
            // Temporary paths outside the working folder (spool folders, test CA files).
            (#"/tmp/[^\s'"),]+"#, "<tmp>"),
            // The example sites' port, as shown.
            (#"(?<![0-9])\#(Self.displayPort)(?![0-9])"#, "<port>"),
            // ISO 8601 times and dates.
            (#"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})"#, "<time>"),
            (#"\d{4}-\d{2}-\d{2}"#, "<date>"),
            // HTTP dates (`Last-Modified: Mon, 23 Nov 2026 18:42:41 GMT`) and nginx's ETags, which
            // carry the file's modification time (`"6b048921-c5"`: time, then size).
            (#"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT"#, "<http-date>"),
            (#"\b[0-9a-f]{8}-(?=[0-9a-f]+\\?")"#, "<mtime>-"),
            // OpenSSL's certificate dates (`Nov 21 22:27:08 2026 GMT`).
            (#"[A-Z][a-z]{2} [ 0-9]\d \d{2}:\d{2}:\d{2} \d{4} GMT"#, "<cert-date>"),
            // Durations.
            (#"\d+(\.\d+)? ?(ms|µs)\b"#, "<duration>"),
            (#"(?<="milliseconds": |"milliseconds":)\d+"#, "<duration>"),
            // Sizes of written pages (`report --html`: times in the page vary its length).
            (#"(?<=failing, )\d+ KiB"#, "<size> KiB"),
            // Lease owners (`host:pid:random`) in refresh reports.
            (#"(?<="owner" : "|"owner": "|"owner":")[^"]+"#, "<owner>"),
        ]
        for (pattern, replacement) in rules {
            text = Self.replace(pattern, in: text, with: replacement)
        }
        // Trailing blanks and blank lines at the end do not count.
        let lines = text.components(separatedBy: "\n").map { line -> String in
            var line = line
            while line.last == " " || line.last == "\t" { line.removeLast() }
            return line
        }
        return ExampleSources.trimTrailingBlank(lines).joined(separator: "\n")
    }

    static func replace(_ pattern: String, in text: String, with replacement: String) -> String {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return text }
        let range = NSRange(text.startIndex..., in: text)
        return expression.stringByReplacingMatches(
            in: text, range: range, withTemplate: NSRegularExpression.escapedTemplate(for: replacement))
    }
}
