/// Options of ``AASALinter``.
public struct LintOptions: Sendable, Hashable {
    /// Apple's limit on an association file's decoded size: 128 KiB.
    public static let defaultMaxSize = 128 * 1024

    /// The size limit in bytes: `too-large` above it, `size-near-limit` at 90 % of it or more.
    public var maxSize: Int

    /// Creates options.
    public init(maxSize: Int = LintOptions.defaultMaxSize) {
        self.maxSize = maxSize
    }
}

/// One code the linter can report, for documentation and tests.
public struct LintCode: Sendable, Hashable {
    /// The stable kebab-case code.
    public let code: String
    /// The severity every finding with this code has.
    public let severity: Severity
    /// What the code means.
    public let summary: String
}

/// Checks an association file for syntax, structure and semantic problems.
///
/// Every finding has a stable code (see ``catalog``), a fixed severity per code, a JSON pointer
/// location (or `line:column` for syntax errors, `nil` for whole-file findings such as the size),
/// a message ending with `(line L, column C)` when the pointer resolves, and a fix.
/// Findings are ordered by their position in the file, whole-file findings first.
public enum AASALinter {
    /// Every code the linter reports, with its severity.
    public static let catalog: [LintCode] = [
        LintCode(code: "invalid-json", severity: .error, summary: "The file is not strict JSON (position given)."),
        LintCode(code: "not-an-association-file", severity: .error, summary: "Valid JSON without any documented service at the top level."),
        LintCode(code: "too-large", severity: .error, summary: "Larger than the size limit (128 KiB): devices refuse it; the file is not parsed further."),
        LintCode(code: "size-near-limit", severity: .warning, summary: "At least 90 % of the size limit."),
        LintCode(code: "bom", severity: .warning, summary: "Starts with a UTF-8 byte order mark."),
        LintCode(code: "duplicate-key", severity: .warning, summary: "A key appears twice in one object; the last one wins."),
        LintCode(code: "unknown-service", severity: .warning, summary: "A top-level key that is not a documented service."),
        LintCode(code: "unknown-key", severity: .warning, summary: "A key Apple does not define at that place (with a did-you-mean)."),
        LintCode(code: "defaults-inherited-key", severity: .info, summary: "\"defaults\" sets \"/\", \"?\", \"#\" or \"exclude\": every component that leaves the key out inherits it."),
        LintCode(code: "wrong-type", severity: .error, summary: "A value of the wrong JSON type; it is ignored."),
        LintCode(code: "exclude-not-boolean", severity: .error, summary: "\"exclude\" is not a Boolean, so the rule opens the app instead of blocking."),
        LintCode(code: "query-value-not-string", severity: .error, summary: "A query dictionary value is not a string: Apple ignores the whole dictionary."),
        LintCode(code: "legacy-details-dictionary", severity: .warning, summary: "\"details\" written as the obsolete dictionary keyed by app ID."),
        LintCode(code: "missing-details", severity: .error, summary: "\"applinks\" has no \"details\"."),
        LintCode(code: "empty-details", severity: .error, summary: "\"details\" is empty: no app is associated for universal links."),
        LintCode(code: "apps-not-empty", severity: .warning, summary: "The legacy \"applinks.apps\" array is not empty."),
        LintCode(code: "missing-apps", severity: .error, summary: "A webcredentials/appclips/… service has no \"apps\" array."),
        LintCode(code: "empty-apps", severity: .warning, summary: "A service's \"apps\" array is empty."),
        LintCode(code: "detail-without-app-id", severity: .error, summary: "A detail with neither \"appIDs\" nor \"appID\"."),
        LintCode(code: "empty-app-ids", severity: .error, summary: "\"appIDs\" is an empty array (it still wins over \"appID\")."),
        LintCode(code: "app-id-and-app-ids", severity: .warning, summary: "A detail mixes \"appID\" and \"appIDs\"; \"appIDs\" wins."),
        LintCode(code: "app-id-placeholder", severity: .error, summary: "An app ID that is a template placeholder (YOUR_TEAM_ID, TEAM_ID., ${…})."),
        LintCode(code: "app-id-missing-prefix", severity: .error, summary: "An app ID that is a bare bundle ID without the 10-character prefix."),
        LintCode(code: "app-id-invalid", severity: .error, summary: "An app ID not shaped PREFIX.bundle.id (10 upper-case letters/digits, a dot, a bundle ID)."),
        LintCode(code: "app-id-numeric-prefix", severity: .warning, summary: "An app ID prefix of ten digits (looks like an App Store ID, not a Team ID)."),
        LintCode(code: "duplicate-app-id", severity: .warning, summary: "An app ID listed again; the later listing decides nothing or little."),
        LintCode(code: "detail-without-rules", severity: .error, summary: "A detail with neither \"components\" nor \"paths\": it matches nothing."),
        LintCode(code: "empty-components", severity: .error, summary: "\"components\" is empty: the detail matches nothing (and \"paths\" is ignored)."),
        LintCode(code: "empty-paths", severity: .warning, summary: "\"paths\" is empty (and there are no components)."),
        LintCode(code: "paths-and-components", severity: .warning, summary: "A detail has both: iOS 13+ ignores \"paths\"."),
        LintCode(code: "mixed-formats", severity: .warning, summary: "A detail names its apps in one format and its rules in the other (\"appIDs\" with \"paths\", or \"appID\" with \"components\"): iOS 12 and earlier see no app or no rules."),
        LintCode(code: "empty-component", severity: .warning, summary: "A component with no \"/\", \"?\" or \"#\": it matches every URL."),
        LintCode(code: "unreachable-rule", severity: .warning, summary: "A component or path that can never decide: an earlier one matches everything it matches."),
        LintCode(code: "not-in-components", severity: .error, summary: "\"NOT \" inside a component pattern is literal text; use \"exclude\": true."),
        LintCode(code: "not-prefix-malformed", severity: .warning, summary: "A legacy path starting with a miscased or unspaced NOT."),
        LintCode(code: "fragment-in-path", severity: .error, summary: "A '#' inside a path pattern: the path never contains the fragment."),
        LintCode(code: "query-in-path", severity: .warning, summary: "A '?' in a path pattern used like a query separator; it matches one character."),
        LintCode(code: "path-without-leading-slash", severity: .warning, summary: "A path pattern that does not start with '/' or a wildcard."),
        LintCode(code: "non-ascii-pattern", severity: .warning, summary: "Non-ASCII text in a percent-encoded pattern never matches."),
        LintCode(code: "undefined-variable", severity: .error, summary: "A $(name) reference to a variable that is neither defined nor built in."),
        LintCode(code: "unterminated-variable", severity: .error, summary: "A \"$(\" without its closing parenthesis."),
        LintCode(code: "pattern-too-complex", severity: .error, summary: "A pattern (or the file's patterns together) needing more automaton states than aasa-fetch builds: it never matches in `match`."),
        LintCode(code: "variable-name-invalid", severity: .error, summary: "A substitution variable name that is empty or contains $, ( or )."),
        LintCode(code: "variable-in-value", severity: .error, summary: "A substitution variable value that references another variable."),
        LintCode(code: "variable-shadows-builtin", severity: .warning, summary: "A custom variable named like a built-in one."),
        LintCode(code: "variable-empty", severity: .warning, summary: "A substitution variable with no values: patterns using it never match."),
        LintCode(code: "variable-unused", severity: .info, summary: "A substitution variable no component uses."),
    ]

    /// The built-in substitution variables.
    public static let builtInVariables: Set<String> = ["alpha", "upper", "lower", "alnum", "digit", "xdigit", "region", "lang"]

    /// The `too-large` finding for a file of `size` bytes (`nil`: more than `limit`, size unknown).
    public static func tooLargeFinding(size: Int?, limit: Int) -> Finding {
        let what = size.map { "the file is \($0) bytes, over the \(limit)-byte limit" }
            ?? "the file is larger than the \(limit)-byte limit (reading stopped there)"
        return .error(
            "too-large", "\(what); devices and Apple's CDN refuse it",
            fix: "Shrink the file: merge app IDs into one detail's \"appIDs\", use wildcards and substitution variables.")
    }

    /// Lints raw bytes. A file over the size limit gets `too-large` alone: it is not parsed.
    public static func lint(_ bytes: [UInt8], options: LintOptions = .init()) -> [Finding] {
        // A signed file is linted by its content, as fetch reads it (it was invalid-json at 1:2).
        switch CMSUnwrapper.body(bytes) {
        case .plain:
            break
        case .signed(let content):
            return [CMSUnwrapper.signedFinding(size: bytes.count, content: content.count, location: nil)] + lint(content, options: options)
        case .unusable:
            return [.error("invalid-json", CMSUnwrapper.unusableReason, fix: "Serve the plain JSON file.")]
        }
        var sizeFindings: [Finding] = []
        let limit = max(1, options.maxSize)
        if bytes.count > limit {
            return [tooLargeFinding(size: bytes.count, limit: limit)]
        } else if bytes.count * 10 >= limit * 9 {
            sizeFindings.append(
                .warning(
                    "size-near-limit", "the file is \(bytes.count) bytes, \(bytes.count * 100 / limit) % of the \(limit)-byte limit",
                    fix: "Leave room: merge details that share rules and use wildcards or substitution variables."))
        }
        let json: JSONDocument
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            return sizeFindings + [AASADecoder.invalidJSONFinding(error)]
        }
        var linter = Linter(root: json.root)
        linter.structure(json.root)
        let decoded = AASADecoder.decode(json)
        var findings = decoded.findings
        if let document = decoded.document {
            linter.semantics(document)
        }
        findings += FindingLocator.locate(linter.findings, in: json.root)
        let ordered = findings.enumerated()
            .map { (offset: FindingLocator.offset(of: $0.element, in: json.root), index: $0.offset, finding: $0.element) }
            .sorted { ($0.offset, $0.index) < ($1.offset, $1.index) }
        return sizeFindings + ordered.map(\.finding)
    }
}

/// The linter's working state.
struct Linter {
    let root: JSONValue
    var findings: [Finding] = []
    /// Automaton states the patterns checked so far need, against the matcher's per-file budget.
    var patternStates = 0
    var reportedFileStates = false
    /// Caches that keep hostile files linear (see their users).
    var decidesEveryURLCache: [Int: Bool] = [:]
    var variableSuggestions: [String: String?] = [:]
    var variableCandidates: [String]?

    static let applinksKeys = ["apps", "details", "defaults", "substitutionVariables"]
    static let detailKeys = ["appID", "appIDs", "paths", "components", "defaults"]
    static let componentKeys = ["/", "?", "#", "exclude", "comment", "caseSensitive", "percentEncoded"]
    /// A `defaults` object takes every component key (`comment` included, which has no effect).
    static let defaultsKeys = componentKeys
    static let serviceKeys = ["apps"]

    init(root: JSONValue) {
        self.root = root
    }

    mutating func add(_ code: String, _ severity: Severity, _ message: String, at location: String?, fix: String?) {
        findings.append(Finding(code: code, severity: severity, message: message, location: location, fix: fix))
    }

    // MARK: Structure: duplicate and unknown keys

    mutating func structure(_ value: JSONValue) {
        duplicateKeys(value, pointer: "")
        guard value.objectMembers != nil else { return }
        for member in value.uniqueMembers {
            let pointer = JSONPointer.appending("", member.key)
            switch Service(name: member.key) {
            case .applinks:
                applinksKeys(member.value, pointer: pointer)
            case .unknown:
                break  // reported as unknown-service by the decoder
            default:
                unknownKeys(member.value, pointer: pointer, known: Self.serviceKeys, container: "\"\(member.key)\"")
            }
        }
    }

    mutating func duplicateKeys(_ value: JSONValue, pointer: String) {
        switch value.kind {
        case .object(let members):
            guard value.hasDuplicateKeys else {
                for member in members {
                    duplicateKeys(member.value, pointer: JSONPointer.appending(pointer, member.key))
                }
                return
            }
            var seen: [String: JSONPosition] = [:]
            for member in members {
                if let first = seen[member.key] {
                    add(
                        "duplicate-key",
                        .warning,
                        "key \"\(member.key)\" appears again (first at line \(first.line), column \(first.column)); only this last one counts",
                        at: JSONPointer.appending(pointer, member.key),
                        fix: "Keep one \"\(member.key)\" and merge the values.")
                } else {
                    seen[member.key] = member.keyPosition
                }
            }
            for member in value.uniqueMembers {
                duplicateKeys(member.value, pointer: JSONPointer.appending(pointer, member.key))
            }
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                duplicateKeys(element, pointer: JSONPointer.appending(pointer, i))
            }
        default:
            break
        }
    }

    mutating func unknownKeys(_ value: JSONValue, pointer: String, known: [String], container: String) {
        for member in value.uniqueMembers where !known.contains(member.key) {
            let keyPointer = JSONPointer.appending(pointer, member.key)
            let suggestion = KeySuggestion.suggest(member.key, among: known)
            var message = "unknown key \"\(member.key)\" in \(container); it is ignored"
            if let s = suggestion { message += " (did you mean \"\(s)\"?)" }
            add(
                "unknown-key", .warning, message, at: keyPointer,
                fix: suggestion.map { "Rename \"\(member.key)\" to \"\($0)\" (keys are case-sensitive)." }
                    ?? "Remove it; known keys here: \(known.joined(separator: ", ")).")
        }
    }

    mutating func applinksKeys(_ applinks: JSONValue, pointer: String) {
        guard applinks.objectMembers != nil else { return }
        unknownKeys(applinks, pointer: pointer, known: Self.applinksKeys, container: "\"applinks\"")
        if let defaults = applinks.member("defaults"), defaults.value.objectMembers != nil {
            unknownKeys(
                defaults.value, pointer: JSONPointer.appending(pointer, "defaults"), known: Self.defaultsKeys,
                container: "\"defaults\"")
        }
        guard let details = applinks.member("details") else { return }
        let dPointer = JSONPointer.appending(pointer, "details")
        switch details.value.kind {
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                detailKeys(element, pointer: JSONPointer.appending(dPointer, i))
            }
        case .object:
            for member in details.value.uniqueMembers {
                let memberPointer = JSONPointer.appending(dPointer, member.key)
                // In the dictionary form the key is the app ID: an app ID inside is never read.
                for key in ["appIDs", "appID"] where member.value.member(key) != nil {
                    add(
                        "unknown-key", .warning,
                        "\"\(key)\" inside a detail of the dictionary form is ignored: the detail's key \"\(member.key)\" is its app ID",
                        at: JSONPointer.appending(memberPointer, key),
                        fix: "Write \"details\" as an array of objects with \"appIDs\" and \"components\", or make the key the app ID you mean.")
                }
                detailKeys(member.value, pointer: memberPointer)
            }
        default:
            break
        }
    }

    mutating func detailKeys(_ detail: JSONValue, pointer: String) {
        guard detail.objectMembers != nil else { return }
        unknownKeys(detail, pointer: pointer, known: Self.detailKeys, container: "a detail")
        if let defaults = detail.member("defaults"), defaults.value.objectMembers != nil {
            unknownKeys(
                defaults.value, pointer: JSONPointer.appending(pointer, "defaults"), known: Self.defaultsKeys,
                container: "\"defaults\"")
        }
        if let components = detail.member("components"), let elements = components.value.arrayValue {
            let cPointer = JSONPointer.appending(pointer, "components")
            for (i, element) in elements.enumerated() where element.objectMembers != nil {
                unknownKeys(element, pointer: JSONPointer.appending(cPointer, i), known: Self.componentKeys, container: "a component")
            }
        }
    }

    // MARK: Semantics

    mutating func semantics(_ document: AASADocument) {
        if let applinks = document.applinks {
            appLinks(applinks)
        }
        for service in document.services where service != .applinks && service.isKnown {
            let pointer = JSONPointer.appending("", service.name)
            guard let object = root.value(at: pointer), object.objectMembers != nil else { continue }
            guard let apps = object.member("apps") else {
                add(
                    "missing-apps", .error, "\"\(service.name)\" has no \"apps\" array, so it associates no app", at: pointer,
                    fix: "Add \"apps\": [\"ABCDE12345.com.example.app\"].")
                continue
            }
            guard let elements = apps.value.arrayValue else { continue }
            let appsPointer = JSONPointer.appending(pointer, "apps")
            if elements.isEmpty {
                add(
                    "empty-apps", .warning, "\"\(service.name).apps\" is empty, so the service associates no app", at: appsPointer,
                    fix: "List the app IDs, or remove the service.")
            }
            var seen: [String: String] = [:]
            for (i, element) in elements.enumerated() {
                guard let id = element.stringValue else { continue }
                let p = JSONPointer.appending(appsPointer, i)
                checkAppID(id, at: p)
                if let first = seen[id] {
                    add(
                        "duplicate-app-id", .warning, "app ID \"\(id)\" is listed twice in \"\(service.name).apps\" (first at \(first))",
                        at: p, fix: "Remove the repeated app ID.")
                } else {
                    seen[id] = p
                }
            }
        }
    }

    mutating func appLinks(_ applinks: AppLinks) {
        let pointer = "/applinks"
        if let legacy = applinks.legacyApps, !legacy.isEmpty {
            add(
                "apps-not-empty", .warning,
                "the legacy \"apps\" array must be empty; app IDs belong in \"details\" (\(legacy.count) listed here are not associated)",
                at: pointer + "/apps", fix: "Write \"apps\": [] (or drop it when targeting iOS 13 and later) and list the apps in \"details\".")
        }
        let json = root.value(at: pointer)
        if json?.member("details") == nil {
            add(
                "missing-details", .error, "\"applinks\" has no \"details\", so no app is associated for universal links", at: pointer,
                fix: "Add \"details\": [{\"appIDs\": [\"ABCDE12345.com.example.app\"], \"components\": [{\"/\": \"/*\"}]}].")
        } else if let d = json?.member("details"), d.value.arrayValue?.isEmpty ?? (d.value.objectMembers?.isEmpty ?? false) {
            add(
                "empty-details", .error, "\"details\" is empty, so no app is associated for universal links", at: pointer + "/details",
                fix: "Add a detail with \"appIDs\" and \"components\", or remove \"applinks\".")
        }
        let usedVariables = variables(applinks)
        if let defaults = applinks.defaults {
            defaultsKeys(defaults, level: .applinks, pointer: pointer + "/defaults", details: applinks.details, applinks: applinks)
        }
        var firstListing: [String: (detail: Int, pointer: String)] = [:]
        for (index, detail) in applinks.details.enumerated() {
            let detailJSON = root.value(at: detail.location)
            appIDs(detail, json: detailJSON, index: index, in: applinks, firstListing: &firstListing)
            if let defaults = detail.defaults {
                defaultsKeys(defaults, level: .detail, pointer: JSONPointer.appending(detail.location, "defaults"), details: [detail], applinks: applinks)
            }
            rules(detail, json: detailJSON, applinks: applinks)
        }
        for name in applinks.substitutionVariables.keys.sorted() where !usedVariables.contains(name) {
            add(
                "variable-unused", .info, "substitution variable \"\(name)\" is not used by any component or legacy path",
                at: pointer + "/substitutionVariables/" + JSONPointer.escape(name), fix: "Remove it, or reference it as $(\(name)).")
        }
    }

    // MARK: Defaults

    /// A note for each of `/`, `?`, `#` and `exclude` a `defaults` object sets (legal, but every
    /// component that leaves the key out inherits it), and the checks of its patterns.
    mutating func defaultsKeys(
        _ defaults: ComponentDefaults, level: DefaultsLevel, pointer: String, details: [AppLinksDetail], applinks: AppLinks
    ) {
        // How many of the components in reach take each key from this level.
        var inheriting: [ComponentKey: Int] = [:]
        var total = 0
        for detail in details {
            for resolved in applinks.resolvedComponents(of: detail) {
                total += 1
                for key in resolved.inherited where key.level == level { inheriting[key.key, default: 0] += 1 }
            }
        }
        let scope = level == .applinks ? "in the file" : "of this detail"
        func note(_ key: ComponentKey, _ effect: String) {
            let count = inheriting[key, default: 0]
            add(
                "defaults-inherited-key", .info,
                "\"\(key.rawValue)\" in \(level.displayName) applies to every component that leaves it out (\(count) of \(total) components \(scope)): \(effect)",
                at: JSONPointer.appending(pointer, key.rawValue),
                fix: "Keep it if that is intended; a component sets its own \"\(key.rawValue)\" to override it, or write the key into the components that need it.")
        }
        if let path = defaults.path { note(.path, "they match only paths matching \(Canonical.quote(path))") }
        if let query = defaults.query {
            let effect = query == .ignored
                ? "they match any query (the dictionary is ignored)"
                : "they need the query to match \(RuleText.query(query))"
            note(.query, effect)
        }
        if let fragment = defaults.fragment { note(.fragment, "they need the fragment to match \(Canonical.quote(fragment))") }
        if let exclude = defaults.exclude {
            note(.exclude, exclude ? "they block the URLs they match instead of opening the app" : "they open the app for the URLs they match")
        }
        let percentEncoded: Bool = switch level {
        case .applinks: defaults.percentEncoded ?? true
        case .detail: defaults.percentEncoded ?? applinks.defaults?.percentEncoded ?? true
        }
        let written = ComponentRule(path: defaults.path, query: defaults.query, fragment: defaults.fragment, location: pointer)
        for pattern in Self.patterns(of: written) {
            checkPattern(pattern, percentEncoded: percentEncoded, variables: applinks.substitutionVariables)
        }
    }

    /// Checks the variables' definitions; returns the names used by component patterns.
    mutating func variables(_ applinks: AppLinks) -> Set<String> {
        let base = "/applinks/substitutionVariables"
        for name in applinks.substitutionVariables.keys.sorted() {
            let p = JSONPointer.appending(base, name)
            if name.isEmpty || name.contains("$") || name.contains("(") || name.contains(")") {
                add(
                    "variable-name-invalid", .error,
                    "substitution variable name \"\(name)\" is \(name.isEmpty ? "empty" : "invalid: names cannot contain $, ( or )")",
                    at: p, fix: "Rename the variable using letters, digits and underscores.")
            }
            if AASALinter.builtInVariables.contains(name) {
                add(
                    "variable-shadows-builtin", .warning, "\"\(name)\" redefines a built-in substitution variable; which one devices use is undocumented",
                    at: p, fix: "Give the variable another name.")
            }
            let values = applinks.substitutionVariables[name] ?? []
            if values.isEmpty {
                add(
                    "variable-empty", .warning, "substitution variable \"\(name)\" has no values, so any pattern using it never matches",
                    at: p, fix: "List at least one value.")
            }
            for (i, value) in values.enumerated() where value.contains("$(") {
                add(
                    "variable-in-value", .error, "the value \"\(value)\" of \"\(name)\" references another variable; values cannot contain substitution variables",
                    at: JSONPointer.appending(p, i), fix: "Write the values out in full.")
            }
        }
        var used = Set<String>()
        // Patterns written in components and in defaults (from where components inherit them).
        let defaultsPatterns = ([applinks.defaults] + applinks.details.map(\.defaults)).compactMap { $0 }.map {
            ComponentRule(path: $0.path, query: $0.query, fragment: $0.fragment)
        }
        for rule in applinks.details.flatMap({ $0.components ?? [] }) + defaultsPatterns {
            for pattern in Self.patterns(of: rule) {
                for reference in Self.variableReferences(pattern.text) {
                    if case .name(let n) = reference { used.insert(n) }
                }
            }
        }
        // Legacy paths, where they decide (a detail without components).
        for path in applinks.details.filter({ $0.components == nil }).flatMap({ $0.paths ?? [] }) {
            for reference in Self.variableReferences(path.hasPrefix("NOT ") ? String(path.dropFirst(4)) : path) {
                if case .name(let n) = reference { used.insert(n) }
            }
        }
        return used
    }

    // MARK: App IDs

    mutating func appIDs(
        _ detail: AppLinksDetail, json: JSONValue?, index: Int, in applinks: AppLinks,
        firstListing: inout [String: (detail: Int, pointer: String)]
    ) {
        var listings: [(id: String, pointer: String)] = []
        if applinks.detailsIsDictionary {
            listings = detail.appIDs.map { ($0, detail.location) }
        } else {
            let appIDsMember = json?.member("appIDs")
            let appIDMember = json?.member("appID")
            if let ids = appIDsMember?.value.arrayValue {
                let p = JSONPointer.appending(detail.location, "appIDs")
                for (i, element) in ids.enumerated() {
                    if let s = element.stringValue { listings.append((s, JSONPointer.appending(p, i))) }
                }
                if ids.isEmpty {
                    add(
                        "empty-app-ids", .error,
                        "\"appIDs\" is empty, so this detail applies to no app"
                            + (appIDMember != nil ? " (and it still wins over \"appID\")" : ""),
                        at: p, fix: "List the app IDs in \"appIDs\".")
                }
                if let single = appIDMember {
                    let id = single.value.stringValue ?? ""
                    let lost = !ids.contains { $0.stringValue == id }
                    add(
                        "app-id-and-app-ids", .warning,
                        "the detail has both \"appID\" and \"appIDs\"; \"appIDs\" wins and \"appID\" is ignored"
                            + (lost && !id.isEmpty ? ", so \"\(id)\" is not associated by this detail" : ""),
                        at: JSONPointer.appending(detail.location, "appID"),
                        fix: lost ? "Move \"\(id)\" into \"appIDs\" and remove \"appID\"." : "Remove \"appID\"; keep \"appIDs\".")
                }
            } else if let single = appIDMember, let s = single.value.stringValue {
                listings.append((s, JSONPointer.appending(detail.location, "appID")))
            } else if appIDsMember == nil && appIDMember == nil {
                add(
                    "detail-without-app-id", .error, "the detail has neither \"appIDs\" nor \"appID\", so it applies to no app",
                    at: detail.location, fix: "Add \"appIDs\": [\"ABCDE12345.com.example.app\"].")
            }
        }
        var seenHere = Set<String>()
        for (id, pointer) in listings {
            checkAppID(id, at: pointer)
            if !seenHere.insert(id).inserted {
                add(
                    "duplicate-app-id", .warning, "app ID \"\(id)\" is listed twice in the same detail", at: pointer,
                    fix: "Remove the repeated app ID.")
                continue
            }
            if let first = firstListing[id] {
                let earlier = applinks.details[first.detail]
                // Once per earlier detail: 2,000 details listing one app re-read its rules each time
                // (a 131 KB file took 82 s, and diagnose lints what a server sends).
                let decidesAll = decidesEveryURLCache[first.detail] ?? Self.decidesEveryURL(earlier, applinks: applinks)
                decidesEveryURLCache[first.detail] = decidesAll
                add(
                    "duplicate-app-id", .warning,
                    "app ID \"\(id)\" was already listed at \(first.pointer); "
                        + (decidesAll
                            ? "that detail decides every URL for it, so this detail never applies to it"
                            : "this detail applies to it only for URLs the earlier one does not decide"),
                    at: pointer, fix: "List each app in one detail and merge the rules in the order they should apply.")
            } else {
                firstListing[id] = (index, pointer)
            }
        }
    }

    /// Upper-case fragments that mark an app ID as a template placeholder wherever they occur
    /// (none can be part of a real app ID).
    static let placeholderMarkers: [(text: String, bytes: [UInt8])] = [
        "TEAM_ID", "TEAM ID", "TEAM-ID", "YOUR_", "BUNDLE_ID", "BUNDLE IDENTIFIER", "${", "$(", "{{", "<", ">", "%",
    ].map { ($0, Array($0.utf8)) }
    /// Upper-case words that mark an app ID as a placeholder only as its whole prefix (the Team ID's
    /// place: `TEAMID.com.example.app`, `XXXXXXXXXX.…`).
    static let placeholderPrefixes: Set<String> = ["TEAMID", "TODO", "FIXME", "PLACEHOLDER", "PREFIX", "XXXXXXXXXX", "YOURTEAMID", "APPIDPREFIX"]
    /// Upper-case words that mark an app ID as a placeholder only as a whole segment of its bundle
    /// ID (`com.yourcompany.yourapp`); `todo` or `todolist` are apps' names too.
    static let placeholderSegments: Set<String> = ["YOURAPP", "YOURCOMPANY", "YOURAPPNAME", "PLACEHOLDER", "BUNDLEID"]

    /// The placeholder marker `upper` (an app ID in upper case) holds, if any.
    static func placeholder(in upper: [UInt8]) -> String? {
        if let marker = placeholderMarkers.first(where: { contains(upper, $0.bytes) }) { return marker.text }
        let segments = upper.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        if let prefix = segments.first, placeholderPrefixes.contains(prefix) { return prefix }
        return segments.dropFirst().first { placeholderSegments.contains($0) }
    }

    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        outer: for start in 0...(haystack.count - needle.count) {
            for k in 0..<needle.count where haystack[start + k] != needle[k] { continue outer }
            return true
        }
        return false
    }

    /// Checks the shape `PREFIX.bundle.id` (prefix: 10 upper-case letters or digits).
    mutating func checkAppID(_ id: String, at pointer: String) {
        let upper = id.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
        if let marker = Self.placeholder(in: upper) {
            add(
                "app-id-placeholder", .error, "app ID \"\(id)\" is a template placeholder (contains \"\(marker)\"), not a real app ID",
                at: pointer, fix: "Replace it with the app's ID: its 10-character App ID prefix (Team ID), a dot and its bundle ID.")
            return
        }
        let fix = "Write the app ID as PREFIX.bundle.id, e.g. ABCDE12345.com.example.app (prefix from the app's application-identifier entitlement)."
        guard !id.isEmpty else {
            add("app-id-invalid", .error, "empty app ID", at: pointer, fix: fix)
            return
        }
        let scalars = Array(id.unicodeScalars)
        if scalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }) {
            add("app-id-invalid", .error, "app ID \"\(id)\" contains spaces, control or non-ASCII characters", at: pointer, fix: fix)
            return
        }
        let parts = id.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let prefix = parts[0]
        let bundle = parts.dropFirst().joined(separator: ".")
        let isAlnum: (Unicode.Scalar) -> Bool = { ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
        let prefixScalars = Array(prefix.unicodeScalars)
        if prefixScalars.count != 10 || !prefixScalars.allSatisfy(isAlnum) {
            let looksLikeBundle = parts.count >= 2 && !prefix.isEmpty && prefixScalars.allSatisfy { ("a"..."z").contains($0) }
            if looksLikeBundle {
                add(
                    "app-id-missing-prefix", .error, "app ID \"\(id)\" is a bare bundle ID: the 10-character App ID prefix (Team ID) is missing",
                    at: pointer, fix: "Write it as PREFIX.\(id), e.g. ABCDE12345.\(id).")
            } else {
                add(
                    "app-id-invalid", .error,
                    "app ID \"\(id)\" does not start with a 10-character App ID prefix (found \"\(prefix)\", \(prefixScalars.count) characters)",
                    at: pointer, fix: fix)
            }
            return
        }
        if prefixScalars.contains(where: { ("a"..."z").contains($0) }) {
            add("app-id-invalid", .error, "app ID prefix \"\(prefix)\" has lower-case letters; App ID prefixes are upper-case", at: pointer, fix: fix)
            return
        }
        let bundleSegments = bundle.split(separator: ".", omittingEmptySubsequences: false)
        let bundleOK = parts.count >= 2 && !bundleSegments.contains { $0.isEmpty }
            && bundle.unicodeScalars.allSatisfy { isAlnum($0) || $0 == "-" || $0 == "." }
        if !bundleOK {
            add(
                "app-id-invalid", .error,
                parts.count < 2
                    ? "app ID \"\(id)\" has no bundle ID after the prefix"
                    : "app ID \"\(id)\" has an invalid bundle ID \"\(bundle)\" (empty segment or character other than letters, digits, '-', '.')",
                at: pointer, fix: fix)
            return
        }
        if prefixScalars.allSatisfy({ ("0"..."9").contains($0) }) {
            add(
                "app-id-numeric-prefix", .warning,
                "app ID prefix \"\(prefix)\" is all digits; App ID prefixes (Team IDs) mix letters and digits — this looks like an App Store ID",
                at: pointer, fix: "Check the prefix against the app's application-identifier entitlement.")
        }
    }

    // MARK: Rules

    mutating func rules(_ detail: AppLinksDetail, json: JSONValue?, applinks: AppLinks) {
        let hasPathsKey = json?.member("paths") != nil
        let hasComponentsKey = json?.member("components") != nil
        // Legacy and modern keys mixed (TN3155: do not): iOS 12 and earlier read "appID" and
        // "paths" only, iOS 13 and later both forms. (Both app ID keys, or both rule keys, are
        // `app-id-and-app-ids` and `paths-and-components`.)
        if !applinks.detailsIsDictionary, let json {
            let hasAppIDs = json.member("appIDs") != nil
            let hasAppID = json.member("appID") != nil
            if hasAppIDs && !hasAppID && hasPathsKey && !hasComponentsKey {
                add(
                    "mixed-formats", .warning,
                    "the detail names its apps with \"appIDs\" (iOS 13 and later) but its rules with \"paths\" (the iOS 12 form): iOS 12 and earlier find no app ID in it",
                    at: JSONPointer.appending(detail.location, "appIDs"),
                    fix: "Write the rules as \"components\" (iOS 13 and later), or add \"appID\" for iOS 12.")
            } else if hasAppID && !hasAppIDs && hasComponentsKey && !hasPathsKey {
                add(
                    "mixed-formats", .warning,
                    "the detail names its app with \"appID\" (the iOS 12 form) but its rules with \"components\" (iOS 13 and later): iOS 12 and earlier find no rules in it",
                    at: JSONPointer.appending(detail.location, "appID"),
                    fix: "Name the apps with \"appIDs\", or add \"paths\" for iOS 12.")
            }
        }
        if let components = detail.components {
            if components.isEmpty, json?.member("components")?.value.arrayValue?.isEmpty ?? false {
                add(
                    "empty-components", .error,
                    "\"components\" is empty, so this detail matches no URL" + (hasPathsKey ? " (and its \"paths\" are ignored)" : ""),
                    at: JSONPointer.appending(detail.location, "components"), fix: "Add components such as {\"/\": \"/*\"}, or remove the key.")
            }
            if hasPathsKey {
                add(
                    "paths-and-components", .warning,
                    "the detail has both \"paths\" and \"components\": iOS 13 and later ignore \"paths\", older systems ignore \"components\"; keep them equivalent or drop \"paths\"",
                    at: JSONPointer.appending(detail.location, "paths"), fix: "Remove \"paths\" unless you support iOS 12 or earlier.")
            }
            componentRules(components, detail: detail, applinks: applinks)
        } else if !hasComponentsKey, detail.paths == nil, !hasPathsKey {
            add(
                "detail-without-rules", .error, "the detail has neither \"components\" nor \"paths\", so it matches no URL",
                at: detail.location, fix: "Add \"components\": [{\"/\": \"/*\"}] (or the patterns you want).")
        }
        if let paths = detail.paths {
            if paths.isEmpty, detail.components == nil, json?.member("paths")?.value.arrayValue?.isEmpty ?? false {
                add(
                    "empty-paths", .warning, "\"paths\" is empty, so this detail matches no URL",
                    at: JSONPointer.appending(detail.location, "paths"), fix: "List path patterns, or remove the detail.")
            }
            legacyPaths(detail, json: json, variables: applinks.substitutionVariables)
        }
    }

    struct Pattern {
        enum Part { case path, query, queryItem(String), fragment }
        var part: Part
        var text: String
        var pointer: String
    }

    static func patterns(of rule: ComponentRule) -> [Pattern] {
        var result: [Pattern] = []
        if let p = rule.path { result.append(Pattern(part: .path, text: p, pointer: JSONPointer.appending(rule.location, "/"))) }
        switch rule.query {
        case .string(let s):
            result.append(Pattern(part: .query, text: s, pointer: JSONPointer.appending(rule.location, "?")))
        case .items(let items):
            let q = JSONPointer.appending(rule.location, "?")
            for item in items {
                result.append(Pattern(part: .queryItem(item.name), text: item.pattern, pointer: JSONPointer.appending(q, item.name)))
            }
        case .ignored, nil:
            break
        }
        if let f = rule.fragment { result.append(Pattern(part: .fragment, text: f, pointer: JSONPointer.appending(rule.location, "#"))) }
        return result
    }

    static func isAllStars(_ s: String) -> Bool { !s.isEmpty && s.unicodeScalars.allSatisfy { $0 == "*" } }

    /// Whether a `/` pattern or legacy path matches every path as the matcher reads it: leading
    /// and trailing slashes do not count, so `/*` and `*/` are as much catch-alls as `*`.
    static func matchesEveryPath(_ s: String) -> Bool {
        !s.isEmpty && CompiledPattern(s, role: .path).matchesEverything
    }

    /// Whether a component matches every URL.
    static func isCatchAll(_ rule: ComponentRule) -> Bool {
        let pathAll = rule.path.map(matchesEveryPath) ?? true
        let fragmentAll = rule.fragment.map(isAllStars) ?? true
        let queryAll: Bool
        switch rule.query {
        case nil, .ignored: queryAll = true
        case .string(let s): queryAll = isAllStars(s)
        case .items(let items): queryAll = items.allSatisfy { isAllStars($0.pattern) }
        }
        return pathAll && fragmentAll && queryAll
    }

    /// Whether a detail reaches a decision for every URL (a catch-all rule, keys inherited from
    /// `defaults` included).
    static func decidesEveryURL(_ detail: AppLinksDetail, applinks: AppLinks) -> Bool {
        if detail.components != nil { return applinks.resolvedComponents(of: detail).contains { isCatchAll($0.rule) } }
        return (detail.paths ?? []).contains { matchesEveryPath($0.hasPrefix("NOT ") ? String($0.dropFirst(4)) : $0) }
    }

    mutating func componentRules(_ components: [ComponentRule], detail: AppLinksDetail, applinks: AppLinks) {
        var catchAll: String?
        var earlier: [ComponentRule: String] = [:]
        for written in components {
            // Judged as the matcher reads it: with the keys it inherits from defaults.
            let resolved = written.resolved(detailDefaults: detail.defaults, applinksDefaults: applinks.defaults)
            let rule = resolved.rule
            if rule.path == nil, rule.query == nil, rule.fragment == nil {
                add(
                    "empty-component", .warning,
                    "the component has no \"/\", \"?\" or \"#\" pattern (nor inherits one from defaults), so it matches every URL"
                        + (resolved.isExclusion ? " and blocks them all" : ""),
                    at: rule.location, fix: "Add the patterns it should match; write {\"/\": \"*\"} if a catch-all is intended.")
            }
            var key = rule
            key.location = ""
            key.comment = nil
            key.exclude = nil
            key.options = ComponentDefaults(caseSensitive: resolved.caseSensitive, percentEncoded: resolved.percentEncoded)
            if let c = catchAll {
                add(
                    "unreachable-rule", .warning, "this component can never decide: the component at \(c) matches every URL first",
                    at: rule.location, fix: "Move it before \(c), or remove it.")
            } else if let same = earlier[key] {
                add(
                    "unreachable-rule", .warning, "this component can never decide: the component at \(same) has the same patterns and comes first",
                    at: rule.location, fix: "Remove the repeated component.")
            }
            if earlier[key] == nil { earlier[key] = rule.location }
            if catchAll == nil, Self.isCatchAll(rule) { catchAll = rule.location }
            // Only the component's own patterns: inherited ones are checked once, where defaults set them.
            for pattern in Self.patterns(of: written) {
                checkPattern(pattern, percentEncoded: resolved.percentEncoded, variables: applinks.substitutionVariables)
            }
        }
    }

    mutating func checkPattern(_ pattern: Pattern, percentEncoded: Bool, variables: [String: [String]]) {
        let text = pattern.text
        if text.hasPrefix("NOT ") {
            add(
                "not-in-components", .error,
                "\"NOT \" is legacy \"paths\" syntax; in a component it is literal text, so this pattern never excludes anything",
                at: pattern.pointer, fix: "Remove \"NOT \" and add \"exclude\": true to the component.")
        }
        if case .path = pattern.part { pathChecks(text, pointer: pattern.pointer, legacy: false) }
        if percentEncoded, text.unicodeScalars.contains(where: { $0.value >= 0x80 }) {
            add(
                "non-ascii-pattern", .warning,
                "the pattern has non-ASCII characters but is matched percent-encoded (URLs are ASCII), so they never match",
                at: pattern.pointer, fix: "Percent-encode the characters, or add \"percentEncoded\": false.")
        }
        budgetAndVariables(text, role: { () -> PatternRole in if case .path = pattern.part { return .path } else { return .plain } }(), pointer: pattern.pointer,
                           variables: variables)
    }

    /// What every pattern is checked for, a component's or a legacy path's: its automaton
    /// states against the budget, and its variable references.
    mutating func budgetAndVariables(_ text: String, role: PatternRole, pointer: String, variables: [String: [String]]) {
        let states = CompiledPattern.automatonStates(text, role: role, variables: variables)
        patternStates += states
        if states > CompiledPattern.maxStates {
            add(
                "pattern-too-complex", .error,
                "the pattern needs more than \(CompiledPattern.maxStates) automaton states (each reference to a variable counts all its values), so aasa-fetch never matches it",
                at: pointer, fix: "Use fewer or shorter variable values, or fewer references to them in one pattern.")
        } else if patternStates > CompiledPattern.maxStatesPerFile, !reportedFileStates {
            reportedFileStates = true
            add(
                "pattern-too-complex", .error,
                "the file's patterns need more than \(CompiledPattern.maxStatesPerFile) automaton states together from this one on, so aasa-fetch does not match the patterns past that budget",
                at: pointer, fix: "Use fewer or shorter variable values, or fewer patterns with wildcards in the middle.")
        }
        for reference in Self.variableReferences(text) {
            switch reference {
            case .name(let name):
                if variables[name] == nil, !AASALinter.builtInVariables.contains(name) {
                    let suggestion = variableSuggestion(for: name, among: variables)
                    add(
                        "undefined-variable", .error,
                        "$(\(name)) is neither a substitution variable of this file nor a built-in one"
                            + (suggestion.map { " (did you mean $(\($0))?)" } ?? ""),
                        at: pointer,
                        fix: suggestion.map { "Write $(\($0))." }
                            ?? "Define \"\(name)\" in applinks.substitutionVariables, or use alpha, upper, lower, alnum, digit, xdigit, region or lang.")
                }
            case .unterminated:
                add(
                    "unterminated-variable", .error, "\"$(\" is not closed by \")\" in \"\(text)\"",
                    at: pointer, fix: "Close the variable reference: $(name).")
            }
        }
    }

    /// The suggestion for an undefined variable name, once per name, and for the first 64 names
    /// only: each compares the name with every variable of the file (many references to many
    /// names took minutes on a 124 KB file).
    mutating func variableSuggestion(for name: String, among variables: [String: [String]]) -> String? {
        if let cached = variableSuggestions[name] { return cached }
        guard variableSuggestions.count < 64 else { return nil }
        if variableCandidates == nil { variableCandidates = Array(variables.keys).sorted() + AASALinter.builtInVariables.sorted() }
        let suggestion = KeySuggestion.suggest(name, among: variableCandidates ?? [])
        variableSuggestions[name] = .some(suggestion)
        return suggestion
    }

    enum VariableReference: Equatable {
        case name(String)
        case unterminated
    }

    static func variableReferences(_ text: String) -> [VariableReference] {
        var result: [VariableReference] = []
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i + 1 < scalars.count {
            if scalars[i] == "$", scalars[i + 1] == "(" {
                guard let close = scalars[(i + 2)...].firstIndex(of: ")") else {
                    result.append(.unterminated)
                    break
                }
                var name = String.UnicodeScalarView()
                name.append(contentsOf: scalars[(i + 2)..<close])
                result.append(.name(String(name)))
                i = close + 1
            } else {
                i += 1
            }
        }
        return result
    }

    mutating func pathChecks(_ text: String, pointer: String, legacy: Bool) {
        let kind = legacy ? "legacy path" : "\"/\" path pattern"
        if text.utf8.contains(0x23) {
            add(
                "fragment-in-path", .error,
                "the \(kind) \"\(text)\" contains '#': the path a device matches never includes the fragment, so this never matches what it means",
                at: pointer,
                fix: legacy ? "Use components with a \"#\" key (iOS 13+): {\"#\": \"...\"}." : "Put the fragment pattern in the component's \"#\" key.")
        }
        let scalars = Array(text.unicodeScalars)
        var queryLike = false
        for (i, s) in scalars.enumerated() where s == "?" {
            let rest = scalars[(i + 1)...]
            if rest.contains("=") {
                queryLike = true
            } else if i > 0, i + 2 == scalars.count, scalars[i + 1] == "*", !"/*?".unicodeScalars.contains(scalars[i - 1]) {
                queryLike = true
            }
        }
        if queryLike {
            add(
                "query-in-path", .warning,
                "the \(kind) \"\(text)\" seems to use '?' as a query separator; in a pattern '?' matches exactly one path character and the query is never part of the path",
                at: pointer,
                fix: legacy ? "Legacy paths cannot match queries; use components with a \"?\" key." : "Match the query with the component's \"?\" key.")
        }
        if let first = scalars.first, first != "/", first != "*", first != "?", !text.hasPrefix("$(") {
            add(
                "path-without-leading-slash", .warning, "the \(kind) \"\(text)\" does not start with '/'; a URL path always does",
                at: pointer, fix: "Write \"/\(text)\".")
        }
    }

    mutating func legacyPaths(_ detail: AppLinksDetail, json: JSONValue?, variables: [String: [String]]) {
        guard let elements = json?.member("paths")?.value.arrayValue else { return }
        let base = JSONPointer.appending(detail.location, "paths")
        var catchAll: String?
        var earlier: [String: String] = [:]
        for (i, element) in elements.enumerated() {
            guard let raw = element.stringValue else { continue }
            let pointer = JSONPointer.appending(base, i)
            let negated = raw.hasPrefix("NOT ")
            let pattern = negated ? String(raw.dropFirst(4)) : raw
            if !negated, raw.uppercased().hasPrefix("NOT ") || raw.hasPrefix("NOT/") || raw.hasPrefix("NOT*") {
                add(
                    "not-prefix-malformed", .warning,
                    "\"\(raw)\" looks like an exclusion, but only \"NOT \" (upper case, one space) excludes; this is a literal pattern",
                    at: pointer, fix: "Write \"NOT \" followed by the pattern, e.g. \"NOT /private/*\".")
            }
            if let c = catchAll {
                add(
                    "unreachable-rule", .warning, "this path can never decide: the path at \(c) matches every URL first",
                    at: pointer, fix: "Move it before \(c), or remove it.")
            } else if let same = earlier[pattern] {
                add(
                    "unreachable-rule", .warning, "this path can never decide: the path at \(same) has the same pattern and comes first",
                    at: pointer, fix: "Remove the repeated path.")
            }
            if earlier[pattern] == nil { earlier[pattern] = pointer }
            if catchAll == nil, Self.matchesEveryPath(pattern) { catchAll = pointer }
            pathChecks(pattern, pointer: pointer, legacy: true)
            budgetAndVariables(pattern, role: .path, pointer: pointer, variables: variables)
            if pattern.unicodeScalars.contains(where: { $0.value >= 0x80 }) {
                add(
                    "non-ascii-pattern", .warning, "the legacy path has non-ASCII characters; paths are matched percent-encoded, so they never match",
                    at: pointer, fix: "Percent-encode the characters.")
            }
        }
    }
}
