/// Xcode build-setting variables in entitlements (`$(APP_DOMAIN)`, `${AppIdentifierPrefix}`), set
/// only when the app is built: `--define NAME=VALUE` gives their values. One reader for entries and
/// for the `application-identifier`.
public enum XcodeVariables {
    /// A variable no definition gives.
    public struct Unresolved: Error, Sendable, Hashable, CustomStringConvertible {
        /// Its name.
        public var name: String
        public var description: String { name }
    }

    /// `text` with every `$(NAME)` and `${NAME}` replaced by its value; the first undefined name
    /// fails. A reference may nest as in Xcode (`$(HOST_$(CONFIGURATION))`: the inner one is
    /// expanded first, to at most 8 levels). A `$(` without its closing parenthesis is kept as written.
    public static func expand(_ text: String, definitions: [String: String]) -> Result<String, Unresolved> {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return .success(text) }
        return expand(Substring(text), definitions: definitions, depth: 0)
    }

    private static let maxDepth = 8

    private static func expand(_ text: Substring, definitions: [String: String], depth: Int) -> Result<String, Unresolved> {
        var output = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            if character == "$", next < text.endIndex, text[next] == "(" || text[next] == "{",
               let end = closing(in: text, opening: next) {
                let inner = text[text.index(after: next)..<end]
                guard depth < maxDepth else { return .failure(Unresolved(name: String(inner))) }
                let name: String
                switch expand(inner, definitions: definitions, depth: depth + 1) {
                case .success(let expanded): name = expanded
                case .failure(let unresolved): return .failure(unresolved)
                }
                guard let value = definitions[name] else { return .failure(Unresolved(name: name)) }
                output += value
                index = text.index(after: end)
                continue
            }
            output.append(character)
            index = next
        }
        return .success(output)
    }

    /// The index of the parenthesis or brace that closes the one at `opening`, past nested
    /// references; `nil` when it is never closed.
    private static func closing(in text: Substring, opening: Substring.Index) -> Substring.Index? {
        var closers: [Character] = [text[opening] == "(" ? ")" : "}"]
        var index = text.index(after: opening)
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            if character == "$", next < text.endIndex, text[next] == "(" || text[next] == "{" {
                closers.append(text[next] == "(" ? ")" : "}")
                index = text.index(after: next)
                continue
            }
            if character == closers.last {
                closers.removeLast()
                if closers.isEmpty { return index }
            }
            index = next
        }
        return nil
    }
}
