import ArgumentParser
import Foundation
import Testing

@testable import AASAFetchCLI

/// The generated table of every command's arguments (``OptionTable``) is what ArgumentParser
/// describes, so reading it instead of the description changes nothing.
struct OptionTableTests {
    /// The table's source as it must be; with `AASA_REGENERATE=1` the file is written again.
    @Test func theTableIsTheParsersDescription() throws {
        let expected = OptionTable.source(root: AASAFetchCommand.self)
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AASAFetchCLI/OptionTable+Generated.swift").path
        if ProcessInfo.processInfo.environment["AASA_REGENERATE"] == "1" {
            try expected.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let current = try String(contentsOfFile: path, encoding: .utf8)
        #expect(current == expected, "OptionTable+Generated.swift is out of date: run AASA_REGENERATE=1 swift test --filter OptionTableTests")
    }

    /// The compiled table holds every command, each with the arguments its own description gives
    /// and those of the whole tool's description give.
    @Test func theCompiledTableMatchesEveryCommandsDescription() throws {
        let commands = OptionSources.allCommands(AASAFetchCommand.self)
        #expect(Set(OptionTable.arguments.keys) == Set(commands.map(OptionTable.key(of:))))
        for command in commands {
            let described = OptionSpec.describedArguments(of: command)
            #expect(!described.isEmpty, "\(command)")
            let inTable = OptionTable.arguments[OptionTable.key(of: command)] == described
            let read = OptionSpec.arguments(of: command) == described
            #expect(inTable && read, "the table differs from the description of \(command)")
        }
        // The tool's description, command by command: what optionsOfEveryCommand read before the table.
        let tool = try JSONDecoder().decode(ToolDescription.self, from: Data(AASAFetchCommand._dumpHelp().utf8))
        var fromTool: [String: [OptionSpec]] = [:]
        func visit(_ command: ToolDescription.Command) {
            fromTool[command.commandName ?? "", default: []] += OptionSpec.options(from: command.arguments ?? [])
            for subcommand in command.subcommands ?? [] { visit(subcommand) }
        }
        visit(tool.command)
        // (The tool's description also has ArgumentParser's `help` command, which has no options.)
        let fromTable = OptionSpec.optionsOfEveryCommand(AASAFetchCommand.self)
        let differing = Set(fromTable.keys).union(fromTool.keys).filter { (fromTable[$0] ?? []) != (fromTool[$0] ?? []) }
        #expect(differing.isEmpty, "options differ for \(differing.sorted())")
    }
}
