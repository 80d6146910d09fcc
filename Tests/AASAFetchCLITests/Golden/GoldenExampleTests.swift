import AASAFetchTestSupport
import Foundation
import Testing

/// The documentation's examples are tests.
///
/// Every `$ aasa-fetch …` line in a code block of `README.md` or `docs/*.md`, and every
/// `$ aasa-fetch …` line in the `EXAMPLES:` section of a command's `--help`, runs against the
/// example sites of `scripts/demo` (``ExampleSites``); its exit status and standard output,
/// normalised, must equal its golden file in `Tests/Golden/`. In the documents, the output shown
/// after a command (and the status shown by a following `$ echo $?`) must equal what it printed,
/// after the same normalisation, so a document cannot drift from the tool.
///
/// The commands of one code block run in order in one fresh working folder (so one may record
/// into the store and the next read it); the examples of one command's `--help` run in order in
/// one fresh folder whose store already holds the example app's hosts.
///
/// To accept changed outputs on purpose: `AASA_UPDATE_GOLDEN=1 swift test --filter Golden`
/// rewrites the golden files and the outputs shown in the documents.
@Suite(.serialized, .timeLimit(.minutes(15)))
struct GoldenExampleTests {
    @Test("Every $ aasa-fetch line of the README and docs/*.md prints its golden output")
    func documentExamples() async throws {
        var plans: [(document: URL, relative: String, groups: [ExampleGroup])] = []
        for document in ExampleSources.documents(in: TestPaths.repository) {
            guard let text = try? String(contentsOf: document, encoding: .utf8) else { continue }
            let relative = String(document.path.dropFirst(TestPaths.repository.path.count + 1))
            plans.append((document, relative, try ExampleSources.markdownGroups(text, name: relative)))
        }
        let readme = try #require(plans.first { $0.relative == "README.md" })
        #expect(!readme.groups.isEmpty, "the README shows no `$ aasa-fetch` example")

        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        for plan in plans {
            let folder = String(plan.relative.dropLast(3))
            var edits: [DocumentEdit] = []
            let written = try run(plan.groups, folder: folder, sites: sites, edits: &edits)
            try checkStale(folder: folder, written: written)
            if GoldenFiles.updating, !edits.isEmpty {
                try DocumentEdit.apply(edits, to: plan.document)
            }
        }
    }

    @Test("Every example of every command's --help prints its golden output")
    func helpExamples() async throws {
        let groups = try ExampleSources.helpGroups { path in
            let result = try ChildProcess.run(
                ToolRunner.binary, path + ["--help"], environment: ["COLUMNS": "10000"], timeout: .seconds(30))
            guard result.status == 0 else {
                throw TestSupportError("aasa-fetch \(path.joined(separator: " ")) --help failed: \(result.standardError)")
            }
            return result.standardOutput
        }
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        var edits: [DocumentEdit] = []
        var written: Set<String> = []
        for group in groups {
            let folder = "help/" + group.name.dropFirst("help ".count).split(separator: " ").last.map(String.init)!
            written.formUnion(try run([group], folder: folder, sites: sites, edits: &edits))
        }
        for folder in Set(written.map { ($0 as NSString).deletingLastPathComponent }).union(existingHelpFolders()) {
            try checkStale(folder: folder, written: written)
        }
    }

    // MARK: - Running and comparing

    /// Runs the groups; compares (or, when updating, writes) their golden files under `folder`;
    /// collects the document edits that would make shown outputs equal; returns the golden paths.
    private func run(_ groups: [ExampleGroup], folder: String, sites: ExampleSites, edits: inout [DocumentEdit]) throws -> Set<String> {
        var written: Set<String> = []
        var number = 0
        for group in groups {
            let runner = try ExampleRunner(sites: sites)
            defer { runner.cleanUp() }
            if group.seeded { try runner.seed() }
            let normalizer = runner.normalizer
            for example in group.examples {
                number += 1
                let outcome = try runner.run(example.command)
                let path = String(format: "%@/%02d-%@.txt", folder, number, example.command.slug)
                written.insert(path)
                let golden = GoldenFiles.render(
                    command: example.command, status: outcome.status, output: normalizer.normalize(outcome.output))
                if GoldenFiles.updating {
                    if GoldenFiles.read(path) != golden { try GoldenFiles.write(path, golden) }
                } else if let stored = GoldenFiles.read(path) {
                    #expect(
                        stored == golden,
                        """
                        \(example.location) (\(group.name)): \(example.command) differs from Tests/Golden/\(path): \
                        \(GoldenFiles.firstDifference(stored, golden))
                        stderr: \(outcome.standardError.prefix(2000))
                        If the change is intended: \(GoldenFiles.updateCommand)
                        """)
                } else {
                    Issue.record("\(example.location): \(example.command) has no golden file Tests/Golden/\(path); create it with \(GoldenFiles.updateCommand)")
                }
                compareShown(example, outcome: outcome, normalizer: normalizer, edits: &edits)
            }
        }
        return written
    }

    /// Compares what the document shows after a command with what it printed.
    private func compareShown(_ example: ShownExample, outcome: ExampleRunner.Outcome, normalizer: OutputNormalizer, edits: inout [DocumentEdit]) {
        if let shown = example.shownOutput, let lines = example.outputLines {
            let expected = normalizer.normalize(shown.joined(separator: "\n"))
            let actual = normalizer.normalize(outcome.output)
            if expected != actual {
                if GoldenFiles.updating {
                    let display = ExampleSources.trimTrailingBlank(
                        normalizer.display(outcome.output).components(separatedBy: "\n").map { line in
                            var line = line
                            while line.last == " " { line.removeLast() }
                            return line
                        })
                    edits.append(DocumentEdit(lines: lines, replacement: display))
                } else {
                    Issue.record(
                        """
                        \(example.location): the output shown after \(example.command) is not what it prints: \
                        \(GoldenFiles.firstDifference(expected, actual))
                        If the change is intended: \(GoldenFiles.updateCommand)
                        """)
                }
            }
        }
        if let (status, line) = example.shownStatus, status != String(outcome.status) {
            if GoldenFiles.updating {
                edits.append(DocumentEdit(lines: line..<(line + 1), replacement: [String(outcome.status)]))
            } else {
                Issue.record("\(example.location): `echo $?` after \(example.command) shows \(status), but it exits with \(outcome.status)")
            }
        }
    }

    /// Golden files under `folder` that no example wrote: removed when updating, else a failure.
    private func checkStale(folder: String, written: Set<String>) throws {
        for path in GoldenFiles.existing(in: folder).subtracting(written).sorted() {
            if GoldenFiles.updating {
                GoldenFiles.remove(path)
            } else {
                Issue.record("Tests/Golden/\(path) belongs to no example any more; remove it with \(GoldenFiles.updateCommand)")
            }
        }
    }

    private func existingHelpFolders() -> Set<String> {
        let help = GoldenFiles.root.appendingPathComponent("help")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: help.path)) ?? []
        return Set(names.map { "help/\($0)" })
    }
}

/// A replacement of lines of a document (the shown output of an example, when updating).
struct DocumentEdit {
    /// The 0-based lines replaced.
    var lines: Range<Int>
    /// The new lines.
    var replacement: [String]

    /// Applies edits to a file, from the bottom up so earlier line numbers stay valid.
    static func apply(_ edits: [DocumentEdit], to document: URL) throws {
        var lines = try String(contentsOf: document, encoding: .utf8).components(separatedBy: "\n")
        for edit in edits.sorted(by: { $0.lines.lowerBound > $1.lines.lowerBound }) {
            lines.replaceSubrange(edit.lines, with: edit.replacement)
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: document)
    }
}
