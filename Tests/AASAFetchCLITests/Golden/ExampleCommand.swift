import Foundation

/// One `$ aasa-fetch …` line of the documentation or of a `--help` text, split as a shell would.
///
/// The supported shell is small on purpose, so every example is a command a user can paste:
/// words separated by blanks, `'single'` and `"double"` quotes, backslash escapes, a line ending in
/// `\` continued on the next, leading `NAME=value` assignments, and at the end `< FILE` (standard
/// input) and `2>&1` (standard error shown with standard output). Pipes, `;`, `&&`, `>`,
/// `$VARIABLES` and `$(…)` outside quotes are refused with a message.
struct ExampleCommand: Equatable, CustomStringConvertible {
    /// The command as written (continuations joined with a blank), without the `$ ` prompt.
    var text: String
    /// Variables assigned in front of the command.
    var environment: [String: String] = [:]
    /// The arguments after `aasa-fetch`.
    var arguments: [String] = []
    /// A file (relative to the working folder) for standard input.
    var standardInput: String?
    /// Whether standard error is shown with standard output (`2>&1`).
    var mergesStandardError = false

    var description: String { "$ " + text }

    /// Why a line cannot be run.
    struct Unsupported: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses the text after the `$ ` prompt.
    init(_ text: String) throws {
        self.text = text
        var words = try Self.words(text)
        while let first = words.first, let equals = first.firstIndex(of: "="),
            first[..<equals].allSatisfy({ $0 == "_" || $0.isLetter || $0.isNumber }), !first[..<equals].isEmpty
        {
            environment[String(first[..<equals])] = String(first[first.index(after: equals)...])
            words.removeFirst()
        }
        guard words.first == "aasa-fetch" else {
            throw Unsupported(description: "only `aasa-fetch …` commands (and `echo $?`) can be run, not `\(text)`")
        }
        words.removeFirst()
        if words.last == "2>&1" {
            mergesStandardError = true
            words.removeLast()
        }
        if words.count >= 2, words[words.count - 2] == "<" {
            standardInput = words.removeLast()
            words.removeLast()
        }
        if let stray = words.first(where: { ["<", "2>&1"].contains($0) }) {
            throw Unsupported(description: "`\(stray)` is supported only at the end of `\(text)`")
        }
        arguments = words
    }

    /// A short name for file names: the arguments' letters and digits.
    var slug: String {
        let joined = arguments.joined(separator: "-").lowercased()
        var slug = ""
        var lastWasDash = true
        for character in joined {
            if character.isASCII && (character.isLetter || character.isNumber) {
                slug.append(character)
                lastWasDash = false
            } else if !lastWasDash {
                slug.append("-")
                lastWasDash = true
            }
        }
        while slug.hasSuffix("-") { slug.removeLast() }
        if slug.isEmpty { slug = "run" }
        return String(slug.prefix(60)).trimmingCharacters(in: CharacterSet(charactersIn: "-"))
    }

    /// Splits a command into words the way a POSIX shell does for the supported subset.
    static func words(_ text: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var characters = Array(text)[...]
        func refuse(_ what: String) -> Unsupported {
            Unsupported(description: "\(what) is not supported in examples: `\(text)`")
        }
        while let character = characters.popFirst() {
            switch character {
            case " ", "\t", "\n":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            case "'":
                inWord = true
                guard let end = characters.firstIndex(of: "'") else { throw refuse("an unterminated quote") }
                current += characters[..<end]
                characters = characters[characters.index(after: end)...]
            case "\"":
                inWord = true
                var closed = false
                while let inner = characters.popFirst() {
                    if inner == "\"" {
                        closed = true
                        break
                    }
                    if inner == "\\", let next = characters.first, "$`\"\\\n".contains(next) {
                        characters.removeFirst()
                        if next != "\n" { current.append(next) }
                        continue
                    }
                    if inner == "$" || inner == "`" { throw refuse("expansion inside double quotes") }
                    current.append(inner)
                }
                if !closed { throw refuse("an unterminated quote") }
            case "\\":
                guard let next = characters.popFirst() else { break }
                if next == "\n" { continue }
                inWord = true
                current.append(next)
            case "|", ";", "&", "`", "(", ")":
                if character == "&", current == "2>", inWord {
                    current.append(character)
                    continue
                }
                throw refuse("`\(character)`")
            case "$":
                throw refuse("a `$` expansion")
            case ">":
                if current == "2", inWord {
                    current.append(character)
                    continue
                }
                throw refuse("`>` (output redirection)")
            case "<":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
                words.append("<")
            default:
                inWord = true
                current.append(character)
            }
        }
        if inWord { words.append(current) }
        return words
    }
}
