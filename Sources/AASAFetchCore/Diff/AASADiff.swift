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
/// - The `defaults` of the details listing an app that contribute rules, consecutive repeats
///   collapsed (`defaults-changed` with `appID`, one line per distinct run), the domain
///   `applinks.defaults` (`defaults-changed` without `appID`), each substitution variable
///   (`variables-changed`).
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
            if service == .applinks {
                changes += domainChanges(old.applinks, new.applinks)
            }
            let oldApps = old.appIDs(for: service)
            let newApps = new.appIDs(for: service)
            let oldSet = Set(oldApps)
            let newSet = Set(newApps)
            for app in oldSet.subtracting(newSet).sorted() {
                changes.append(AASAChange(kind: "app-removed", service: service, appID: app, description: "\(app) removed from \(service.name)"))
            }
            for app in newSet.subtracting(oldSet).sorted() {
                changes.append(AASAChange(kind: "app-added", service: service, appID: app, description: "\(app) added to \(service.name)"))
            }
            guard service == .applinks else { continue }
            // Each side's details are indexed by app once, and apps listed by the same details on
            // both sides share one comparison: the cost grows with the file, not with apps × details.
            let oldDetails = DetailIndex(old.applinks)
            let newDetails = DetailIndex(new.applinks)
            var compared: [[[Int]]: (comparison: AppComparison, firstApp: String)] = [:]
            for app in oldSet.intersection(newSet).sorted() {
                let key = [oldDetails.details(of: app), newDetails.details(of: app)]
                if let (comparison, firstApp) = compared[key] {
                    changes += comparison.changes(for: app, sameAs: firstApp)
                } else {
                    let comparison = AppComparison(old: oldDetails, key[0], new: newDetails, key[1])
                    compared[key] = (comparison, app)
                    changes += comparison.changes(for: app, sameAs: nil)
                }
            }
        }
        return changes
    }

    static func domainChanges(_ old: AppLinks?, _ new: AppLinks?) -> [AASAChange] {
        var changes: [AASAChange] = []
        let oldDefaults = Canonical.defaults(old?.defaults)
        let newDefaults = Canonical.defaults(new?.defaults)
        if oldDefaults != newDefaults {
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

    /// Above this many removed and added rules, a `rules-changed` shared by several apps lists the
    /// rules for the first app only.
    public static let sharedTextLines = 20

    /// The details of one side, with the canonical rules and defaults of each computed once.
    struct DetailIndex {
        private var byApp: [String: [Int]] = [:]
        let rules: [[String]]
        let defaults: [String]

        init(_ applinks: AppLinks?) {
            let details = applinks?.details ?? []
            rules = details.map(Canonical.rules)
            defaults = details.map { Canonical.defaults($0.defaults) }
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

    /// How the rules and detail defaults of an app listed by some details changed.
    struct AppComparison {
        var rules: (before: String?, after: String?, added: Int, removed: Int, oldCount: Int, newCount: Int)?
        var defaults: (before: String, after: String)?

        init(old: DetailIndex, _ oldDetails: [Int], new: DetailIndex, _ newDetails: [Int]) {
            let oldRules = oldDetails.flatMap { old.rules[$0] }
            let newRules = newDetails.flatMap { new.rules[$0] }
            CostProbe.count(oldRules.count + newRules.count)
            if oldRules != newRules {
                let (removed, added) = SequenceDiff.difference(oldRules, newRules)
                let before = removed.map { "\($0 + 1). \(oldRules[$0])" }.joined(separator: "\n")
                let after = added.map { "\($0 + 1). \(newRules[$0])" }.joined(separator: "\n")
                rules = (before.isEmpty ? nil : before, after.isEmpty ? nil : after, added.count, removed.count, oldRules.count, newRules.count)
            }
            let oldDefaults = Canonical.detailDefaults(oldDetails.map { (old.rules[$0], old.defaults[$0]) })
            let newDefaults = Canonical.detailDefaults(newDetails.map { (new.rules[$0], new.defaults[$0]) })
            if oldDefaults != newDefaults {
                defaults = (oldDefaults.joined(separator: "\n"), newDefaults.joined(separator: "\n"))
            }
        }

        /// The changes for `app`. When an earlier app, `sameAs`, has the same change and its
        /// `before` and `after` run over ``sharedTextLines`` lines, they are not repeated (a
        /// detail that lists thousands of apps would repeat them thousands of times).
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
                        before: defaults.before, after: defaults.after))
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

    static func defaults(_ d: ComponentDefaults?) -> String {
        var parts: [String] = []
        if let c = d?.caseSensitive { parts.append("\"caseSensitive\":\(c)") }
        if let p = d?.percentEncoded { parts.append("\"percentEncoded\":\(p)") }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// The `defaults` of the details that contribute rules, consecutive repeats collapsed (so
    /// splitting or merging details with the same defaults is no change).
    static func detailDefaults(_ details: [(rules: [String], defaults: String)]) -> [String] {
        var result: [String] = []
        for detail in details where !detail.rules.isEmpty {
            if result.last != detail.defaults { result.append(detail.defaults) }
        }
        return result
    }

    /// The rules a detail contributes, in order: its components, else its paths.
    static func rules(_ detail: AppLinksDetail) -> [String] {
        if let components = detail.components { return components.map(component) }
        return (detail.paths ?? []).map { "path " + quote($0) }
    }

    static func component(_ rule: ComponentRule) -> String {
        var parts: [String] = []
        if let p = rule.path { parts.append("\"/\":" + quote(p)) }
        switch rule.query {
        case .string(let s): parts.append("\"?\":" + quote(s))
        case .items(let items):
            let sorted = items.sorted { $0.name < $1.name }
            parts.append("\"?\":{" + sorted.map { quote($0.name) + ":" + quote($0.pattern) }.joined(separator: ",") + "}")
        case .ignored: parts.append("\"?\":\"<ignored dictionary>\"")
        case nil: break
        }
        if let f = rule.fragment { parts.append("\"#\":" + quote(f)) }
        if rule.exclude { parts.append("\"exclude\":true") }
        if let c = rule.options.caseSensitive { parts.append("\"caseSensitive\":\(c)") }
        if let p = rule.options.percentEncoded { parts.append("\"percentEncoded\":\(p)") }
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
