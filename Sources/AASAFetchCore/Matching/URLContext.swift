/// A URL's bytes (percent-encoded where needed) and the ranges of its parts, valid inside
/// ``with(_:_:)`` only.
struct URLInput {
    let bytes: UnsafeBufferPointer<UInt8>
    let ranges: URLSplitter.Ranges

    /// Whether the scheme is `http` or `https`.
    var isHTTP: Bool {
        URLSplitter.isHTTP(UnsafeBufferPointer(rebasing: bytes[ranges.scheme]))
    }

    /// The normalised host, `nil` without an authority.
    var host: String? {
        ranges.host.map { URLSplitter.normalisedHost(UnsafeBufferPointer(rebasing: bytes[$0])) }
    }

    /// Runs `body` with the split URL (`nil` when it cannot be split), without copying the
    /// string's bytes unless characters must be percent-encoded first.
    static func with<Result>(_ url: String, _ body: (URLInput?) -> Result) -> Result {
        if let result = url.utf8.withContiguousStorageIfAvailable({ process($0, body) }) { return result }
        let bytes = Array(url.utf8)
        return bytes.withUnsafeBufferPointer { process($0, body) }
    }

    private static func process<Result>(_ buffer: UnsafeBufferPointer<UInt8>, _ body: (URLInput?) -> Result) -> Result {
        if let encoded = URLSplitter.encodingInvalidCharacters(buffer) {
            return encoded.withUnsafeBufferPointer { encodedBuffer in
                body(URLSplitter.split(encodedBuffer).map { URLInput(bytes: encodedBuffer, ranges: $0) })
            }
        }
        return body(URLSplitter.split(buffer).map { URLInput(bytes: buffer, ranges: $0) })
    }
}

/// The texts patterns see for one URL, derived lazily (decoded, folded) and cached for the
/// duration of one decision.
struct URLContext {
    enum Part: Int {
        case path = 0, query = 1, fragment = 2
    }

    /// Decoded and folded variants, created only when a rule needs them.
    final class Derived {
        var texts = [[UInt8]?](repeating: nil, count: 12)
        var items = [[(name: [UInt8], value: [UInt8])]?](repeating: nil, count: 4)
        /// Per variant of ``items``: each name's item positions, built once lookups are many.
        var itemIndexes = [[[UInt8]: [Int]]?](repeating: nil, count: 4)
    }

    /// Query-name lookups one URL answers by scanning its items; past them, by an index of the
    /// items by name (a dictionary of 20,000 names against 60,000 items took 52 s by scanning).
    static let scannedLookups = 8

    let input: URLInput
    private var derived: Derived?
    /// Query names looked up so far (``queryItemMatches(name:pattern:percentEncoded:)``), kept
    /// here so a few lookups allocate nothing.
    private var itemLookups = 0
    /// The matching work done for this URL so far (transitions examined, every pattern together):
    /// past ``CompiledPattern/maxSteps`` an automaton no longer matches, so one URL costs at most
    /// that however many patterns a file holds.
    var steps = 0

    init(input: URLInput) {
        self.input = input
    }

    /// The part as written; an absent query or fragment is empty.
    @inline(__always)
    func raw(_ part: Part) -> UnsafeBufferPointer<UInt8> {
        let range: Range<Int>?
        switch part {
        case .path: range = input.ranges.path
        case .query: range = input.ranges.query
        case .fragment: range = input.ranges.fragment
        }
        guard let range else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(rebasing: input.bytes[range])
    }

    private mutating func store() -> Derived {
        if let derived { return derived }
        let created = Derived()
        derived = created
        return created
    }

    @inline(__always)
    static func transform(_ bytes: UnsafeBufferPointer<UInt8>, percentEncoded: Bool, caseSensitive: Bool) -> [UInt8] {
        var result: [UInt8]
        if percentEncoded || !UTF8Text.containsPercent(bytes) {
            result = Array(bytes)
        } else {
            result = UTF8Text.percentDecoded(bytes) ?? Array(bytes)
        }
        if !caseSensitive {
            result = result.withUnsafeBufferPointer { UTF8Text.caseFolded($0) }
        }
        return result
    }

    /// The part decoded (unless `percentEncoded`) and folded (unless `caseSensitive`).
    mutating func text(_ part: Part, percentEncoded: Bool, caseSensitive: Bool) -> [UInt8] {
        let store = store()
        let slot = part.rawValue * 4 + (percentEncoded ? 0 : 1) + (caseSensitive ? 0 : 2)
        if let text = store.texts[slot] { return text }
        let text = Self.transform(raw(part), percentEncoded: percentEncoded, caseSensitive: caseSensitive)
        store.texts[slot] = text
        return text
    }

    /// Runs `body` with the text a pattern of the given options sees (paths normalised).
    @inline(__always)
    mutating func withText<Result>(
        _ part: Part, percentEncoded: Bool, caseSensitive: Bool, _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        if percentEncoded && caseSensitive {
            let buffer = raw(part)
            return body(part == .path ? CompiledPattern.normalisedPath(buffer) : buffer)
        }
        return text(part, percentEncoded: percentEncoded, caseSensitive: caseSensitive).withUnsafeBufferPointer {
            body(part == .path ? CompiledPattern.normalisedPath($0) : $0)
        }
    }

    /// Whether a plain (query or fragment) pattern matches the part.
    @inline(__always)
    mutating func matches(_ pattern: CompiledPattern, part: Part, percentEncoded: Bool) -> Bool {
        if case .anything = pattern.engine { return true }
        var used = steps
        let matched = withText(part, percentEncoded: percentEncoded, caseSensitive: pattern.caseSensitive) {
            pattern.matches(prepared: $0, steps: &used)
        }
        steps = used
        return matched
    }

    /// Whether a path pattern matches the URL's path.
    @inline(__always)
    mutating func matchesPath(_ pattern: CompiledPattern, percentEncoded: Bool) -> Bool {
        if case .anything = pattern.engine { return true }
        var used = steps
        let matched = withText(.path, percentEncoded: percentEncoded, caseSensitive: pattern.caseSensitive) {
            pattern.matches(prepared: $0, steps: &used)
        }
        steps = used
        return matched
    }

    /// The query items (name, value) as a pattern of the given options sees them.
    mutating func items(percentEncoded: Bool, caseSensitive: Bool) -> [(name: [UInt8], value: [UInt8])] {
        let store = store()
        let slot = (percentEncoded ? 0 : 1) + (caseSensitive ? 0 : 2)
        if let items = store.items[slot] { return items }
        var items: [(name: [UInt8], value: [UInt8])] = []
        Self.forEachRawItem(raw(.query), present: input.ranges.query != nil) { name, value in
            items.append((
                name: Self.transform(name, percentEncoded: percentEncoded, caseSensitive: caseSensitive),
                value: Self.transform(value, percentEncoded: percentEncoded, caseSensitive: caseSensitive)
            ))
        }
        store.items[slot] = items
        return items
    }

    /// Splits a query into items: on `&`, the name up to the first `=`.
    @inline(__always)
    static func forEachRawItem(
        _ query: UnsafeBufferPointer<UInt8>, present: Bool,
        _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void
    ) {
        guard present, !query.isEmpty else { return }
        var start = 0
        while start <= query.count {
            var end = start
            while end < query.count, query[end] != 0x26 { end += 1 }
            var equals = start
            while equals < end, query[equals] != 0x3D { equals += 1 }
            let name = UnsafeBufferPointer(rebasing: query[start..<equals])
            let value = equals < end ? UnsafeBufferPointer(rebasing: query[(equals + 1)..<end]) : UnsafeBufferPointer(start: nil, count: 0)
            body(name, value)
            start = end + 1
        }
    }

    /// Whether every item called `name` matches `pattern` (an absent item reads as `""`).
    mutating func queryItemMatches(name: [UInt8], pattern: CompiledPattern, percentEncoded: Bool) -> Bool {
        var used = steps
        defer { steps = used }
        func run(_ value: UnsafeBufferPointer<UInt8>) -> Bool { pattern.matches(prepared: value, steps: &used) }
        itemLookups += 1
        if itemLookups > Self.scannedLookups {
            let store = store()
            let items = items(percentEncoded: percentEncoded, caseSensitive: pattern.caseSensitive)
            let slot = (percentEncoded ? 0 : 1) + (pattern.caseSensitive ? 0 : 2)
            let index: [[UInt8]: [Int]]
            if let built = store.itemIndexes[slot] {
                index = built
            } else {
                var built: [[UInt8]: [Int]] = [:]
                for (position, item) in items.enumerated() { built[item.name, default: []].append(position) }
                store.itemIndexes[slot] = built
                index = built
            }
            guard let positions = index[name] else { return run(UnsafeBufferPointer(start: nil, count: 0)) }
            return positions.allSatisfy { position in items[position].value.withUnsafeBufferPointer { run($0) } }
        }
        var found = false
        var allMatch = true
        if percentEncoded && pattern.caseSensitive {
            Self.forEachRawItem(raw(.query), present: input.ranges.query != nil) { itemName, value in
                guard allMatch, CompiledPattern.equal(itemName, name) else { return }
                found = true
                if !run(value) { allMatch = false }
            }
        } else {
            for item in items(percentEncoded: percentEncoded, caseSensitive: pattern.caseSensitive) where item.name == name {
                found = true
                let matched = item.value.withUnsafeBufferPointer { run($0) }
                if !matched {
                    allMatch = false
                    break
                }
            }
        }
        if !found { return run(UnsafeBufferPointer(start: nil, count: 0)) }
        return allMatch
    }
}

/// Pre-selects the components whose path pattern's literal prefix fits the URL's path, so a
/// file with many components tests only those that can match (order is kept: the candidates
/// are visited in index order).
struct PathPrefilter: Sendable {
    /// Details with fewer components are scanned directly.
    static let threshold = 8

    struct Trie: Sendable {
        var keys: [[UInt8]] = [[]]
        var children: [[Int32]] = [[]]
        var terminals: [[Int32]] = [[]]

        mutating func insert(_ bytes: [UInt8], component: Int) {
            var node = 0
            for byte in bytes {
                if let position = keys[node].firstIndex(of: byte) {
                    node = Int(children[node][position])
                } else {
                    keys.append([])
                    children.append([])
                    terminals.append([])
                    let child = keys.count - 1
                    keys[node].append(byte)
                    children[node].append(Int32(child))
                    node = child
                }
            }
            terminals[node].append(Int32(component))
        }
    }

    struct Group: Sendable {
        let percentEncoded: Bool
        let caseSensitive: Bool
        var trie: Trie
    }

    let words: Int
    let always: [UInt64]
    let groups: [Group]

    init(_ components: [CompiledComponent]) {
        words = (components.count + 63) >> 6
        var always = [UInt64](repeating: 0, count: words)
        var groups: [Group] = []
        for component in components {
            guard let path = component.path, !path.requiredPrefix.isEmpty else {
                always[component.index >> 6] |= UInt64(1) << UInt64(component.index & 63)
                continue
            }
            let position: Int
            if let existing = groups.firstIndex(where: {
                $0.percentEncoded == component.percentEncoded && $0.caseSensitive == path.caseSensitive
            }) {
                position = existing
            } else {
                groups.append(Group(percentEncoded: component.percentEncoded, caseSensitive: path.caseSensitive, trie: Trie()))
                position = groups.count - 1
            }
            groups[position].trie.insert(path.requiredPrefix, component: component.index)
        }
        self.always = always
        self.groups = groups
    }

    func withCandidates<Result>(
        context: inout URLContext, _ body: (UnsafeMutableBufferPointer<UInt64>, inout URLContext) -> Result
    ) -> Result {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: words) { bits in
            for word in 0..<words { bits[word] = always[word] }
            for group in groups {
                context.withText(.path, percentEncoded: group.percentEncoded, caseSensitive: group.caseSensitive) { text in
                    let trie = group.trie
                    var node = 0
                    for byte in text {
                        guard let position = trie.keys[node].firstIndex(of: byte) else { break }
                        node = Int(trie.children[node][position])
                        for component in trie.terminals[node] {
                            bits[Int(component) >> 6] |= UInt64(1) << UInt64(component & 63)
                        }
                    }
                }
            }
            return body(bits, &context)
        }
    }
}
