/// What a pattern is matched against; a path pattern gets Apple's slash normalisation.
public enum PatternRole: Sendable, Hashable {
    /// A `/` pattern or a legacy `paths` entry: leading and trailing runs of `/` are insignificant
    /// on both sides, and a pattern ending in `/*` also matches the path without that segment.
    case path
    /// A `?` string pattern, a query item value pattern or a `#` pattern: compared as written.
    case plain
}

/// One element of a tokenised pattern.
enum PatternToken: Sendable, Hashable {
    /// One byte of a literal (a non-ASCII scalar is several bytes).
    case byte(UInt8)
    /// `?`: exactly one character (one Unicode scalar).
    case anyCharacter
    /// `*`: any run of characters, including `/` and the empty run.
    case star
    /// A predefined one-character class (`$(digit)` …), as a set of ASCII bytes.
    case byteClass(ByteSet)
    /// A substitution variable: one of several alternatives (each without variables).
    case alternation([[PatternToken]])
    /// An undefined variable: nothing matches.
    case never

    /// How a variable's trie shares this token between alternatives (the builder and the state
    /// count read it alike): a byte, `?` or `*` by value; -1 for tokens never shared.
    var trieKey: Int {
        switch self {
        case .byte(let byte): Int(byte)
        case .anyCharacter: 256
        case .star: 257
        case .byteClass, .alternation, .never: -1
        }
    }
}

/// A set of bytes, as a 256-bit mask.
struct ByteSet: Sendable, Hashable {
    var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    static func == (lhs: ByteSet, rhs: ByteSet) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2
            && lhs.words.3 == rhs.words.3
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }

    init() {}

    init(_ range: ClosedRange<UInt8>) {
        for byte in range { insert(byte) }
    }

    init(bytes: some Sequence<UInt8>) {
        for byte in bytes { insert(byte) }
    }

    mutating func insert(_ byte: UInt8) {
        let bit = UInt64(1) << UInt64(byte & 63)
        switch byte >> 6 {
        case 0: words.0 |= bit
        case 1: words.1 |= bit
        case 2: words.2 |= bit
        default: words.3 |= bit
        }
    }

    @inline(__always)
    func contains(_ byte: UInt8) -> Bool {
        let bit = UInt64(1) << UInt64(byte & 63)
        switch byte >> 6 {
        case 0: return words.0 & bit != 0
        case 1: return words.1 & bit != 0
        case 2: return words.2 & bit != 0
        default: return words.3 & bit != 0
        }
    }

    static let all: ByteSet = {
        var set = ByteSet()
        set.words = (~0, ~0, ~0, ~0)
        return set
    }()

    static let ascii = ByteSet(0x00...0x7F)
    static let continuation = ByteSet(0x80...0xBF)
    static let lead2 = ByteSet(0xC2...0xDF)
    static let lead3 = ByteSet(0xE0...0xEF)
    static let lead4 = ByteSet(0xF0...0xF4)
}

/// A pattern compiled once into a form that matches in time linear in the text
/// (`O(text length × transitions)`), never by backtracking.
///
/// Wildcards: `*` any run (including `/`), `?` exactly one character (one Unicode scalar of
/// the text the pattern sees), `?*` at least one. `$(name)` is a substitution variable: a custom
/// one from `substitutionVariables` (which wins over a predefined one of the same name), else one of
/// the eight predefined ones; an undefined variable never matches. A pattern with literal text
/// matches only the whole text (no prefix matching).
public final class CompiledPattern: Sendable {
    /// The pattern as written in the file.
    public let source: String
    /// Whether the pattern is compared case-sensitively.
    public let caseSensitive: Bool
    /// The role, which decides the slash normalisation.
    public let role: PatternRole
    /// The names of `$(name)` references that name no variable (the pattern then never matches).
    public let undefinedVariables: [String]
    /// The names of the variables the pattern references, in order of appearance.
    public let referencedVariables: [String]
    /// Whether the pattern needs more automaton states than ``maxStates`` (or than what its
    /// file's budget had left): it is then never matched, and `lint` reports `pattern-too-complex`.
    /// A hostile file of 16 KB (a variable of 2,000 values referenced 1,000 times) took 1.2 GB.
    public let isTooComplex: Bool

    /// The most automaton states one pattern may build.
    public static let maxStates = 65_536
    /// The most automaton states the patterns of one file may build together.
    public static let maxStatesPerFile = 262_144
    /// The most work (transitions examined: each active state's edges and one more, per byte) the
    /// patterns of a file may take against one URL together: past it an automaton does not match.
    /// States × text length is the cost, and both are bounded apart (65,536 states a pattern,
    /// 262,144 a file, a 1 MiB `--cases` line) but not their product: a line of four such
    /// patterns and a URL of 448,576 bytes ran for more than ten minutes. About a second in a
    /// release build; patterns of 2,000 states in all against a 16 KiB URL fit.
    public static let maxSteps = 1 << 27

    /// What is left of a file's state budget while its patterns compile.
    final class Budget {
        var remaining = CompiledPattern.maxStatesPerFile
    }

    let tokens: [PatternToken]
    let engine: Engine
    /// Literal bytes every matching (normalised, folded) text starts with; for pre-filtering.
    let requiredPrefix: [UInt8]
    /// The longest literal run every matching text contains; checked before running the automaton.
    let requiredFactor: [UInt8]

    /// Whether the pattern matches every text (`*`, and for a path `/*`).
    var matchesEverything: Bool {
        if case .anything = engine { return true }
        return false
    }

    enum Engine: Sendable {
        case anything
        case never
        case exact([UInt8])
        /// The literal, then anything; `alsoExactCount` is set when the literal ends with the
        /// `/` of a trailing `/*`, so the text equal to the literal without it matches too.
        case prefix([UInt8], alsoExactCount: Int?)
        case automaton(Automaton)
    }

    /// Compiles a pattern.
    ///
    /// - Parameters:
    ///   - source: the pattern as written.
    ///   - role: ``PatternRole/path`` for `/` patterns and legacy paths, else ``PatternRole/plain``.
    ///   - caseSensitive: the effective `caseSensitive`.
    ///   - variables: the file's `substitutionVariables`.
    public convenience init(_ source: String, role: PatternRole, caseSensitive: Bool = true, variables: [String: [String]] = [:]) {
        self.init(source, role: role, caseSensitive: caseSensitive, variables: variables, budget: nil)
    }

    /// Compiles a pattern against a file's remaining state ``Budget``.
    init(_ source: String, role: PatternRole, caseSensitive: Bool, variables: [String: [String]], budget: Budget?) {
        self.source = source
        self.role = role
        self.caseSensitive = caseSensitive
        var undefined: [String] = []
        var referenced: [String] = []
        let tokens = Self.tokens(of: source, role: role, caseSensitive: caseSensitive, variables: variables,
                                 undefined: &undefined, referenced: &referenced)
        self.tokens = tokens
        self.undefinedVariables = undefined
        self.referencedVariables = referenced

        // A trailing `/*` (after the trailing slashes were dropped) also matches without the segment.
        var optionalCut: Int?
        if role == .path, let lastNonStar = tokens.lastIndex(where: { $0 != .star }),
           lastNonStar < tokens.count - 1, tokens[lastNonStar] == .byte(0x2F) {
            optionalCut = lastNonStar
        }

        var prefix: [UInt8] = []
        for token in tokens {
            guard case .byte(let byte) = token else { break }
            prefix.append(byte)
        }
        if let cut = optionalCut, prefix.count > cut { prefix.removeLast(prefix.count - cut) }
        self.requiredPrefix = prefix
        var factor: [UInt8] = []
        var run: [UInt8] = []
        for token in tokens[..<(optionalCut ?? tokens.count)] {
            if case .byte(let byte) = token {
                run.append(byte)
                if run.count > factor.count { factor = run }
            } else {
                run.removeAll(keepingCapacity: true)
            }
        }
        self.requiredFactor = factor

        (self.engine, self.isTooComplex) = Self.chooseEngine(tokens: tokens, optionalCut: optionalCut, budget: budget)
    }

    /// The automaton states a pattern needs as the matcher compiles it (0 when it needs no
    /// automaton), counted up to just past ``maxStates``; for `lint`'s `pattern-too-complex`.
    static func automatonStates(_ source: String, role: PatternRole, variables: [String: [String]]) -> Int {
        var undefined: [String] = []
        var referenced: [String] = []
        let tokens = Self.tokens(of: source, role: role, caseSensitive: true, variables: variables, undefined: &undefined, referenced: &referenced)
        guard simpleEngine(tokens: tokens, optionalCut: nil) == nil else { return 0 }
        return 1 + PatternTokenizer.weight(tokens, limit: maxStates)  // the start state and the built ones
    }

    /// The tokens of a pattern as the matcher reads it: a path pattern without its leading and
    /// trailing slashes, variables resolved, runs of `*` merged.
    private static func tokens(
        of source: String, role: PatternRole, caseSensitive: Bool, variables: [String: [String]],
        undefined: inout [String], referenced: inout [String]
    ) -> [PatternToken] {
        var body = source
        if role == .path {
            body = String(body.drop(while: { $0 == "/" }))
            while body.hasSuffix("/") { body.removeLast() }
        }
        return PatternTokenizer.collapsingStars(PatternTokenizer.tokenize(
            body, caseSensitive: caseSensitive, variables: variables, allowVariables: true,
            undefined: &undefined, referenced: &referenced
        ))
    }

    /// The engine of a pattern that needs no automaton (never, anything, a literal, a literal then
    /// `*`); `nil` for one that does.
    private static func simpleEngine(tokens: [PatternToken], optionalCut: Int?) -> Engine? {
        if tokens.contains(.never) { return .never }
        if tokens.allSatisfy({ $0 == .star }) && !tokens.isEmpty { return .anything }
        var literal: [UInt8] = []
        var index = 0
        while index < tokens.count, case .byte(let byte) = tokens[index] {
            literal.append(byte)
            index += 1
        }
        if index == tokens.count { return .exact(literal) }
        if tokens[index...].allSatisfy({ $0 == .star }) { return .prefix(literal, alsoExactCount: optionalCut) }
        return nil
    }

    private static func chooseEngine(tokens: [PatternToken], optionalCut: Int?, budget: Budget?) -> (Engine, tooComplex: Bool) {
        if let simple = simpleEngine(tokens: tokens, optionalCut: optionalCut) { return (simple, false) }
        let limit = min(maxStates, budget?.remaining ?? maxStates)
        let states = 1 + PatternTokenizer.weight(tokens, limit: limit)
        guard states <= limit else { return (.never, true) }
        budget?.remaining -= states
        return (.automaton(Automaton(tokens: tokens, optionalCut: optionalCut)), false)
    }

    /// Whether the pattern matches `text`, the component as the pattern sees it (for a path
    /// pattern the URL's path; slashes are normalised here; for case-insensitive patterns the
    /// text is folded here).
    public func matches(_ text: String) -> Bool {
        matchCost(text).matched
    }

    /// Matches and counts the automaton's work (transitions examined), which is bounded by the
    /// text length times the number of transitions: the proof that matching never backtracks.
    /// `start`: work already done for the same URL (its budget is shared by every pattern).
    public func matchCost(_ text: String, startingAt start: Int = 0) -> (matched: Bool, steps: Int) {
        var bytes = Array(text.utf8)
        if !caseSensitive {
            bytes = bytes.withUnsafeBufferPointer { UTF8Text.caseFolded($0) }
        }
        return bytes.withUnsafeBufferPointer { buffer in
            let normalised = role == .path ? Self.normalisedPath(buffer) : buffer
            var steps = start
            let matched = matches(prepared: normalised, steps: &steps)
            return (matched, steps)
        }
    }

    /// Drops the leading and trailing runs of `/` of a path.
    @inline(__always)
    static func normalisedPath(_ buffer: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var start = 0
        var end = buffer.count
        while start < end, buffer[start] == 0x2F { start += 1 }
        while end > start, buffer[end - 1] == 0x2F { end -= 1 }
        if start == 0 && end == buffer.count { return buffer }
        return UnsafeBufferPointer(rebasing: buffer[start..<end])
    }

    /// Matches text that is already normalised (paths) and folded (case-insensitive patterns).
    @inline(__always)
    func matches(prepared text: UnsafeBufferPointer<UInt8>) -> Bool {
        var steps = 0
        return matches(prepared: text, steps: &steps)
    }

    func matches(prepared text: UnsafeBufferPointer<UInt8>, steps: inout Int) -> Bool {
        switch engine {
        case .anything:
            return true
        case .never:
            return false
        case .exact(let literal):
            steps += 1
            return Self.equal(text, literal)
        case .prefix(let literal, let alsoExactCount):
            steps += 1
            if text.count >= literal.count, Self.hasPrefix(text, literal) { return true }
            if let count = alsoExactCount, text.count == count {
                return Self.hasPrefix(text, literal[0..<count])
            }
            return false
        case .automaton(let automaton):
            if requiredFactor.count >= 2, !Self.contains(text, requiredFactor) { return false }
            return automaton.run(text, steps: &steps)
        }
    }

    /// Whether `factor` occurs in `text`.
    static func contains(_ text: UnsafeBufferPointer<UInt8>, _ factor: [UInt8]) -> Bool {
        guard factor.count <= text.count, let first = factor.first else { return factor.isEmpty }
        var start = 0
        let last = text.count - factor.count
        while start <= last {
            if text[start] == first {
                var offset = 1
                while offset < factor.count, text[start + offset] == factor[offset] { offset += 1 }
                if offset == factor.count { return true }
            }
            start += 1
        }
        return false
    }

    @inline(__always)
    static func equal(_ text: UnsafeBufferPointer<UInt8>, _ literal: [UInt8]) -> Bool {
        guard text.count == literal.count else { return false }
        return hasPrefix(text, literal[...])
    }

    @inline(__always)
    static func hasPrefix(_ text: UnsafeBufferPointer<UInt8>, _ literal: [UInt8]) -> Bool {
        hasPrefix(text, literal[...])
    }

    @inline(__always)
    static func hasPrefix(_ text: UnsafeBufferPointer<UInt8>, _ literal: ArraySlice<UInt8>) -> Bool {
        guard text.count >= literal.count else { return false }
        var index = 0
        for byte in literal {
            if text[index] != byte { return false }
            index += 1
        }
        return true
    }
}

/// Splits a pattern into tokens, resolving substitution variables.
enum PatternTokenizer {
    static let predefinedClasses: [String: ByteSet] = [
        "alpha": ByteSet(bytes: Array(0x41...0x5A) + Array(0x61...0x7A)),
        "upper": ByteSet(0x41...0x5A),
        "lower": ByteSet(0x61...0x7A),
        "alnum": ByteSet(bytes: Array(0x30...0x39) + Array(0x41...0x5A) + Array(0x61...0x7A)),
        "digit": ByteSet(0x30...0x39),
        "xdigit": ByteSet(bytes: Array(0x30...0x39) + Array(0x41...0x46) + Array(0x61...0x66)),
    ]

    /// The names of the eight predefined variables.
    static let predefinedNames: Set<String> = ["alpha", "upper", "lower", "alnum", "digit", "xdigit", "region", "lang"]

    static func tokenize(
        _ pattern: String,
        caseSensitive: Bool,
        variables: [String: [String]],
        allowVariables: Bool,
        undefined: inout [String],
        referenced: inout [String]
    ) -> [PatternToken] {
        let scalars = Array(pattern.unicodeScalars)
        var tokens: [PatternToken] = []
        // A variable referenced many times is resolved once (its alternatives are shared).
        var resolved: [String: PatternToken] = [:]
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case "*":
                tokens.append(.star)
                index += 1
            case "?":
                tokens.append(.anyCharacter)
                index += 1
            case "$" where allowVariables && index + 1 < scalars.count && scalars[index + 1] == "(":
                if let close = closingParenthesis(scalars, from: index + 2) {
                    var name = String.UnicodeScalarView()
                    name.append(contentsOf: scalars[(index + 2)..<close])
                    let variable = String(name)
                    referenced.append(variable)
                    if let token = resolved[variable] {
                        tokens.append(token)
                    } else {
                        let token = resolve(variable, caseSensitive: caseSensitive, variables: variables, undefined: &undefined)
                        resolved[variable] = token
                        tokens.append(token)
                    }
                    index = close + 1
                } else {
                    appendLiteral(scalar, caseSensitive: caseSensitive, to: &tokens)
                    index += 1
                }
            default:
                appendLiteral(scalar, caseSensitive: caseSensitive, to: &tokens)
                index += 1
            }
        }
        return tokens
    }

    /// The index of the `)` closing a `$(` whose name starts at `start`; names cannot hold
    /// `$`, `(` or `)`.
    private static func closingParenthesis(_ scalars: [Unicode.Scalar], from start: Int) -> Int? {
        var index = start
        while index < scalars.count {
            switch scalars[index] {
            case ")": return index
            case "$", "(": return nil
            default: index += 1
            }
        }
        return nil
    }

    private static func appendLiteral(_ scalar: Unicode.Scalar, caseSensitive: Bool, to tokens: inout [PatternToken]) {
        let effective = caseSensitive ? scalar : UTF8Text.folded(scalar)
        UTF8.encode(effective) { tokens.append(.byte($0)) }
    }

    private static func resolve(
        _ name: String, caseSensitive: Bool, variables: [String: [String]], undefined: inout [String]
    ) -> PatternToken {
        var values: [String]
        if let custom = variables[name] {
            values = custom
        } else if let set = predefinedClasses[name] {
            if caseSensitive { return .byteClass(set) }
            var foldedSet = ByteSet()
            for byte in UInt8(0)...UInt8(0x7F) where set.contains(byte) {
                foldedSet.insert(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)
            }
            return .byteClass(foldedSet)
        } else if name == "region" {
            values = ISOTables.regionCodes
        } else if name == "lang" {
            values = ISOTables.languageCodes
        } else {
            undefined.append(name)
            return .never
        }
        var ignoredUndefined: [String] = []
        var ignoredReferenced: [String] = []
        var alternatives: [[PatternToken]] = []
        var seen = Set<[PatternToken]>()
        for value in values {
            let tokens = collapsingStars(tokenize(
                value, caseSensitive: caseSensitive, variables: [:], allowVariables: false,
                undefined: &ignoredUndefined, referenced: &ignoredReferenced
            ))
            if seen.insert(tokens).inserted { alternatives.append(tokens) }
        }
        values.removeAll()
        // Alternatives of exactly one ASCII byte each are a class.
        if !alternatives.isEmpty, alternatives.allSatisfy(isSingleASCIIByte) {
            var set = ByteSet()
            for alternative in alternatives { if case .byte(let byte) = alternative[0] { set.insert(byte) } }
            return .byteClass(set)
        }
        return .alternation(alternatives)
    }

    private static func isSingleASCIIByte(_ tokens: [PatternToken]) -> Bool {
        guard tokens.count == 1, case .byte(let byte) = tokens[0] else { return false }
        return byte < 0x80
    }

    /// The automaton states `tokens` build, counted as ``Automaton/Builder`` adds them (a
    /// variable's alternatives share their common prefixes, as in its trie), stopping once past
    /// `limit`.
    static func weight(_ tokens: [PatternToken], limit: Int) -> Int {
        var total = 0
        for token in tokens {
            total += weight(token, limit: limit - total)
            if total > limit { return total }
        }
        return total
    }

    private static func weight(_ token: PatternToken, limit: Int) -> Int {
        switch token {
        case .byte, .byteClass, .star, .never:
            return 1
        case .anyCharacter:
            return 4
        case .alternation(let alternatives):
            var total = 1  // the join
            var children: [Int: Int] = [:]  // (node << 9 | key) -> child, as the builder shares them
            var nodes = 0
            for alternative in alternatives {
                var node = 0
                for element in alternative {
                    let key = element.trieKey
                    if key >= 0, let child = children[node << 9 | key] {
                        node = child
                        continue
                    }
                    total += weight(element, limit: limit - total)
                    if total > limit { return total }
                    nodes += 1
                    if key >= 0 { children[node << 9 | key] = nodes }
                    node = nodes
                }
            }
            return total
        }
    }

    /// Merges runs of `*` (`**` means the same as `*`).
    static func collapsingStars(_ tokens: [PatternToken]) -> [PatternToken] {
        var result: [PatternToken] = []
        result.reserveCapacity(tokens.count)
        for token in tokens {
            if token == .star, result.last == .star { continue }
            result.append(token)
        }
        return result
    }
}

/// A Thompson automaton over bytes, simulated with a set of active states (no backtracking).
///
/// Variables become a trie of their alternatives, so many values cost states proportional to
/// their total length, never a product of expansions.
struct Automaton: Sendable {
    struct Edge: Sendable {
        var bytes: ByteSet
        var target: Int32
    }

    /// Outgoing consuming edges, state `s` owns `edges[edgeStart[s]..<edgeStart[s + 1]]`.
    let edgeStart: [Int32]
    let edges: [Edge]
    /// ε-closure of each state, state `s` owns `closure[closureStart[s]..<closureStart[s + 1]]`.
    let closureStart: [Int32]
    let closure: [Int32]
    /// For automata of at most 64 states, the ε-closure of each state as a mask.
    let closureMask: [UInt64]
    let accepting: [Bool]
    let acceptingMask: UInt64
    let stateCount: Int
    let start: Int

    init(tokens: [PatternToken], optionalCut: Int?) {
        var builder = Builder()
        let start = builder.newState()
        var current = start
        var extraAccepting: Int?
        for (position, token) in tokens.enumerated() {
            if position == optionalCut { extraAccepting = current }
            current = builder.add(token, from: current)
        }
        var accepting = [Bool](repeating: false, count: builder.edges.count)
        accepting[current] = true
        if let extra = extraAccepting { accepting[extra] = true }

        let count = builder.edges.count
        var edgeStart: [Int32] = [0]
        var edges: [Edge] = []
        for state in 0..<count {
            edges.append(contentsOf: builder.edges[state])
            edgeStart.append(Int32(edges.count))
        }
        var closureStart: [Int32] = [0]
        var closure: [Int32] = []
        var closureMask: [UInt64] = []
        var mark = [Int](repeating: -1, count: count)
        for state in 0..<count {
            var stack = [state]
            var mask: UInt64 = 0
            mark[state] = state
            while let next = stack.popLast() {
                closure.append(Int32(next))
                if count <= 64 { mask |= UInt64(1) << UInt64(next) }
                for target in builder.epsilons[next] where mark[target] != state {
                    mark[target] = state
                    stack.append(target)
                }
            }
            closureStart.append(Int32(closure.count))
            closureMask.append(mask)
        }
        var acceptingMask: UInt64 = 0
        if count <= 64 {
            for state in 0..<count where accepting[state] { acceptingMask |= UInt64(1) << UInt64(state) }
        }
        self.edgeStart = edgeStart
        self.edges = edges
        self.closureStart = closureStart
        self.closure = closure
        self.closureMask = count <= 64 ? closureMask : []
        self.accepting = accepting
        self.acceptingMask = acceptingMask
        self.stateCount = count
        self.start = start
    }

    func run(_ text: UnsafeBufferPointer<UInt8>, steps: inout Int) -> Bool {
        if stateCount <= 64 { return runSmall(text, steps: &steps) }
        return runLarge(text, steps: &steps)
    }

    private func runSmall(_ text: UnsafeBufferPointer<UInt8>, steps: inout Int) -> Bool {
        var current = closureMask[start]
        for byte in text {
            if steps > CompiledPattern.maxSteps { return false }
            var next: UInt64 = 0
            var active = current
            while active != 0 {
                let state = active.trailingZeroBitCount
                active &= active &- 1
                let lower = Int(edgeStart[state])
                let upper = Int(edgeStart[state + 1])
                steps += upper - lower + 1
                for index in lower..<upper where edges[index].bytes.contains(byte) {
                    next |= closureMask[Int(edges[index].target)]
                }
            }
            if next == 0 { return false }
            current = next
        }
        return current & acceptingMask != 0
    }

    private func runLarge(_ text: UnsafeBufferPointer<UInt8>, steps: inout Int) -> Bool {
        let words = (stateCount + 63) >> 6
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: words * 2) { storage -> Bool in
            guard let base = storage.baseAddress else { return false }
            var current = base
            var next = base + words
            current.initialize(repeating: 0, count: words)
            next.initialize(repeating: 0, count: words)
            addClosure(of: start, to: current)
            for byte in text {
                if steps > CompiledPattern.maxSteps { return false }
                var any = false
                for word in 0..<words {
                    var active = current[word]
                    while active != 0 {
                        let state = word << 6 | active.trailingZeroBitCount
                        active &= active &- 1
                        let lower = Int(edgeStart[state])
                        let upper = Int(edgeStart[state + 1])
                        steps += upper - lower + 1
                        for index in lower..<upper where edges[index].bytes.contains(byte) {
                            addClosure(of: Int(edges[index].target), to: next)
                            any = true
                        }
                    }
                }
                if !any { return false }
                swap(&current, &next)
                next.update(repeating: 0, count: words)
            }
            for word in 0..<words {
                var active = current[word]
                while active != 0 {
                    let state = word << 6 | active.trailingZeroBitCount
                    active &= active &- 1
                    if accepting[state] { return true }
                }
            }
            return false
        }
    }

    @inline(__always)
    private func addClosure(of state: Int, to set: UnsafeMutablePointer<UInt64>) {
        for index in Int(closureStart[state])..<Int(closureStart[state + 1]) {
            let member = Int(closure[index])
            set[member >> 6] |= UInt64(1) << UInt64(member & 63)
        }
    }

    /// Builds states, consuming edges and ε-edges.
    struct Builder {
        var edges: [[Edge]] = []
        var epsilons: [[Int]] = []

        mutating func newState() -> Int {
            edges.append([])
            epsilons.append([])
            return edges.count - 1
        }

        mutating func edge(_ from: Int, _ bytes: ByteSet, _ to: Int) {
            edges[from].append(Edge(bytes: bytes, target: Int32(to)))
        }

        /// `?`: one UTF-8 encoded scalar (an ASCII byte, or a lead byte and its continuations).
        mutating func anyCharacter(from: Int, to: Int) {
            let need1 = newState()
            let need2 = newState()
            let need3 = newState()
            edge(from, .ascii, to)
            edge(from, .lead2, need1)
            edge(from, .lead3, need2)
            edge(from, .lead4, need3)
            edge(need3, .continuation, need2)
            edge(need2, .continuation, need1)
            edge(need1, .continuation, to)
        }

        mutating func add(_ token: PatternToken, from current: Int) -> Int {
            switch token {
            case .byte(let byte):
                let next = newState()
                edge(current, ByteSet(bytes: [byte]), next)
                return next
            case .byteClass(let set):
                let next = newState()
                edge(current, set, next)
                return next
            case .anyCharacter:
                let next = newState()
                anyCharacter(from: current, to: next)
                return next
            case .star:
                let next = newState()
                epsilons[current].append(next)
                edge(next, .all, next)
                return next
            case .never:
                return newState()
            case .alternation(let alternatives):
                let join = newState()
                var children: [Int: Int] = [:]  // (state << 9 | key) -> child
                for alternative in alternatives {
                    var node = current
                    for element in alternative {
                        let key = element.trieKey
                        if key >= 0, let child = children[node << 9 | key] {
                            node = child
                            continue
                        }
                        let child = add(element, from: node)
                        if key >= 0 { children[node << 9 | key] = child }
                        node = child
                    }
                    epsilons[node].append(join)
                }
                return join
            }
        }
    }
}
