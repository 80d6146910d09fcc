/// The outcome of decoding an association file.
public enum AASADecodeResult: Sendable {
    /// The file is an association file; `findings` are decode-time warnings and errors about
    /// fields that were dropped or read in a legacy form.
    case document(AASADocument, findings: [Finding])
    /// The bytes are not strict JSON (HTML pages, trailing commas, comments…).
    case invalidJSON(JSONSyntaxError, findings: [Finding])
    /// Valid JSON, but not an association file: the top level is not an object, or names none of
    /// the documented services.
    case notAnAssociationFile(reason: String, findings: [Finding])

    /// The document, when decoding succeeded.
    public var document: AASADocument? {
        if case .document(let document, _) = self { return document }
        return nil
    }

    /// The findings of any outcome. For ``invalidJSON(_:findings:)`` they include an
    /// `invalid-json` error located at `line:column`; for ``notAnAssociationFile(reason:findings:)``
    /// a `not-an-association-file` error.
    public var findings: [Finding] {
        switch self {
        case .document(_, let findings), .invalidJSON(_, let findings), .notAnAssociationFile(_, let findings):
            findings
        }
    }

    /// The failure code of the outcome: `ok`, `invalid-json` or `not-an-association-file`.
    public var code: String {
        switch self {
        case .document: "ok"
        case .invalidJSON: "invalid-json"
        case .notAnAssociationFile: "not-an-association-file"
        }
    }
}

/// Decodes association files into ``AASADocument``, tolerantly: every legacy form Apple ever
/// accepted is read, and a field of the wrong type is dropped with a finding instead of failing.
///
/// Decisions where Apple is silent:
/// - Duplicate keys: the last occurrence wins (as with Foundation's `JSONSerialization`).
/// - A wrongly typed `appIDs` (not an array) is treated as absent, so `appID` applies.
/// - A wrongly typed `?` (neither string nor object) is dropped (the rule then matches any query).
/// - A non-string element of `appIDs`, `paths`, `apps` or a substitution variable is dropped.
///
/// Decode-time finding codes: `bom`, `invalid-json`, `not-an-association-file`, `unknown-service`,
/// `legacy-details-dictionary`, `wrong-type`, `exclude-not-boolean`, `query-value-not-string`.
/// Findings are located by JSON pointer; their messages end with `(line L, column C)`.
public enum AASADecoder {
    /// Decodes raw bytes (a UTF-8 BOM is accepted with a `bom` warning).
    public static func decode(_ bytes: [UInt8]) -> AASADecodeResult {
        let parsed: JSONDocument
        do {
            parsed = try JSONParser.parse(bytes)
        } catch {
            return .invalidJSON(error, findings: [invalidJSONFinding(error)])
        }
        return decode(parsed)
    }

    /// Decodes an already parsed JSON document.
    public static func decode(_ json: JSONDocument) -> AASADecodeResult {
        var context = DecodeContext()
        if json.hadBOM {
            context.findings.append(
                .warning(
                    "bom", "the file starts with a UTF-8 byte order mark; strict JSON readers may reject it",
                    fix: "Save the file as UTF-8 without a BOM."))
        }
        let result = context.decodeRoot(json.root)
        let located = FindingLocator.locate(context.findings, in: json.root)
        switch result {
        case .success(let document):
            return .document(document, findings: located)
        case .failure(let reason):
            let finding = Finding.error(
                "not-an-association-file", reason, location: "",
                fix: "Serve a JSON object whose top-level keys are services such as \"applinks\" or \"webcredentials\".")
            return .notAnAssociationFile(reason: reason, findings: located + [finding])
        }
    }

    /// The `invalid-json` finding for a syntax error, located at `line:column`.
    public static func invalidJSONFinding(_ error: JSONSyntaxError) -> Finding {
        var message = "invalid JSON at line \(error.line), column \(error.column): \(error.message)"
        if !error.excerpt.isEmpty { message += " — near `\(error.excerpt)`" }
        return Finding(code: "invalid-json", severity: .error, message: message, location: "\(error.line):\(error.column)",
                       line: error.line, column: error.column, fix: fix(for: error.kind))
    }

    static func fix(for kind: JSONSyntaxError.Kind) -> String {
        switch kind {
        case .trailingComma: "Remove the comma after the last element."
        case .comment: "Remove the comment; JSON has no comments (use a component's \"comment\" key)."
        case .singleQuote: "Use double quotes for strings and keys."
        case .unquotedKey: "Put the key in double quotes."
        case .controlCharacter: "Escape control characters (\\n, \\t, \\u00XX) or close the string."
        case .invalidEscape: "Use only \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX escapes."
        case .loneSurrogate: "Write the character itself, or a complete surrogate pair."
        case .invalidNumber, .nonFiniteNumber: "Write a plain decimal number (no leading zeros, NaN or Infinity)."
        case .invalidLiteral: "Use the lower-case literals true, false and null."
        case .missingSeparator: "Separate members with ',' and keys from values with ':'."
        case .trailingGarbage: "Remove everything after the closing brace."
        case .emptyInput: "Serve the association file's JSON, not an empty body."
        case .invalidUTF8: "Save the file as UTF-8."
        case .tooDeep: "Flatten the structure; association files need only a few levels."
        case .unexpectedCharacter, .unexpectedEnd: "Serve the association file as plain JSON (not HTML, not a template)."
        }
    }
}

/// Appends `(line L, column C)` to findings whose location is a JSON pointer that resolves.
enum FindingLocator {
    static func locate(_ findings: [Finding], in root: JSONValue) -> [Finding] {
        findings.map { finding in
            guard let pointer = finding.location, pointer.hasPrefix("/"), let value = root.value(at: pointer) else {
                return finding
            }
            var copy = finding
            copy.message += " (line \(value.position.line), column \(value.position.column))"
            copy.line = value.position.line
            copy.column = value.position.column
            return copy
        }
    }

    /// The byte offset a finding points at, for ordering; file-level findings sort first.
    static func offset(of finding: Finding, in root: JSONValue) -> Int {
        guard let pointer = finding.location, pointer.hasPrefix("/"), let value = root.value(at: pointer) else {
            return -1
        }
        return value.position.offset
    }
}

/// Decoding state: the findings gathered so far.
struct DecodeContext {
    var findings: [Finding] = []

    enum RootResult {
        case success(AASADocument)
        case failure(String)
    }

    mutating func wrongType(_ pointer: String, _ what: String, expected: String, found value: JSONValue, fix: String? = nil) {
        findings.append(
            .error(
                "wrong-type", "\(what) must be \(expected), not \(article(value.typeName)); it is ignored",
                location: pointer, fix: fix ?? "Write \(what) as \(expected)."))
    }

    mutating func decodeRoot(_ root: JSONValue) -> RootResult {
        guard root.objectMembers != nil else {
            return .failure("the top level is \(article(root.typeName)), not an object of services")
        }
        var document = AASADocument()
        var knownCount = 0
        for member in root.uniqueMembers {
            let service = Service(name: member.key)
            let pointer = JSONPointer.appending("", member.key)
            document.services.append(service)
            if service.isKnown {
                knownCount += 1
            } else {
                let suggestion = KeySuggestion.suggest(member.key, among: Service.known.map(\.name))
                findings.append(
                    .warning(
                        "unknown-service",
                        "\"\(member.key)\" is not a documented service; devices ignore it"
                            + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? ""),
                        location: pointer,
                        fix: suggestion.map { "Rename the key to \"\($0)\"." }
                            ?? "Remove it, or use applinks, webcredentials, activitycontinuation, appclips or authsrv."))
                // Devices ignore it whatever it holds (`"comment": "managed by ops"`): no type to check.
                continue
            }
            if service == .applinks {
                guard member.value.objectMembers != nil else {
                    wrongType(pointer, "\"applinks\"", expected: "an object", found: member.value)
                    continue
                }
                document.applinks = decodeAppLinks(member.value, pointer: pointer)
            } else {
                guard member.value.objectMembers != nil else {
                    wrongType(pointer, "\"\(member.key)\"", expected: "an object with an \"apps\" array", found: member.value)
                    continue
                }
                if let apps = member.value.member("apps") {
                    document.serviceApps[service] = stringArray(
                        apps.value, pointer: JSONPointer.appending(pointer, "apps"), what: "\"\(member.key).apps\"")
                }
            }
        }
        guard knownCount > 0 else {
            if root.uniqueMembers.isEmpty {
                return .failure("the top-level object is empty: it names no service")
            }
            let names = root.uniqueMembers.prefix(5).map { "\"\($0.key)\"" }.joined(separator: ", ")
            return .failure("the top-level object names no documented service (found \(names))")
        }
        return .success(document)
    }

    /// An array of strings; other element types are dropped with a finding. A non-array yields `[]`.
    mutating func stringArray(_ value: JSONValue, pointer: String, what: String) -> [String] {
        guard let elements = value.arrayValue else {
            wrongType(pointer, what, expected: "an array of strings", found: value)
            return []
        }
        var result: [String] = []
        result.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() {
            if let s = element.stringValue {
                result.append(s)
            } else {
                wrongType(JSONPointer.appending(pointer, i), "each element of \(what)", expected: "a string", found: element)
            }
        }
        return result
    }

    mutating func decodeAppLinks(_ value: JSONValue, pointer: String) -> AppLinks {
        var applinks = AppLinks()
        if let apps = value.member("apps") {
            applinks.legacyApps = stringArray(apps.value, pointer: JSONPointer.appending(pointer, "apps"), what: "\"apps\"")
        }
        if let defaults = value.member("defaults") {
            applinks.defaults = decodeDefaults(defaults.value, pointer: JSONPointer.appending(pointer, "defaults"))
        }
        if let variables = value.member("substitutionVariables") {
            let vPointer = JSONPointer.appending(pointer, "substitutionVariables")
            if variables.value.objectMembers != nil {
                for member in variables.value.uniqueMembers {
                    let itemPointer = JSONPointer.appending(vPointer, member.key)
                    if member.value.arrayValue != nil {
                        applinks.substitutionVariables[member.key] = stringArray(
                            member.value, pointer: itemPointer, what: "substitution variable \"\(member.key)\"")
                    } else {
                        wrongType(itemPointer, "substitution variable \"\(member.key)\"", expected: "an array of strings", found: member.value)
                    }
                }
            } else {
                wrongType(vPointer, "\"substitutionVariables\"", expected: "an object of name → array of strings", found: variables.value)
            }
        }
        if let details = value.member("details") {
            let dPointer = JSONPointer.appending(pointer, "details")
            switch details.value.kind {
            case .array(let elements):
                for (i, element) in elements.enumerated() {
                    let itemPointer = JSONPointer.appending(dPointer, i)
                    guard element.objectMembers != nil else {
                        wrongType(itemPointer, "each element of \"details\"", expected: "an object", found: element)
                        continue
                    }
                    applinks.details.append(decodeDetail(element, pointer: itemPointer, dictionaryKey: nil))
                }
            case .object:
                applinks.detailsIsDictionary = true
                findings.append(
                    .warning(
                        "legacy-details-dictionary",
                        "\"details\" is the obsolete dictionary keyed by app ID (iOS 9 beta era); current systems expect an array",
                        location: dPointer,
                        fix: "Write \"details\": [{\"appIDs\": [\"<app ID>\"], \"components\": [...]}, ...]."))
                for member in details.value.uniqueMembers {
                    let itemPointer = JSONPointer.appending(dPointer, member.key)
                    guard member.value.objectMembers != nil else {
                        wrongType(itemPointer, "the value for app ID \"\(member.key)\"", expected: "an object", found: member.value)
                        continue
                    }
                    applinks.details.append(decodeDetail(member.value, pointer: itemPointer, dictionaryKey: member.key))
                }
            default:
                wrongType(dPointer, "\"details\"", expected: "an array of objects", found: details.value)
            }
        }
        return applinks
    }

    mutating func decodeDetail(_ value: JSONValue, pointer: String, dictionaryKey: String?) -> AppLinksDetail {
        var detail = AppLinksDetail(appIDs: [], location: pointer)
        if let key = dictionaryKey {
            detail.appIDs = [key]
        } else {
            var haveAppIDs = false
            if let appIDs = value.member("appIDs") {
                if appIDs.value.arrayValue != nil {
                    haveAppIDs = true
                    detail.appIDs = stringArray(appIDs.value, pointer: JSONPointer.appending(pointer, "appIDs"), what: "\"appIDs\"")
                } else {
                    wrongType(
                        JSONPointer.appending(pointer, "appIDs"), "\"appIDs\"", expected: "an array of strings", found: appIDs.value,
                        fix: "Write \"appIDs\": [\"ABCDE12345.com.example.app\"].")
                }
            }
            if !haveAppIDs, let appID = value.member("appID") {
                if let s = appID.value.stringValue {
                    detail.appIDs = [s]
                } else {
                    wrongType(JSONPointer.appending(pointer, "appID"), "\"appID\"", expected: "a string", found: appID.value)
                }
            }
        }
        if let paths = value.member("paths") {
            let pPointer = JSONPointer.appending(pointer, "paths")
            if paths.value.arrayValue != nil {
                detail.paths = stringArray(paths.value, pointer: pPointer, what: "\"paths\"")
            } else {
                wrongType(pPointer, "\"paths\"", expected: "an array of strings", found: paths.value)
            }
        }
        if let components = value.member("components") {
            let cPointer = JSONPointer.appending(pointer, "components")
            if let elements = components.value.arrayValue {
                var rules: [ComponentRule] = []
                for (i, element) in elements.enumerated() {
                    let itemPointer = JSONPointer.appending(cPointer, i)
                    guard element.objectMembers != nil else {
                        wrongType(itemPointer, "each element of \"components\"", expected: "an object", found: element)
                        continue
                    }
                    rules.append(decodeComponent(element, pointer: itemPointer))
                }
                detail.components = rules
            } else {
                wrongType(cPointer, "\"components\"", expected: "an array of objects", found: components.value)
            }
        }
        if let defaults = value.member("defaults") {
            detail.defaults = decodeDefaults(defaults.value, pointer: JSONPointer.appending(pointer, "defaults"))
        }
        return detail
    }

    /// A `defaults` object: any component key (`/`, `?`, `#`, `exclude`, `caseSensitive`,
    /// `percentEncoded`); other keys, `comment` included, are ignored.
    mutating func decodeDefaults(_ value: JSONValue, pointer: String) -> ComponentDefaults? {
        guard value.objectMembers != nil else {
            wrongType(pointer, "\"defaults\"", expected: "an object", found: value)
            return nil
        }
        let keys = decodeRuleKeys(value, pointer: pointer, inDefaults: true)
        var defaults = decodeOptions(value, pointer: pointer)
        defaults.path = keys.path
        defaults.query = keys.query
        defaults.fragment = keys.fragment
        defaults.exclude = keys.exclude
        return defaults
    }

    mutating func decodeOptions(_ value: JSONValue, pointer: String) -> ComponentDefaults {
        var options = ComponentDefaults()
        options.caseSensitive = bool(value, "caseSensitive", pointer: pointer)
        options.percentEncoded = bool(value, "percentEncoded", pointer: pointer)
        return options
    }

    mutating func bool(_ object: JSONValue, _ key: String, pointer: String) -> Bool? {
        guard let member = object.member(key) else { return nil }
        if let b = member.value.boolValue { return b }
        wrongType(
            JSONPointer.appending(pointer, key), "\"\(key)\"", expected: "true or false", found: member.value,
            fix: "Write \"\(key)\": true or \"\(key)\": false, without quotes.")
        return nil
    }

    /// The pattern keys and `exclude` of a component or a `defaults` object (`inDefaults` words
    /// the findings for what inherits them).
    mutating func decodeRuleKeys(
        _ value: JSONValue, pointer: String, inDefaults: Bool
    ) -> (path: String?, query: QueryPattern?, fragment: String?, exclude: Bool?) {
        var rule = ComponentRule(location: pointer)
        let subject = inDefaults ? "every component that inherits it" : "this component"
        rule.path = patternString(value, "/", pointer: pointer, what: "the \"/\" path pattern")
        rule.fragment = patternString(value, "#", pointer: pointer, what: "the \"#\" fragment pattern")
        if let query = value.member("?") {
            let qPointer = JSONPointer.appending(pointer, "?")
            switch query.value.kind {
            case .string(let s):
                rule.query = .string(s)
            case .object:
                var items: [QueryItemPattern] = []
                var ignored = false
                for member in query.value.uniqueMembers {
                    if let s = member.value.stringValue {
                        items.append(QueryItemPattern(name: member.key, pattern: s))
                    } else {
                        ignored = true
                        findings.append(
                            .error(
                                "query-value-not-string",
                                "query item \"\(member.key)\" has \(article(member.value.typeName)) value; Apple then ignores the whole \"?\" dictionary, so \(subject) matches any query",
                                location: JSONPointer.appending(qPointer, member.key),
                                fix: "Write the value as a string pattern, e.g. \"\(member.key)\": \"\(suggestedString(member.value))\"."))
                    }
                }
                rule.query = ignored ? .ignored : .items(items)
            default:
                wrongType(qPointer, "the \"?\" query pattern", expected: "a string or an object of name → pattern", found: query.value)
            }
        }
        if let exclude = value.member("exclude") {
            if let b = exclude.value.boolValue {
                rule.exclude = b
            } else {
                findings.append(
                    .error(
                        "exclude-not-boolean",
                        "\"exclude\" must be true or false, not \(article(exclude.value.typeName)); it is ignored, so \(subject) opens the app instead of blocking",
                        location: JSONPointer.appending(pointer, "exclude"),
                        fix: "Write \"exclude\": true without quotes."))
            }
        }
        return (rule.path, rule.query, rule.fragment, rule.exclude)
    }

    mutating func decodeComponent(_ value: JSONValue, pointer: String) -> ComponentRule {
        var rule = ComponentRule(location: pointer)
        let keys = decodeRuleKeys(value, pointer: pointer, inDefaults: false)
        rule.path = keys.path
        rule.query = keys.query
        rule.fragment = keys.fragment
        rule.exclude = keys.exclude
        if let comment = value.member("comment") {
            if let s = comment.value.stringValue {
                rule.comment = s
            } else {
                wrongType(JSONPointer.appending(pointer, "comment"), "\"comment\"", expected: "a string", found: comment.value)
            }
        }
        rule.options = decodeOptions(value, pointer: pointer)
        return rule
    }

    mutating func patternString(_ object: JSONValue, _ key: String, pointer: String, what: String) -> String? {
        guard let member = object.member(key) else { return nil }
        if let s = member.value.stringValue { return s }
        wrongType(JSONPointer.appending(pointer, key), what, expected: "a string", found: member.value)
        return nil
    }

    func suggestedString(_ value: JSONValue) -> String {
        switch value.kind {
        case .bool(let b): b ? "true" : "false"
        case .number(let n): n.text
        default: "*"
        }
    }
}

/// "an object", "a string".
func article(_ noun: String) -> String {
    guard let first = noun.unicodeScalars.first else { return noun }
    return ("aeiou".unicodeScalars.contains(first) ? "an " : "a ") + noun
}

/// Why bytes did not decode into an association file: `invalid-json` (with the position in the
/// message) or `not-an-association-file`.
public struct AASADecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `invalid-json` or `not-an-association-file`.
    public var code: String
    /// What is wrong, for people.
    public var message: String

    public var description: String { "\(code): \(message)" }
}

extension AASADecoder {
    /// Decodes bytes that must be an association file, for callers that only want the document.
    public static func decodeDocument(_ bytes: [UInt8]) throws(AASADecodeError) -> AASADocument {
        switch decode(bytes) {
        case .document(let document, _):
            return document
        case .invalidJSON(let error, _):
            throw AASADecodeError(code: "invalid-json", message: "line \(error.line), column \(error.column): \(error.message)")
        case .notAnAssociationFile(let reason, _):
            throw AASADecodeError(code: "not-an-association-file", message: reason)
        }
    }
}
