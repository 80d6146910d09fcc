import AASAFetchCLI
import ArgumentParser
import Foundation

/// A command of an example, with what the documentation shows after it.
struct ShownExample {
    /// The command.
    var command: ExampleCommand
    /// Where it was found, for messages (`README.md:42`, `fetch --help`).
    var location: String
    /// The output shown after it (lines up to the next `$` line or the end of the block; none
    /// shown means it prints nothing); `nil` when the document writes a lone `…` instead (the output
    /// is left out), and for `--help` examples (whose description lines are no output).
    var shownOutput: [String]?
    /// The 0-based line range of the shown output in the file (empty range at the insertion
    /// point when nothing is shown).
    var outputLines: Range<Int>?
    /// The exit status shown by a following `$ echo $?` line, and that line's 0-based index + 1
    /// (the status line).
    var shownStatus: (status: String, line: Int)?
}

/// A sequence of examples that run in order in one fresh working folder (one code block of a
/// document, or the examples of one command's `--help`).
struct ExampleGroup {
    /// A stable name: `README.md#3` (the third code block holding a command), `help fetch`.
    var name: String
    /// The commands, in order.
    var examples: [ShownExample]
    /// Whether the store starts with the example app's hosts recorded (the `--help` examples).
    var seeded: Bool
}

/// Finds the examples: `$ aasa-fetch …` lines in the code blocks of the README and `docs/*.md`,
/// and in the `EXAMPLES:` section of every command's `--help`.
enum ExampleSources {
    /// The line that stands for an output a document leaves out.
    static let elision = "…"

    /// The documents whose code blocks are run: `README.md`, then `docs/*.md` by name.
    static func documents(in repository: URL) -> [URL] {
        var documents = [repository.appendingPathComponent("README.md")]
        let docs = repository.appendingPathComponent("docs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []
        documents += names.filter { $0.hasSuffix(".md") }.sorted().map { docs.appendingPathComponent($0) }
        return documents
    }

    /// The groups of one markdown document: one per fenced code block that holds a `$ ` line.
    /// - Parameters:
    ///   - text: The document.
    ///   - name: Its path relative to the repository, for names and messages.
    static func markdownGroups(_ text: String, name: String) throws -> [ExampleGroup] {
        let lines = text.components(separatedBy: "\n")
        var groups: [ExampleGroup] = []
        var index = 0
        while index < lines.count {
            let fence = lines[index].trimmingCharacters(in: .whitespaces)
            guard fence.hasPrefix("```") else {
                index += 1
                continue
            }
            var end = index + 1
            while end < lines.count, !lines[end].trimmingCharacters(in: .whitespaces).hasPrefix("```") { end += 1 }
            let block = Array(lines[(index + 1)..<min(end, lines.count)])
            let examples = try blockExamples(block, firstLine: index + 1, file: name)
            if !examples.isEmpty {
                groups.append(ExampleGroup(name: "\(name)#\(groups.count + 1)", examples: examples, seeded: false))
            }
            index = end + 1
        }
        return groups
    }

    /// The commands of one code block (`firstLine` is the 0-based index of its first line).
    static func blockExamples(_ block: [String], firstLine: Int, file: String) throws -> [ShownExample] {
        var examples: [ShownExample] = []
        var index = 0
        while index < block.count {
            guard block[index].hasPrefix("$ ") else {
                index += 1
                continue
            }
            let start = index
            var text = String(block[index].dropFirst(2))
            while text.hasSuffix("\\"), index + 1 < block.count {
                text.removeLast()
                index += 1
                text += " " + block[index].trimmingCharacters(in: .whitespaces)
            }
            index += 1
            var outputEnd = index
            while outputEnd < block.count, !block[outputEnd].hasPrefix("$ ") { outputEnd += 1 }
            let shown = Array(block[index..<outputEnd])
            let location = "\(file):\(firstLine + start + 1)"
            if text.trimmingCharacters(in: .whitespaces) == "echo $?" {
                guard !examples.isEmpty, trimTrailingBlank(shown).count == 1 else {
                    throw ExampleCommand.Unsupported(description: "\(location): `$ echo $?` must follow a command and show one line, its status")
                }
                examples[examples.count - 1].shownStatus = (shown[0].trimmingCharacters(in: .whitespaces), firstLine + index)
                index = outputEnd
                continue
            }
            let command: ExampleCommand
            do {
                command = try ExampleCommand(text.trimmingCharacters(in: .whitespaces))
            } catch let error as ExampleCommand.Unsupported {
                throw ExampleCommand.Unsupported(description: "\(location): \(error.description)")
            }
            let trimmed = trimTrailingBlank(shown)
            examples.append(ShownExample(
                command: command, location: location,
                shownOutput: trimmed.map { $0.trimmingCharacters(in: .whitespaces) } == [elision] ? nil : trimmed,
                outputLines: (firstLine + index)..<(firstLine + index + trimmed.count)))
            index = outputEnd
        }
        return examples
    }

    /// The examples of a `--help` text: the `  $ aasa-fetch …` lines of its `EXAMPLES:` section
    /// (a line indented further, without `$`, describes the example above it).
    static func helpExamples(_ help: String, command: String) throws -> [ShownExample] {
        var examples: [ShownExample] = []
        var inSection = false
        for line in help.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if !line.hasPrefix(" "), !trimmed.isEmpty {
                inSection = trimmed == "EXAMPLES:"
                continue
            }
            guard inSection, trimmed.hasPrefix("$ ") else { continue }
            let text = String(trimmed.dropFirst(2))
            do {
                examples.append(ShownExample(command: try ExampleCommand(text), location: "\(command) --help"))
            } catch let error as ExampleCommand.Unsupported {
                throw ExampleCommand.Unsupported(description: "\(command) --help: \(error.description)")
            }
        }
        return examples
    }

    /// The `--help` groups: the root command and every subcommand the parser knows (nested ones
    /// included), each with the examples of its help text, which `help` returns for a command path
    /// (e.g. `["fetch"]`; the tests ask the built binary). Commands without examples are left out.
    static func helpGroups(help: ([String]) throws -> String) throws -> [ExampleGroup] {
        var groups: [ExampleGroup] = []
        func visit(_ command: any ParsableCommand.Type, path: [String]) throws {
            let name = (["aasa-fetch"] + path).joined(separator: " ")
            let examples = try helpExamples(try help(path), command: name)
            if !examples.isEmpty {
                groups.append(ExampleGroup(name: "help \(name)", examples: examples, seeded: true))
            }
            for subcommand in command.configuration.subcommands {
                try visit(subcommand, path: path + [subcommand._commandName])
            }
        }
        try visit(AASAFetchCommand.self, path: [])
        return groups
    }

    static func trimTrailingBlank(_ lines: [String]) -> [String] {
        var lines = lines
        while let last = lines.last, last.trimmingCharacters(in: .whitespaces).isEmpty { lines.removeLast() }
        return lines
    }
}
