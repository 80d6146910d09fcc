import Foundation
import IDNA

/// An alternate mode of an entitlement entry (`?mode=`).
public enum AlternateMode: String, Sendable, Codable, Hashable, CaseIterable {
    /// Only devices in developer mode; any valid certificate, direct fetch.
    case developer
    /// Only MDM-managed devices; direct fetch.
    case managed
    /// Devices in both modes.
    case developerManaged = "developer+managed"
}

/// One parsed string of `com.apple.developer.associated-domains`.
public struct AssociatedDomainEntry: Sendable, Hashable, Codable {
    /// Position in the entitlement array (0-based).
    public var index: Int
    /// The string as written (`nil` when the array element was not a string).
    public var raw: String?
    /// The service before the colon; `nil` when there is none.
    public var service: Service?
    /// The domain as it should be written: ASCII, lower case, with `*.` for a wildcard;
    /// `nil` when the entry is unusable.
    public var domain: String?
    /// The host whose file serves this entry (the parent for a `*.` wildcard); `nil` when the entry
    /// cannot be fetched.
    public var host: String?
    /// Whether the entry is a `*.` wildcard.
    public var isWildcard: Bool
    /// The alternate mode, when `?mode=` is present and valid.
    public var mode: AlternateMode?
    /// Errors and warnings about this entry.
    public var findings: [Finding]
    /// The 1-based line of the entry in the file it came from (an XML entitlements file's
    /// `<string>`, a `--domains` line), when known; not part of any JSON shape.
    public var line: Int? = nil

    private enum CodingKeys: String, CodingKey {
        case index, raw, service, domain, host, isWildcard, mode, findings
    }

    /// Whether the entry names a host that can be downloaded.
    public var isFetchable: Bool { host != nil }

    /// The first error finding's code, when the entry has one.
    public var errorCode: String? { findings.first { $0.severity == .error }?.code }

    /// The entry as the entitlement should hold it: `service:domain[?mode=…]`.
    public var normalized: String? {
        guard let service, let domain else { return nil }
        return "\(service.name):\(domain)" + (mode.map { "?mode=\($0.rawValue)" } ?? "")
    }

    /// Creates an entry.
    public init(
        index: Int,
        raw: String?,
        service: Service? = nil,
        domain: String? = nil,
        host: String? = nil,
        isWildcard: Bool = false,
        mode: AlternateMode? = nil,
        findings: [Finding] = []
    ) {
        self.index = index
        self.raw = raw
        self.service = service
        self.domain = domain
        self.host = host
        self.isWildcard = isWildcard
        self.mode = mode
        self.findings = findings
    }
}

/// Parses entitlement entries (`service:host[?mode=developer|managed|developer+managed]`) with a
/// stable code for every problem an entitlement entry can have.
public struct EntryParser: Sendable {
    /// Values for Xcode build-setting variables such as `$(APP_DOMAIN)` (from `--define NAME=VALUE`).
    public var definitions: [String: String]

    /// Creates a parser.
    public init(definitions: [String: String] = [:]) {
        self.definitions = definitions
    }

    /// Parses every string of the entitlement array and flags duplicates.
    public func parse(_ strings: [String?]) -> [AssociatedDomainEntry] {
        var entries = strings.enumerated().map { parse($0.element, index: $0.offset) }
        var seen: [String: Int] = [:]
        for position in entries.indices {
            guard let key = entries[position].normalized else { continue }
            if let first = seen[key] {
                entries[position].findings.append(Self.duplicateFinding(key: key, first: first, position: position))
            } else {
                seen[key] = position
            }
        }
        return entries
    }

    /// The warning on an entry whose normalized form `key` was listed first at position `first`.
    public static func duplicateFinding(key: String, first: Int, position: Int) -> Finding {
        .warning(
            "entitlement-duplicate",
            "'\(key)' is already listed at position \(first)",
            location: "entry \(position)",
            fix: "remove the repeated entry"
        )
    }

    /// Parses one entitlement string.
    public func parse(_ string: String?, index: Int) -> AssociatedDomainEntry {
        var entry = AssociatedDomainEntry(index: index, raw: string)
        let location = "entry \(index)"
        func fail(_ code: String, _ message: String, fix: String? = nil) -> AssociatedDomainEntry {
            entry.findings.append(.error(code, message, location: location, fix: fix))
            return entry
        }
        guard var text = string else {
            return fail("entitlement-not-string", "the entitlement array holds a value that is not a string",
                        fix: "make every element a <string>service:domain</string>")
        }

        // Build-setting variables: $(NAME) or ${NAME}.
        switch XcodeVariables.expand(text, definitions: definitions) {
        case .success(let expanded):
            text = expanded
        case .failure(let unresolved):
            let unresolved = unresolved.name
            return fail(
                "entitlement-unresolved-variable",
                "'\(text)' holds the Xcode variable \(text.contains("${\(unresolved)}") ? "${\(unresolved)}" : "$(\(unresolved))"), which is set only when the app is built",
                fix: "pass --define \(unresolved)=VALUE, or read the entitlements of the built app"
            )
        }

        let trimmed = EntryText.trimmed(text, newlines: true)
        if trimmed != text {
            entry.findings.append(.warning("entitlement-whitespace", "'\(text)' has surrounding white space; it was trimmed",
                                           location: location, fix: "write '\(trimmed)'"))
            text = trimmed
        }

        // A control character inside (NUL, ESC, a line break): no part of an entry may hold one,
        // and a store or spool that keeps C strings would cut the entry at a NUL.
        if let control = text.unicodeScalars.first(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            let hex = String(control.value, radix: 16, uppercase: true)
            return fail("entitlement-control-character",
                        "\(text.debugDescription) holds the control character U+\(String(repeating: "0", count: 4 - hex.count))\(hex)",
                        fix: "remove it: an entry is service:domain in printable characters")
        }

        if EntryText.hasPrefix(text, asciiIgnoringCase: "http:") || EntryText.hasPrefix(text, asciiIgnoringCase: "https:") {
            // A URL where the entry should be (`https://www.example.com/`): the scheme is the
            // mistake, not an unknown service called `https`.
            return fail("entitlement-scheme", "'\(text)' is a URL; the entry names a service and a domain only",
                        fix: "write 'applinks:\(Self.urlHost(text) ?? "example.com")'")
        }
        guard let colon = Self.serviceColon(in: text) else {
            let host = EntryText.firstIndex(of: ":", in: text).map { String(text[..<$0]) } ?? text
            return fail("entitlement-missing-service", "'\(text)' has no service prefix",
                        fix: "write 'applinks:\(host)' (or webcredentials:, activitycontinuation:, appclips:, authsrv:)")
        }
        let serviceName = String(text[..<colon])
        var rest = String(text[text.index(after: colon)...])
        guard !serviceName.isEmpty else {
            return fail("entitlement-missing-service", "'\(text)' has an empty service before the colon",
                        fix: "write 'applinks:\(rest)'")
        }
        let service = Service(name: serviceName)
        entry.service = service
        if !service.isKnown {
            let suggestion = Service.known.first { $0.name == serviceName.lowercased() }
            entry.findings.append(.warning(
                "entitlement-unknown-service",
                "'\(serviceName)' is not a service Apple documents; the entry is kept",
                location: location,
                fix: suggestion.map { "write '\($0.name):'" } ?? "use applinks, webcredentials, activitycontinuation, appclips or authsrv"
            ))
        }

        if EntryText.contains(rest, ascii: "://") || EntryText.hasPrefix(rest, asciiIgnoringCase: "http:") || EntryText.hasPrefix(rest, asciiIgnoringCase: "https:") {
            return fail("entitlement-scheme", "'\(text)' includes a URL scheme; the entry names a domain only",
                        fix: "write '\(serviceName):\(Self.urlHost(rest) ?? "example.com")'")
        }

        // Query: only ?mode= is allowed.
        if let question = EntryText.firstIndex(of: "?", in: rest) {
            let query = String(rest[rest.index(after: question)...])
            rest = String(rest[..<question])
            let pairs = query.split(separator: "&", omittingEmptySubsequences: false)
            guard pairs.count == 1, pairs[0].hasPrefix("mode=") else {
                return fail("entitlement-query", "'\(text)' has a query other than ?mode=",
                            fix: "write '\(serviceName):\(rest)' or add ?mode=developer, ?mode=managed or ?mode=developer+managed")
            }
            let value = String(pairs[0].dropFirst("mode=".count))
            guard let mode = AlternateMode(rawValue: value) else {
                return fail("entitlement-mode-invalid", "'\(value)' is not an alternate mode",
                            fix: "use ?mode=developer, ?mode=managed or ?mode=developer+managed")
            }
            entry.mode = mode
            entry.findings.append(.warning(
                "entitlement-alternate-mode",
                "'\(text)' uses ?mode=\(mode.rawValue): only \(Self.devices(in: mode)) use it, and the file is fetched directly, not through Apple's CDN",
                location: location,
                fix: "remove the query string before you submit the app to the App Store"
            ))
        }

        let modeSuffix = entry.mode.map { "?mode=\($0.rawValue)" } ?? ""
        if rest.utf8.contains(UInt8(ascii: "#")) {
            return fail("entitlement-path", "'\(text)' has a fragment; the entry names a domain only",
                        fix: "write '\(serviceName):\(rest.split(separator: "#").first.map(String.init) ?? "")\(modeSuffix)'")
        }
        if let slash = EntryText.firstIndex(of: "/", in: rest) {
            let hostPart = String(rest[..<slash])
            let pathPart = rest[slash...]
            if pathPart == "/" {
                return fail("entitlement-trailing-slash", "'\(text)' ends with a slash",
                            fix: "write '\(serviceName):\(hostPart)\(modeSuffix)'")
            }
            return fail("entitlement-path", "'\(text)' includes a path; the entry names a domain only",
                        fix: "write '\(serviceName):\(hostPart)\(modeSuffix)' and put paths in the association file")
        }
        if let address = Self.ipAddress(in: rest) {
            return fail("entitlement-ip-address", "'\(text)' names the IP address \(address); an entry names a domain, which devices look up by name",
                        fix: "write '\(serviceName):' followed by the domain name that serves the association file")
        }
        if let portColon = EntryText.lastIndex(of: ":", in: rest) {
            let port = rest[rest.index(after: portColon)...]
            guard portColon != rest.startIndex else {
                // `applinks::example.com`: no host before the colon, not a port after one.
                return fail("entitlement-empty-host", "'\(text)' has a colon where the domain should start", fix: "write '\(serviceName):\(port)'")
            }
            let before = rest[..<portColon]
            if port.isEmpty {
                return fail("entitlement-port", "'\(text)' ends with a colon, where a port would go; links with a port will not open the app",
                            fix: "write '\(serviceName):\(before)\(modeSuffix)'")
            }
            guard port.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                if Service(name: String(before)).isKnown || Service.known.contains(where: { $0.name == before.lowercased() }) {
                    // `applinks:applinks:example.com`: the prefix written twice.
                    return fail("entitlement-invalid-host", "'\(text)' writes the service prefix twice",
                                fix: "write '\(serviceName):\(port)\(modeSuffix)'")
                }
                return fail("entitlement-invalid-host", "'\(text)' has a colon inside the domain ('\(before):\(port)'); a domain name holds none")
            }
            return fail("entitlement-port", "'\(text)' includes a port (\(port)); links to it will not open the app",
                        fix: "write '\(serviceName):\(before)\(modeSuffix)' and serve the file on port 443")
        }
        guard !rest.isEmpty else {
            return fail("entitlement-empty-host", "'\(text)' names no domain", fix: "write '\(serviceName):example.com'")
        }

        var host = rest
        if host.hasPrefix("*.") {
            entry.isWildcard = true
            host.removeFirst(2)
        }
        if host.utf8.contains(UInt8(ascii: "*")) {
            return fail("entitlement-wildcard-position", "'\(text)': a wildcard is allowed only as a leading '*.'",
                        fix: "write '\(serviceName):\(Self.wildcardSuggestion(host))\(modeSuffix)'")
        }
        if host.hasPrefix(".") {
            return fail("entitlement-invalid-host", "'\(text)' starts with a dot; the wildcard form is '*.'",
                        fix: "write '\(serviceName):*\(host)'")
        }
        if entry.isWildcard, service == .appclips {
            return fail("entitlement-wildcard-appclips", "'\(text)': App Clip entries cannot use a wildcard",
                        fix: "list each App Clip domain exactly")
        }
        guard !host.isEmpty else {
            return fail("entitlement-empty-host", "'\(text)' names no domain after the wildcard",
                        fix: "write '\(serviceName):*.example.com'")
        }

        let isASCII = EntryText.isASCII(host)
        // An ASCII name differs from its lower-case form exactly when it holds an upper-case letter.
        if isASCII, host.utf8.contains(where: { (0x41...0x5A).contains($0) }) {
            entry.findings.append(.warning("entitlement-uppercase", "'\(host)' has upper-case letters; it was lower-cased",
                                           location: location, fix: "write '\(host.lowercased())'"))
        }
        let ascii: String
        do {
            ascii = try IDNA.toASCII(host)
        } catch {
            // Invalid Punycode only when an `xn--` label fails on its own; a long label or a
            // disallowed character elsewhere in the name is the name's problem.
            for label in host.lowercased().split(separator: ".") where label.hasPrefix("xn--") && label.utf8.count <= 63 {
                do {
                    _ = try IDNA.toASCII(String(label))
                } catch {
                    return fail("entitlement-invalid-punycode", "'\(host)' has an invalid Punycode label: \(error.message)",
                                fix: "encode the Unicode name again with an IDNA2008 tool")
                }
            }
            return fail("entitlement-invalid-host", "'\(host)' is not a valid domain name: \(error.message)")
        }
        if let problem = Self.hostSyntaxProblem(ascii) {
            return fail("entitlement-invalid-host", "'\(host)' is not a valid domain name: \(problem)")
        }
        let wildcardPrefix = entry.isWildcard ? "*." : ""
        if !isASCII {
            let written = "\(serviceName):\(wildcardPrefix)\(ascii)" + (entry.mode.map { "?mode=\($0.rawValue)" } ?? "")
            entry.findings.append(.error(
                "entitlement-not-punycode",
                "'\(host)' is not in Punycode; devices compare ASCII names, so the entry never matches (fetched as \(ascii))",
                location: location,
                fix: "write '\(written)'"
            ))
        }
        if !ascii.utf8.contains(UInt8(ascii: ".")) {
            entry.findings.append(.warning("entitlement-single-label", "'\(ascii)' is not a fully qualified domain name",
                                           location: location))
        }
        entry.domain = wildcardPrefix + ascii
        entry.host = ascii
        return entry
    }

    /// The devices an alternate mode serves, for messages.
    static func devices(in mode: AlternateMode) -> String {
        switch mode {
        case .developer: "developer-mode devices"
        case .managed: "managed devices"
        case .developerManaged: "devices in both developer and managed mode"
        }
    }

    /// The colon that ends an entry's service prefix, or `nil` when the text has none: text before
    /// the first colon that holds a dot, a slash or a bracket is a host (`www.example.com:8080`,
    /// `[::1]:443`), not a service; so is a name that is not a documented service when only digits
    /// follow the colon (`localhost:8080`, a host and its port). The CLI reads `--domain` values
    /// and list lines the same way.
    public static func serviceColon(in text: String) -> String.Index? {
        guard let colon = EntryText.firstIndex(of: ":", in: text) else { return nil }
        let prefix = text[..<colon].utf8
        if prefix.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "[") }) { return nil }
        // The port ends where a `?mode=` begins.
        let rest = text[text.index(after: colon)...].utf8.prefix { $0 != UInt8(ascii: "?") }
        if !rest.isEmpty, rest.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
           !Service.known.contains(where: { $0.name == String(text[..<colon]).lowercased() }) {
            return nil
        }
        return colon
    }

    /// The host a URL names: after the scheme and its slashes, before a path, query, fragment or
    /// port (`https:example.com`, `http:/example.com`, `https://a.example.com:8443/`).
    static func urlHost(_ url: String) -> String? {
        var bare = Substring(url)
        if let colon = bare.firstIndex(of: ":") { bare = bare[bare.index(after: colon)...] }
        bare = bare.drop(while: { $0 == "/" })
        if let end = bare.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { bare = bare[..<end] }
        if let colon = bare.lastIndex(of: ":") { bare = bare[..<colon] }
        return bare.isEmpty ? nil : String(bare)
    }

    /// A valid wildcard entry for a host with a misplaced `*` (after a leading `*.`, if any): the
    /// labels after the last one holding a `*`, with what that label holds besides the `*`
    /// (`*example.com` → `*.example.com`, `a.*.example.com` → `*.example.com`); `*.example.com`
    /// when fewer than two labels remain.
    static func wildcardSuggestion(_ host: String) -> String {
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard let last = labels.lastIndex(where: { $0.contains("*") }) else { return "*.\(host)" }
        var kept = Array(labels[labels.index(after: last)...])
        let remainder = labels[last].filter { $0 != "*" }
        if !remainder.isEmpty { kept.insert(Substring(remainder), at: 0) }
        guard kept.count >= 2, kept.allSatisfy({ !$0.isEmpty }) else { return "*.example.com" }
        return "*." + kept.joined(separator: ".")
    }

    /// The IP address an entry names instead of a domain, port left out: a bracketed IPv6 literal
    /// (`[::1]`, `[::1]:443`), a bare IPv6 address (two colons or more) or a dotted IPv4 address.
    static func ipAddress(in rest: String) -> String? {
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return rest }
            return String(rest[...close])
        }
        // Colons as characters: a colon followed by a combining mark is another character.
        let colons = EntryText.isASCII(rest) ? rest.utf8.count(where: { $0 == UInt8(ascii: ":") }) : rest.count(where: { $0 == ":" })
        if colons >= 2 { return rest }
        let host = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        // A name whose last label is a number is read as an IPv4 address by resolvers and URL
        // parsers alike (`127.1`, `2130706433`, `0x7f000001`: the WHATWG URL rule "ends in a
        // number"); no top-level domain is numeric.
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1, labels.last?.isEmpty == true { labels.removeLast() }
        guard let last = labels.last?.utf8, !last.isEmpty else { return nil }
        let isDecimal = last.allSatisfy { (0x30...0x39).contains($0) }
        let isHex = last.count >= 2 && last.first == UInt8(ascii: "0") && (last.dropFirst().first == UInt8(ascii: "x") || last.dropFirst().first == UInt8(ascii: "X"))
            && last.dropFirst(2).allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
        return isDecimal || isHex ? String(host) : nil
    }

    /// Checks LDH syntax and lengths of an ASCII host; returns the problem or `nil`.
    static func hostSyntaxProblem(_ host: String) -> String? {
        isValidLDHName(host) ? nil : hostSyntaxProblemByLabels(host)
    }

    /// ``hostSyntaxProblem(_:)`` label by label, character by character: names the problem.
    static func hostSyntaxProblemByLabels(_ host: String) -> String? {
        if host.utf8.count > 253 { return "longer than 253 characters" }
        if host.hasSuffix(".") { return "ends with a dot" }
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { return "has an empty label" }
            if label.utf8.count > 63 { return "label '\(label)' is longer than 63 characters" }
            if label.hasPrefix("-") || label.hasSuffix("-") { return "label '\(label)' starts or ends with a hyphen" }
            if let bad = label.unicodeScalars.first(where: { !(("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-") }) {
                return "label '\(label)' holds '\(bad)'"
            }
        }
        return nil
    }
}

extension EntryParser {
    /// Whether `host` passes ``hostSyntaxProblem(_:)`` (at most 253 bytes, no trailing dot,
    /// labels of 1 to 63 bytes of `a`–`z`, `0`–`9` and `-`, not starting or ending with `-`),
    /// checked byte by byte; ``hostSyntaxProblem(_:)`` names the problem of a name that fails.
    static func isValidLDHName(_ host: String) -> Bool {
        let bytes = host.utf8
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        var length = 0
        var previous: UInt8 = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "."):
                guard length > 0, previous != UInt8(ascii: "-") else { return false }
                length = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                length += 1
            case UInt8(ascii: "-"):
                guard length > 0 else { return false }
                length += 1
            default:
                return false
            }
            guard length <= 63 else { return false }
            previous = byte
        }
        return length > 0 && previous != UInt8(ascii: "-")
    }
}

extension IDNA.ConversionError {
    /// The message without libidn2's error name.
    var message: String { description }
}
