/// "Did you mean" suggestions for misspelt or miscased keys.
enum KeySuggestion {
    /// The known key `key` most likely stands for: a case-insensitive match, else one within a
    /// small edit distance (1 for keys up to 4 characters, 2 beyond), else `nil`.
    static func suggest(_ key: String, among known: [String]) -> String? {
        let lower = key.lowercased()
        if let exact = known.first(where: { $0.lowercased() == lower }) { return exact }
        let limit = key.count <= 4 ? 1 : 2
        var best: (String, Int)?
        for candidate in known {
            let d = distance(Array(lower.unicodeScalars), Array(candidate.lowercased().unicodeScalars), limit: limit)
            if d <= limit, d < (best?.1 ?? Int.max) { best = (candidate, d) }
        }
        return best?.0
    }

    /// Levenshtein distance with transpositions counted as one edit; stops early past `limit`.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], limit: Int) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMin = current[0]
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, previous2[j - 2] + 1)
                }
                current[j] = value
                rowMin = min(rowMin, value)
            }
            if rowMin > limit { return limit + 1 }
            previous2 = previous
            previous = current
        }
        return previous[b.count]
    }
}
