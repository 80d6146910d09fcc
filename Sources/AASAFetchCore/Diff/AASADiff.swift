/// One semantic difference between two association files.
///
/// JSON shape (every key present, `null` when it does not apply):
/// `{"kind": "rules-changed", "service": "applinks", "appID": "ABCDE12345.com.example.app",
///   "description": "…", "before": [{"position": 2, "component": {…}, "path": null}], "after": […]}`;
/// `before` and `after` are structured values (``ChangeValue``), not text.
public struct AASAChange: Sendable, Codable, Hashable {
    /// The stable kind code: `service-added`, `service-removed`, `app-added`, `app-removed`,
    /// `rules-changed`, `defaults-changed`, `variables-changed`.
    public var kind: String
    /// The service concerned.
    public var service: Service?
    /// The app ID concerned, when the change is about one app.
    public var appID: String?
    /// One line for people.
    public var description: String
    /// What was there before, when useful.
    public var before: ChangeValue?
    /// What is there now, when useful.
    public var after: ChangeValue?

    /// Creates a change.
    public init(kind: String, service: Service? = nil, appID: String? = nil, description: String,
                before: ChangeValue? = nil, after: ChangeValue? = nil) {
        self.kind = kind
        self.service = service
        self.appID = appID
        self.description = description
        self.before = before
        self.after = after
    }

    /// ``before`` as canonical text for people, one rule or value a line.
    public var beforeText: String? { before.map(text) }
    /// ``after`` as canonical text for people, one rule or value a line.
    public var afterText: String? { after.map(text) }

    private func text(_ value: ChangeValue) -> String {
        switch value {
        case .text(let text): text
        case .strings(let strings): kind == "variables-changed" ? Canonical.stringArray(strings) : strings.joined(separator: "\n")
        case .defaults(let defaults): defaults.canonicalText
        case .defaultsList(let list): list.map(\.canonicalText).joined(separator: "\n")
        case .rules(let rules): rules.map { "\($0.position). \($0.canonicalText)" }.joined(separator: "\n")
        }
    }
}

/// The structured value of one side of an ``AASAChange``.
///
/// JSON: `service-added`/`service-removed`: the app IDs (`["ABCDE12345.com.example.app"]`);
/// `variables-changed`: the variable's values (`null` when it is absent on that side);
/// `defaults-changed` without an app ID: `applinks.defaults` as ``DefaultsValue``; with one: the
/// ``DefaultsValue`` of each run of details listing the app; `rules-changed`: the rules removed
/// (before) or added (after) as ``RuleValue``. History recorded by earlier versions holds text.
public enum ChangeValue: Sendable, Hashable, Codable {
    /// App IDs, or a substitution variable's values.
    case strings([String])
    /// `applinks.defaults`.
    case defaults(DefaultsValue)
    /// The defaults of the details listing an app, consecutive repeats collapsed.
    case defaultsList([DefaultsValue])
    /// Rules with their 1-based positions in the app's old (before) or new (after) sequence.
    case rules([RuleValue])
    /// Text, as earlier versions recorded it in the store's history.
    case text(String)

    /// Decodes stored history: the JSON form does not name the case, so it is told by shape (an
    /// empty list decodes as ``strings(_:)``, which prints and compares in JSON as any empty list).
    public init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if let text = try? single.decode(String.self) {
            self = .text(text)
        } else if let strings = try? single.decode([String].self) {
            self = .strings(strings)
        } else if let rules = try? single.decode([RuleValue].self) {
            self = .rules(rules)
        } else if let list = try? single.decode([DefaultsValue].self) {
            self = .defaultsList(list)
        } else {
            self = .defaults(try single.decode(DefaultsValue.self))
        }
    }

    /// The value itself (an array, object or string), without a tag.
    public func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        switch self {
        case .strings(let strings): try single.encode(strings)
        case .defaults(let defaults): try single.encode(defaults)
        case .defaultsList(let list): try single.encode(list)
        case .rules(let rules): try single.encode(rules)
        case .text(let text): try single.encode(text)
        }
    }
}

/// A `defaults` object (`applinks.defaults` or a detail's): every component key it sets, named as
/// in the file (`null`: not set).
public struct DefaultsValue: Sendable, Hashable, Codable {
    /// `/`, when set.
    public var path: String?
    /// `?`, when set.
    public var query: ComponentValue.Query?
    /// `#`, when set.
    public var fragment: String?
    /// `exclude`, when set.
    public var exclude: Bool?
    /// `caseSensitive`, when set.
    public var caseSensitive: Bool?
    /// `percentEncoded`, when set.
    public var percentEncoded: Bool?

    private enum CodingKeys: String, CodingKey {
        case path = "/", query = "?", fragment = "#", exclude, caseSensitive, percentEncoded
    }

    /// Creates a value.
    public init(
        path: String? = nil, query: ComponentValue.Query? = nil, fragment: String? = nil, exclude: Bool? = nil,
        caseSensitive: Bool? = nil, percentEncoded: Bool? = nil
    ) {
        self.path = path
        self.query = query
        self.fragment = fragment
        self.exclude = exclude
        self.caseSensitive = caseSensitive
        self.percentEncoded = percentEncoded
    }

    /// The value of a model's defaults.
    public init(_ defaults: ComponentDefaults?) {
        self.init(
            path: defaults?.path, query: defaults?.query.map(ComponentValue.Query.init), fragment: defaults?.fragment,
            exclude: defaults?.exclude, caseSensitive: defaults?.caseSensitive, percentEncoded: defaults?.percentEncoded)
    }

    /// `{"/":"/shop/*","caseSensitive":false}`: the set keys only, in a fixed order.
    public var canonicalText: String {
        var parts: [String] = []
        if let path { parts.append("\"/\":" + Canonical.quote(path)) }
        if let query { parts.append("\"?\":" + query.canonicalText) }
        if let fragment { parts.append("\"#\":" + Canonical.quote(fragment)) }
        if let exclude { parts.append("\"exclude\":\(exclude)") }
        if let caseSensitive { parts.append("\"caseSensitive\":\(caseSensitive)") }
        if let percentEncoded { parts.append("\"percentEncoded\":\(percentEncoded)") }
        return "{" + parts.joined(separator: ",") + "}"
    }
}

/// One rule of an app in a `rules-changed` change: a component or a legacy path, and its 1-based
/// position in the app's sequence of rules (the order a device tries them).
public struct RuleValue: Sendable, Hashable, Codable {
    /// The 1-based position.
    public var position: Int
    /// The component, for a rule of `components`.
    public var component: ComponentValue?
    /// The pattern, for a rule of legacy `paths`.
    public var path: String?

    /// Creates a value.
    public init(position: Int, component: ComponentValue? = nil, path: String? = nil) {
        self.position = position
        self.component = component
        self.path = path
    }

    /// `{"/":"/buy/*"}` for a component, `path "/buy/*"` for a legacy path.
    public var canonicalText: String {
        component?.canonicalText ?? "path " + Canonical.quote(path ?? "")
    }

    /// What two rules are compared by (``ComponentValue/matchText`` for a component).
    var matchText: String {
        component?.matchText ?? canonicalText
    }
}

/// A component's matching keys, named as in the file (`comment` left out): `/`, `?` (a string,
/// an object of query item name → pattern, or `null` when absent or ignored by Apple because a
/// value is not a string), `#`, `exclude`, `caseSensitive`, `percentEncoded`.
public struct ComponentValue: Sendable, Hashable, Codable {
    /// The `?` pattern.
    public enum Query: Sendable, Hashable, Codable {
        /// A pattern for the whole query.
        case string(String)
        /// Query item name → value pattern.
        case items([String: String])
        /// A dictionary Apple ignores (a value is not a string): matches any query; `null` in JSON.
        case ignored

        public init(from decoder: any Decoder) throws {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .ignored
            } else if let string = try? single.decode(String.self) {
                self = .string(string)
            } else {
                self = .items(try single.decode([String: String].self))
            }
        }

        /// The value of a model pattern.
        public init(_ pattern: QueryPattern) {
            switch pattern {
            case .string(let string): self = .string(string)
            case .items(let items):
                var patterns: [String: String] = [:]
                for item in items { patterns[item.name] = item.pattern }
                self = .items(patterns)
            case .ignored: self = .ignored
            }
        }

        /// Compact JSON, item names sorted.
        public var canonicalText: String {
            switch self {
            case .string(let string): Canonical.quote(string)
            case .items(let items):
                "{" + items.keys.sorted().map { Canonical.quote($0) + ":" + Canonical.quote(items[$0] ?? "") }.joined(separator: ",") + "}"
            case .ignored: "\"<ignored dictionary>\""
            }
        }

        /// The pattern string, the object of patterns, or `null`.
        public func encode(to encoder: any Encoder) throws {
            var single = encoder.singleValueContainer()
            switch self {
            case .string(let string): try single.encode(string)
            case .items(let items): try single.encode(items)
            case .ignored: try single.encodeNil()
            }
        }
    }

    /// `/`.
    public var path: String?
    /// `?`.
    public var query: Query?
    /// `#`.
    public var fragment: String?
    /// `exclude`.
    public var exclude: Bool
    /// `caseSensitive`.
    public var caseSensitive: Bool?
    /// `percentEncoded`.
    public var percentEncoded: Bool?

    private enum CodingKeys: String, CodingKey {
        case path = "/", query = "?", fragment = "#", exclude, caseSensitive, percentEncoded
    }

    /// The value of a model rule, as written.
    public init(_ rule: ComponentRule) {
        path = rule.path
        query = rule.query.map(Query.init)
        fragment = rule.fragment
        exclude = rule.exclude ?? false
        caseSensitive = rule.options.caseSensitive
        percentEncoded = rule.options.percentEncoded
    }

    /// A component as the matcher reads it: every key it inherits filled in, and keys with their
    /// built-in meaning (`exclude` false, the flags true, a `?` dictionary Apple ignores) left out,
    /// so that they compare equal to an absent key.
    public init(effective resolved: ResolvedComponent) {
        self.init(resolved.rule)
        if query == .ignored { query = nil }
        exclude = resolved.isExclusion
        caseSensitive = resolved.caseSensitive ? nil : false
        percentEncoded = resolved.percentEncoded ? nil : false
    }

    /// What two components are compared by: ``canonicalText`` with the patterns read as the
    /// matcher reads them. Leading and trailing slashes of a path do not count (`/a/*/` is
    /// `/a/*`), and a pattern that matches everything (`*`, a path's `/*`) is the same as none, so
    /// adding `"?":"*"` or `"#":"*"` changes no rule. Changes still show the patterns as written.
    var matchText: String {
        var read = self
        if let written = path {
            let body = written.drop(while: { $0 == "/" }).reversed().drop(while: { $0 == "/" }).reversed()
            read.path = CompiledPattern(written, role: .path).matchesEverything ? nil : "/" + String(body)
        }
        if case .string(let pattern)? = query, CompiledPattern(pattern, role: .plain).matchesEverything { read.query = nil }
        // A dictionary whose every pattern matches everything (or none) matches every query: an
        // absent item reads as "", which `*` matches.
        if case .items(let items)? = query, items.values.allSatisfy({ CompiledPattern($0, role: .plain).matchesEverything }) { read.query = nil }
        if let pattern = fragment, CompiledPattern(pattern, role: .plain).matchesEverything { read.fragment = nil }
        return read.canonicalText
    }

    /// The component as compact JSON with its keys in a fixed order, the set keys only.
    public var canonicalText: String {
        var parts: [String] = []
        if let path { parts.append("\"/\":" + Canonical.quote(path)) }
        if let query { parts.append("\"?\":" + query.canonicalText) }
        if let fragment { parts.append("\"#\":" + Canonical.quote(fragment)) }
        if exclude { parts.append("\"exclude\":true") }
        if let caseSensitive { parts.append("\"caseSensitive\":\(caseSensitive)") }
        if let percentEncoded { parts.append("\"percentEncoded\":\(percentEncoded)") }
        return "{" + parts.joined(separator: ",") + "}"
    }
}

/// A semantic diff of two association files: what a device would see differently, ignoring
/// formatting, key order, comments, the `details` form (array or legacy dictionary) and how the
/// rules of one app are split between details.
///
/// - Services (top-level keys) added or removed.
/// - App IDs added or removed per service.
/// - Per applinks app ID: its rules in the order a device tries them (the `components` of each
///   detail listing it, or its `paths` when it has no `components`), compared as a sequence:
///   `rules-changed` carries the removed rules in `before` and the added ones in `after`, each
///   line `N. rule` with N its 1-based position in that app's old or new sequence. A reordering
///   shows as a removal and an addition. `paths` ignored because of `components` do not count.
///   Components are compared as the matcher reads them: every key inherited from `defaults`
///   filled in, and `exclude: false`, `caseSensitive: true`, `percentEncoded: true` and an
///   ignored `?` dictionary the same as leaving the key out; so moving a key between the
///   components and `defaults` without changing what it means is no change.
/// - `defaults` only through the rules: `defaults-changed` (the domain `applinks.defaults`
///   without `appID`; with `appID` the `defaults` of the details listing it that contribute
///   rules, consecutive repeats collapsed) is added only when `defaults` differ and rules
///   changed (of any app for the domain level, of that app for the detail level), to say why.
/// - Each substitution variable (`variables-changed`).
///
/// When apps listed by the same details share a `rules-changed` of more than ``sharedTextLines``
/// rules, only the first app (sorted) carries `before` and `after`; the others say so in their
/// description. The cost and the output then grow with the files, not with apps × rules.
///
/// Order (deterministic): services in ``Service`` order, added/removed services first; then for
/// each service in both: domain defaults, variables by name, removed apps, added apps (sorted),
/// then rule and defaults changes per app (sorted).
public enum AASADiff {
    /// The changes from `old` to `new`; empty when they mean the same.
    public static func changes(from old: AASADocument, to new: AASADocument) -> [AASAChange] {
        var changes: [AASAChange] = []
        // Only the services devices read: a key they ignore (`"comment": "deployed today"`)
        // holds nothing that decides anything (the decoder keeps no content for it).
        let oldServices = Set(old.services.filter(\.isKnown))
        let newServices = Set(new.services.filter(\.isKnown))
        for service in oldServices.union(newServices).sorted() {
            switch (oldServices.contains(service), newServices.contains(service)) {
            case (false, true):
                let apps = new.appIDs(for: service)
                changes.append(
                    AASAChange(
                        kind: "service-added", service: service,
                        description: "service \(service.name) added" + (apps.isEmpty ? "" : " with \(apps.count) app ID\(apps.count == 1 ? "" : "s")"),
                        after: apps.isEmpty ? nil : .strings(apps)))
            case (true, false):
                let apps = old.appIDs(for: service)
                changes.append(
                    AASAChange(
                        kind: "service-removed", service: service,
                        description: "service \(service.name) removed" + (apps.isEmpty ? "" : " (it listed \(apps.count) app ID\(apps.count == 1 ? "" : "s"))"),
                        before: apps.isEmpty ? nil : .strings(apps)))
            default:
                break
            }
        }
        for service in oldServices.intersection(newServices).sorted() {
            let oldApps = old.appIDs(for: service)
            let newApps = new.appIDs(for: service)
            let oldSet = Set(oldApps)
            let newSet = Set(newApps)
            var perApp: [AASAChange] = []
            if service == .applinks {
                // Each side's details are indexed by app once, and apps listed by the same details
                // on both sides share one comparison: the cost grows with the file, not with
                // apps × details.
                let oldDetails = DetailIndex(old.applinks)
                let newDetails = DetailIndex(new.applinks)
                var compared: [[[Int]]: (comparison: AppComparison, firstApp: String)] = [:]
                for app in oldSet.intersection(newSet).sorted() {
                    let key = [oldDetails.details(of: app), newDetails.details(of: app)]
                    if let (comparison, firstApp) = compared[key] {
                        perApp += comparison.changes(for: app, sameAs: firstApp)
                    } else {
                        let comparison = AppComparison(old: oldDetails, key[0], new: newDetails, key[1])
                        compared[key] = (comparison, app)
                        perApp += comparison.changes(for: app, sameAs: nil)
                    }
                }
                let rulesChanged = perApp.contains { $0.kind == "rules-changed" }
                changes += domainChanges(old.applinks, new.applinks, rulesChanged: rulesChanged)
            }
            for app in oldSet.subtracting(newSet).sorted() {
                changes.append(AASAChange(kind: "app-removed", service: service, appID: app, description: "\(app) removed from \(service.name)"))
            }
            for app in newSet.subtracting(oldSet).sorted() {
                changes.append(AASAChange(kind: "app-added", service: service, appID: app, description: "\(app) added to \(service.name)"))
            }
            changes += perApp
        }
        return changes
    }

    static func domainChanges(_ old: AppLinks?, _ new: AppLinks?, rulesChanged: Bool) -> [AASAChange] {
        var changes: [AASAChange] = []
        let oldDefaults = DefaultsValue(old?.defaults)
        let newDefaults = DefaultsValue(new?.defaults)
        // A defaults change that changes no rule is no change (every rule is compared with the
        // keys it inherits); next to a rules change it says why the rules changed.
        if rulesChanged, oldDefaults != newDefaults {
            changes.append(
                AASAChange(
                    kind: "defaults-changed", service: .applinks, description: "applinks.defaults changed",
                    before: .defaults(oldDefaults), after: .defaults(newDefaults)))
        }
        let oldVariables = old?.substitutionVariables ?? [:]
        let newVariables = new?.substitutionVariables ?? [:]
        for name in Set(oldVariables.keys).union(newVariables.keys).sorted() {
            let before = oldVariables[name]
            let after = newVariables[name]
            // A variable stands for any of its values: their order and repeats mean nothing.
            guard before.map(Set.init) != after.map(Set.init) else { continue }
            let what = before == nil ? "added" : after == nil ? "removed" : "changed"
            changes.append(
                AASAChange(
                    kind: "variables-changed", service: .applinks, description: "substitution variable \"\(name)\" \(what)",
                    before: before.map(ChangeValue.strings), after: after.map(ChangeValue.strings)))
        }
        return changes
    }

    /// Above this many removed and added rules, a `rules-changed` shared by several apps lists the
    /// rules for the first app only.
    public static let sharedTextLines = 20

    /// The details of one side, with the rules (as the matcher reads them, defaults filled in) and
    /// the defaults of each computed once.
    struct DetailIndex {
        private var byApp: [String: [Int]] = [:]
        let rules: [[RuleValue]]
        let texts: [[String]]
        let defaults: [DefaultsValue]

        init(_ applinks: AppLinks?) {
            let details = applinks?.details ?? []
            rules = details.map { Canonical.rules($0, applinksDefaults: applinks?.defaults) }
            texts = rules.map { $0.map(\.matchText) }
            defaults = details.map { DefaultsValue($0.defaults) }
            for (index, detail) in details.enumerated() {
                CostProbe.count(1 + detail.appIDs.count)
                for app in detail.appIDs where byApp[app]?.last != index {
                    byApp[app, default: []].append(index)
                }
            }
        }

        /// The positions of the details that list `app`, in file order.
        func details(of app: String) -> [Int] {
            CostProbe.count(1)
            return byApp[app] ?? []
        }
    }

    /// How the rules and detail defaults of an app listed by some details changed. A defaults
    /// change that changes no rule is no change; next to a rules change it says why.
    struct AppComparison {
        var rules: (before: ChangeValue?, after: ChangeValue?, added: Int, removed: Int, oldCount: Int, newCount: Int)?
        var defaults: (before: [DefaultsValue], after: [DefaultsValue])?

        init(old: DetailIndex, _ oldDetails: [Int], new: DetailIndex, _ newDetails: [Int]) {
            let oldTexts = oldDetails.flatMap { old.texts[$0] }
            let newTexts = newDetails.flatMap { new.texts[$0] }
            CostProbe.count(oldTexts.count + newTexts.count)
            guard oldTexts != newTexts else { return }
            let oldRules = oldDetails.flatMap { old.rules[$0] }
            let newRules = newDetails.flatMap { new.rules[$0] }
            let (removed, added) = SequenceDiff.difference(oldTexts, newTexts)
            func positioned(_ rules: [RuleValue], _ indexes: [Int]) -> ChangeValue? {
                indexes.isEmpty ? nil : .rules(indexes.map { index in
                    var rule = rules[index]
                    rule.position = index + 1
                    return rule
                })
            }
            rules = (positioned(oldRules, removed), positioned(newRules, added), added.count, removed.count, oldRules.count, newRules.count)
            let oldDefaults = Canonical.detailDefaults(oldDetails.map { (old.rules[$0], old.defaults[$0]) })
            let newDefaults = Canonical.detailDefaults(newDetails.map { (new.rules[$0], new.defaults[$0]) })
            if oldDefaults != newDefaults {
                defaults = (oldDefaults, newDefaults)
            }
        }

        /// The changes for `app`. When an earlier app, `sameAs`, has the same change and it
        /// runs over ``sharedTextLines`` rules, they are not repeated (a detail that lists
        /// thousands of apps would repeat them thousands of times).
        func changes(for app: String, sameAs firstApp: String?) -> [AASAChange] {
            var changes: [AASAChange] = []
            if let rules {
                var description = "applinks rules for \(app) changed: \(rules.added) added, \(rules.removed) removed (\(rules.oldCount) → \(rules.newCount) rules)"
                var before = rules.before
                var after = rules.after
                if let firstApp, rules.added + rules.removed > AASADiff.sharedTextLines {
                    description += "; the same change as for \(firstApp), where the rules are listed"
                    before = nil
                    after = nil
                }
                changes.append(
                    AASAChange(kind: "rules-changed", service: .applinks, appID: app, description: description, before: before, after: after))
            }
            if let defaults {
                changes.append(
                    AASAChange(
                        kind: "defaults-changed", service: .applinks, appID: app, description: "detail defaults for \(app) changed",
                        before: .defaultsList(defaults.before), after: .defaultsList(defaults.after)))
            }
            return changes
        }
    }
}

/// Canonical, order-stable text of model values.
enum Canonical {
    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    static func stringArray(_ values: [String]) -> String {
        "[" + values.map(quote).joined(separator: ",") + "]"
    }

    /// The `defaults` of the details that contribute rules, consecutive repeats collapsed (so
    /// splitting or merging details with the same defaults is no change).
    static func detailDefaults(_ details: [(rules: [RuleValue], defaults: DefaultsValue)]) -> [DefaultsValue] {
        var result: [DefaultsValue] = []
        for detail in details where !detail.rules.isEmpty {
            if result.last != detail.defaults { result.append(detail.defaults) }
        }
        return result
    }

    /// The rules a detail contributes, in order: its components as the matcher reads them (every
    /// key they inherit from `defaults` filled in, ``ComponentValue/init(effective:)``), else its
    /// paths (positions are set by the caller).
    static func rules(_ detail: AppLinksDetail, applinksDefaults: ComponentDefaults?) -> [RuleValue] {
        if let components = detail.components {
            return components.map {
                RuleValue(position: 0, component: ComponentValue(effective: $0.resolved(detailDefaults: detail.defaults, applinksDefaults: applinksDefaults)))
            }
        }
        return (detail.paths ?? []).map { RuleValue(position: 0, path: $0) }
    }
}

/// A longest-common-subsequence diff of two string sequences.
enum SequenceDiff {
    /// The indices removed from `a` and added in `b`, each ascending. Exact (LCS) for inputs up
    /// to a few million cell comparisons after trimming the common prefix and suffix; beyond
    /// that, ``commonByIncreasingRun(_:_:offset:)``, which still sees order (a multiset difference
    /// said "0 added, 0 removed" for 2,100 rules reversed).
    /// A common subsequence in O((n + m) log m): each element of `b` paired with the next unused
    /// equal element of `a`, then the longest run of pairs increasing in `a` (patience sorting)
    /// is kept; every other element is removed or added. Exact for lists without repeats.
    static func commonByIncreasingRun(_ a: [String], _ b: [String], offset: Int) -> (removed: [Int], added: [Int]) {
        var positions: [String: [Int]] = [:]
        for (i, s) in a.enumerated() { positions[s, default: []].append(i) }
        var used: [String: Int] = [:]
        var pairs: [(j: Int, i: Int)] = []
        for (j, s) in b.enumerated() {
            guard let list = positions[s] else { continue }
            let next = used[s, default: 0]
            guard next < list.count else { continue }
            used[s] = next + 1
            pairs.append((j, list[next]))
        }
        // Longest strictly increasing run of `i` over `pairs` (already in `j` order).
        var tails: [Int] = []  // index into pairs of the smallest tail of each length
        var previous = [Int](repeating: -1, count: pairs.count)
        for (k, pair) in pairs.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if pairs[tails[middle]].i < pair.i { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[k] = tails[low - 1] }
            if low == tails.count { tails.append(k) } else { tails[low] = k }
        }
        var keptA = Set<Int>()
        var keptB = Set<Int>()
        var k = tails.last ?? -1
        while k >= 0 {
            keptA.insert(pairs[k].i)
            keptB.insert(pairs[k].j)
            k = previous[k]
        }
        return (a.indices.filter { !keptA.contains($0) }.map { $0 + offset }, b.indices.filter { !keptB.contains($0) }.map { $0 + offset })
    }

    static func difference(_ a: [String], _ b: [String]) -> (removed: [Int], added: [Int]) {
        var prefix = 0
        while prefix < a.count, prefix < b.count, a[prefix] == b[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < a.count - prefix, suffix < b.count - prefix, a[a.count - 1 - suffix] == b[b.count - 1 - suffix] { suffix += 1 }
        let a1 = Array(a[prefix..<(a.count - suffix)])
        let b1 = Array(b[prefix..<(b.count - suffix)])
        let n = a1.count
        let m = b1.count
        if n == 0 || m == 0 {
            return ((0..<n).map { $0 + prefix }, (0..<m).map { $0 + prefix })
        }
        guard n * m <= 4_000_000 else {
            return commonByIncreasingRun(a1, b1, offset: prefix)
        }
        // lengths[i][j] = LCS of a1[i...] and b1[j...], stored flat.
        var lengths = [Int](repeating: 0, count: (n + 1) * (m + 1))
        for i in stride(from: n - 1, through: 0, by: -1) {
            for j in stride(from: m - 1, through: 0, by: -1) {
                lengths[i * (m + 1) + j] = a1[i] == b1[j]
                    ? lengths[(i + 1) * (m + 1) + j + 1] + 1
                    : max(lengths[(i + 1) * (m + 1) + j], lengths[i * (m + 1) + j + 1])
            }
        }
        var removed: [Int] = []
        var added: [Int] = []
        var i = 0
        var j = 0
        while i < n, j < m {
            if a1[i] == b1[j] {
                i += 1
                j += 1
            } else if lengths[(i + 1) * (m + 1) + j] >= lengths[i * (m + 1) + j + 1] {
                removed.append(i + prefix)
                i += 1
            } else {
                added.append(j + prefix)
                j += 1
            }
        }
        while i < n {
            removed.append(i + prefix)
            i += 1
        }
        while j < m {
            added.append(j + prefix)
            j += 1
        }
        return (removed, added)
    }
}
