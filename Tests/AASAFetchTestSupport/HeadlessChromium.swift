import Foundation

/// Debian's Chromium, headless, for tests of the HTML status page: loads a local file (fragment
/// included), runs its script and returns the DOM as it stands after the load, with every console
/// message the page produced (errors, uncaught exceptions, refused loads).
public enum HeadlessChromium {
    /// The browser, or `nil` when it is not installed.
    public static var executable: String? {
        ChildProcess.find("chromium", preferring: ["/usr/bin/chromium"])
    }

    /// What a page load left behind.
    public struct Load: Sendable {
        /// The serialised DOM after the load event.
        public var dom: String
        /// The console messages (`"text", source: URL (line)`), in order.
        public var console: [String]
    }

    static func arguments(profile: URL) -> [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions", "--disable-sync",
         "--user-data-dir=\(profile.path)", "--enable-logging=stderr", "--log-level=0"]
    }

    static func run(_ extra: [String], url: String) throws -> ChildProcess.Output {
        guard let chromium = executable else {
            throw TestSupportError("chromium is not installed; scripts/install-deps installs it (apt-get install -y chromium)")
        }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: profile) }
        return try ChildProcess.run(chromium, arguments(profile: profile) + extra + [url], timeout: .seconds(120))
    }

    static func consoleLines(_ log: String) -> [String] {
        log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: ":CONSOLE") else { return nil }
            return String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces)
        }
    }

    /// Loads `file` (an absolute path) with an optional URL fragment and dumps its DOM.
    public static func load(_ file: String, fragment: String? = nil) throws -> Load {
        let url = URL(fileURLWithPath: file).absoluteString + (fragment.map { "#\($0)" } ?? "")
        let output = try run(["--dump-dom"], url: url)
        guard output.status == 0, output.standardOutput.contains("</html>") else {
            throw TestSupportError("chromium --dump-dom \(url) exited \(output.status): \(output.standardError.suffix(2000))")
        }
        return Load(dom: output.standardOutput, console: consoleLines(output.standardError))
    }

    /// Renders `file` to a PNG of `width` × `height` CSS pixels.
    public static func screenshot(_ file: String, to png: String, width: Int = 1280, height: Int = 800) throws -> [String] {
        let output = try run(["--screenshot=\(png)", "--window-size=\(width),\(height)", "--hide-scrollbars"],
                             url: URL(fileURLWithPath: file).absoluteString)
        guard output.status == 0, FileManager.default.fileExists(atPath: png) else {
            throw TestSupportError("chromium --screenshot exited \(output.status): \(output.standardError.suffix(2000))")
        }
        return consoleLines(output.standardError)
    }

    /// The opening tags of `<details class="h …">` host rows in a dumped DOM, in document order:
    /// each row's `data-host`, `data-route`, `data-st` and whether it is hidden.
    public static func hostRows(_ dom: String) -> [(host: String, route: String, state: String, hidden: Bool)] {
        var rows: [(String, String, String, Bool)] = []
        var rest = dom[...]
        while let start = rest.range(of: "<details ") {
            guard let end = rest[start.upperBound...].firstIndex(of: ">") else { break }
            let tag = String(rest[start.upperBound..<end])
            rest = rest[end...]
            guard tag.contains("class=\"h ") else { continue }
            func attribute(_ name: String) -> String {
                guard let range = tag.range(of: " \(name)=\"") ?? (tag.hasPrefix("\(name)=\"") ? tag.range(of: "\(name)=\"") : nil),
                      let close = tag[range.upperBound...].firstIndex(of: "\"") else { return "" }
                return String(tag[range.upperBound..<close])
            }
            let hidden = tag.range(of: #"(^| )hidden(=""|$| )"#, options: .regularExpression) != nil
            rows.append((attribute("data-host"), attribute("data-route"), attribute("data-st"), hidden))
        }
        return rows
    }
}
