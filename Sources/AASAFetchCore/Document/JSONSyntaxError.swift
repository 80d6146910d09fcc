/// A strict JSON (RFC 8259) syntax error with its exact position.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a stable category (useful to tests and to tailor fixes).
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// No JSON value at all (empty or whitespace-only input, possibly a lone BOM).
        case emptyInput = "empty-input"
        /// Bytes that are not valid UTF-8.
        case invalidUTF8 = "invalid-utf8"
        /// A character that cannot start or continue a value here.
        case unexpectedCharacter = "unexpected-character"
        /// The input ended inside a value.
        case unexpectedEnd = "unexpected-end"
        /// A comma directly before `]` or `}`.
        case trailingComma = "trailing-comma"
        /// `//` or `/* */` comment.
        case comment = "comment"
        /// A string or key in single quotes.
        case singleQuote = "single-quote"
        /// An object key that is not a string (unquoted identifier, number…).
        case unquotedKey = "unquoted-key"
        /// A raw control character (U+0000–U+001F) inside a string.
        case controlCharacter = "control-character"
        /// A backslash escape JSON does not define.
        case invalidEscape = "invalid-escape"
        /// A `\u` escape of a lone or mismatched UTF-16 surrogate.
        case loneSurrogate = "lone-surrogate"
        /// A number with a leading zero, a missing digit, `+`, `.5`, `1.`…
        case invalidNumber = "invalid-number"
        /// `NaN`, `Infinity`, `-Infinity`.
        case nonFiniteNumber = "non-finite-number"
        /// A misspelt or miscased literal (`True`, `nul`, `None`).
        case invalidLiteral = "invalid-literal"
        /// A missing `,` or `:` between tokens.
        case missingSeparator = "missing-separator"
        /// Text after the top-level value.
        case trailingGarbage = "trailing-garbage"
        /// Arrays and objects nested deeper than the parser's limit.
        case tooDeep = "too-deep"
    }

    /// The category.
    public var kind: Kind
    /// 1-based line.
    public var line: Int
    /// 1-based column, counted in Unicode scalars.
    public var column: Int
    /// 0-based byte offset into the input.
    public var offset: Int
    /// What is wrong, for people.
    public var message: String
    /// A short excerpt of the offending line around the position (at most ~60 characters).
    public var excerpt: String

    /// Creates an error.
    public init(kind: Kind, line: Int, column: Int, offset: Int, message: String, excerpt: String) {
        self.kind = kind
        self.line = line
        self.column = column
        self.offset = offset
        self.message = message
        self.excerpt = excerpt
    }

    /// `line:column: message`.
    public var description: String { "\(line):\(column): \(message)" }
}
