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
    /// fails. A `$(` without its closing parenthesis is kept as written.
    public static func expand(_ text: String, definitions: [String: String]) -> Result<String, Unresolved> {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return .success(text) }
        var output = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            if character == "$", next < text.endIndex, text[next] == "(" || text[next] == "{" {
                let closer: Character = text[next] == "(" ? ")" : "}"
                if let end = text[next...].firstIndex(of: closer) {
                    let name = String(text[text.index(after: next)..<end])
                    guard let value = definitions[name] else { return .failure(Unresolved(name: name)) }
                    output += value
                    index = text.index(after: end)
                    continue
                }
            }
            output.append(character)
            index = next
        }
        return .success(output)
    }
}
