/// One semantic difference between two association files.
///
/// JSON shape (keys sorted, absent fields omitted):
/// `{"kind": "rules-changed", "service": "applinks", "appID": "ABCDE12345.com.example.app",
///   "description": "…", "before": "…", "after": "…"}`.
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
    /// What was there before, in canonical text (one rule or value per line), when useful.
    public var before: String?
    /// What is there now, in canonical text, when useful.
    public var after: String?

    /// Creates a change.
    public init(kind: String, service: Service? = nil, appID: String? = nil, description: String, before: String? = nil, after: String? = nil) {
        self.kind = kind
        self.service = service
        self.appID = appID
        self.description = description
        self.before = before
        self.after = after
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
/// Order (deterministic): services in ``Service`` order, added/removed services first; then for
/// each service in both: domain defaults, variables by name, removed apps, added apps (sorted),
/// then rule and defaults changes per app (sorted).
public enum AASADiff {
    /// The changes from `old` to `new`; empty when they mean the same.
    public static func changes(from old: AASADocument, to new: AASADocument) -> [AASAChange] {
        var changes: [AASAChange] = []
        let oldServices = Set(old.services)
        let newServices = Set(new.services)
        for service in oldServices.union(newServices).sorted() {
            switch (oldServices.contains(service), newServices.contains(service)) {
            case (false, true):
                let apps = new.appIDs(for: service)
                changes.append(
                    AASAChange(
                        kind: "service-added", service: service,
                        description: "service \(service.name) added" + (apps.isEmpty ? "" : " with \(apps.count) app ID\(apps.count == 1 ? "" : "s")"),
                        after: apps.isEmpty ? nil : apps.joined(separator: "\n")))
            case (true, false):
                let apps = old.appIDs(for: service)
                changes.append(
                    AASAChange(
                        kind: "service-removed", service: service,
                        description: "service \(service.name) removed" + (apps.isEmpty ? "" : " (it listed \(apps.count) app ID\(apps.count == 1 ? "" : "s"))"),
                        before: apps.isEmpty ? nil : apps.joined(separator: "\n")))
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
                for app in oldSet.intersection(newSet).sorted() {
                    perApp += appChanges(app, old.applinks, new.applinks)
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
        let oldDefaults = Canonical.defaults(old?.defaults)
        let newDefaults = Canonical.defaults(new?.defaults)
        if rulesChanged, oldDefaults != newDefaults {
            changes.append(
                AASAChange(
                    kind: "defaults-changed", service: .applinks, description: "applinks.defaults changed",
                    before: oldDefaults, after: newDefaults))
        }
        let oldVariables = old?.substitutionVariables ?? [:]
        let newVariables = new?.substitutionVariables ?? [:]
        for name in Set(oldVariables.keys).union(newVariables.keys).sorted() {
            let before = oldVariables[name].map(Canonical.stringArray)
            let after = newVariables[name].map(Canonical.stringArray)
            guard before != after else { continue }
            let what = before == nil ? "added" : after == nil ? "removed" : "changed"
            changes.append(
                AASAChange(
                    kind: "variables-changed", service: .applinks, description: "substitution variable \"\(name)\" \(what)",
                    before: before, after: after))
        }
        return changes
    }

    static func appChanges(_ app: String, _ old: AppLinks?, _ new: AppLinks?) -> [AASAChange] {
        var changes: [AASAChange] = []
        let oldDetails = (old?.details ?? []).filter { $0.appIDs.contains(app) }
        let newDetails = (new?.details ?? []).filter { $0.appIDs.contains(app) }
        let oldRules = oldDetails.flatMap { Canonical.rules($0, applinksDefaults: old?.defaults) }
        let newRules = newDetails.flatMap { Canonical.rules($0, applinksDefaults: new?.defaults) }
        guard oldRules != newRules else { return [] }
        let (removed, added) = SequenceDiff.difference(oldRules, newRules)
        let before = removed.map { "\($0 + 1). \(oldRules[$0])" }.joined(separator: "\n")
        let after = added.map { "\($0 + 1). \(newRules[$0])" }.joined(separator: "\n")
        changes.append(
            AASAChange(
                kind: "rules-changed", service: .applinks, appID: app,
                description: "applinks rules for \(app) changed: \(added.count) added, \(removed.count) removed (\(oldRules.count) → \(newRules.count) rules)",
                before: before.isEmpty ? nil : before, after: after.isEmpty ? nil : after))
        let oldDefaults = Canonical.detailDefaults(oldDetails)
        let newDefaults = Canonical.detailDefaults(newDetails)
        if oldDefaults != newDefaults {
            changes.append(
                AASAChange(
                    kind: "defaults-changed", service: .applinks, appID: app, description: "detail defaults for \(app) changed",
                    before: oldDefaults.joined(separator: "\n"), after: newDefaults.joined(separator: "\n")))
        }
        return changes
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

    static func defaults(_ d: ComponentDefaults?) -> String {
        var parts: [String] = []
        if let path = d?.path { parts.append("\"/\":" + quote(path)) }
        if let query = d?.query { parts.append("\"?\":" + self.query(query)) }
        if let fragment = d?.fragment { parts.append("\"#\":" + quote(fragment)) }
        if let exclude = d?.exclude { parts.append("\"exclude\":\(exclude)") }
        if let c = d?.caseSensitive { parts.append("\"caseSensitive\":\(c)") }
        if let p = d?.percentEncoded { parts.append("\"percentEncoded\":\(p)") }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// A `?` value, dictionary items sorted by name.
    static func query(_ query: QueryPattern) -> String {
        switch query {
        case .string(let s): quote(s)
        case .items(let items):
            "{" + items.sorted { $0.name < $1.name }.map { quote($0.name) + ":" + quote($0.pattern) }.joined(separator: ",") + "}"
        case .ignored: "\"<ignored dictionary>\""
        }
    }

    /// The `defaults` of the details that contribute rules, consecutive repeats collapsed (so
    /// splitting or merging details with the same defaults is no change).
    static func detailDefaults(_ details: [AppLinksDetail]) -> [String] {
        var result: [String] = []
        for detail in details where !(detail.components ?? []).isEmpty || (detail.components == nil && !(detail.paths ?? []).isEmpty) {
            let text = defaults(detail.defaults)
            if result.last != text { result.append(text) }
        }
        return result
    }

    /// The rules a detail contributes, in order: its components as the matcher reads them
    /// (``effectiveComponent(_:)``), else its paths.
    static func rules(_ detail: AppLinksDetail, applinksDefaults: ComponentDefaults?) -> [String] {
        if let components = detail.components {
            return components.map { effectiveComponent($0.resolved(detailDefaults: detail.defaults, applinksDefaults: applinksDefaults)) }
        }
        return (detail.paths ?? []).map { "path " + quote($0) }
    }

    /// A resolved component: keys with their built-in meaning (`exclude` false, the flags true, an
    /// ignored `?` dictionary) are left out, so they compare equal to an absent key.
    static func effectiveComponent(_ resolved: ResolvedComponent) -> String {
        let rule = resolved.rule
        var parts: [String] = []
        if let p = rule.path { parts.append("\"/\":" + quote(p)) }
        if let q = rule.query, q != .ignored { parts.append("\"?\":" + query(q)) }
        if let f = rule.fragment { parts.append("\"#\":" + quote(f)) }
        if resolved.isExclusion { parts.append("\"exclude\":true") }
        if !resolved.caseSensitive { parts.append("\"caseSensitive\":false") }
        if !resolved.percentEncoded { parts.append("\"percentEncoded\":false") }
        return "{" + parts.joined(separator: ",") + "}"
    }
}

/// A longest-common-subsequence diff of two string sequences.
enum SequenceDiff {
    /// The indices removed from `a` and added in `b`, each ascending. Exact (LCS) for inputs up
    /// to a few million cell comparisons after trimming the common prefix and suffix; beyond
    /// that, a multiset difference.
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
            var counts: [String: Int] = [:]
            for s in b1 { counts[s, default: 0] += 1 }
            var removed: [Int] = []
            for (i, s) in a1.enumerated() {
                if let c = counts[s], c > 0 { counts[s] = c - 1 } else { removed.append(i + prefix) }
            }
            counts = [:]
            for s in a1 { counts[s, default: 0] += 1 }
            var added: [Int] = []
            for (j, s) in b1.enumerated() {
                if let c = counts[s], c > 0 { counts[s] = c - 1 } else { added.append(j + prefix) }
            }
            return (removed, added)
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
