import AASAFetchCore
import Foundation

/// A SARIF 2.1.0 log: one run whose `tool.driver` (name, version, informationUri) lists one rule
/// per code of ``CodeCatalogue`` (`shortDescription`, `help.text` with the general fix,
/// `defaultConfiguration.level`), and one result per problem (`ruleId`, `ruleIndex`, `level`,
/// `message.text` with the fix, `locations[0].physicalLocation` with the artifact's URI and, when
/// known, `region.startLine`/`startColumn`). Columns count Unicode code points
/// (`columnKind`). The command's tally is the run's `properties.summary`.
///
/// Streamed: the head and the rules first, each result as it comes, the end last; nothing is kept.
/// Every string goes through ``ReportJSONWriter``; absent values are left out (SARIF has no nulls).
struct SARIFWriter: CIWriter {
    let write: (String) -> Void
    private var results = 0
    private let encoder = ReportJSONWriter(style: .pretty)

    init(write: @escaping (String) -> Void) {
        self.write = write
    }

    /// The schema the log names.
    static let schemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    /// Where the tool's rules are documented: Apple's documentation of associated domains (the
    /// project has no home page of its own).
    static let informationURI = "https://developer.apple.com/documentation/xcode/supporting-associated-domains"

    static func level(_ severity: Severity) -> String {
        switch severity {
        case .error: "error"
        case .warning: "warning"
        case .info: "note"
        }
    }

    /// A path or URL as a URI reference: characters outside RFC 3986's unreserved and `/`, `:`
    /// (in a URL), `@` percent-encoded as UTF-8.
    static func uri(_ path: String) -> String {
        let isURL = path.hasPrefix("https://") || path.hasPrefix("http://")
        var allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")
        if isURL { allowed.insert(charactersIn: ":@?=&+") }
        return path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
    }

    struct Text: Encodable {
        var text: String
    }

    struct Rule: Encodable {
        struct Configuration: Encodable {
            var level: String
        }

        var id: String
        var shortDescription: Text
        var help: Text
        var defaultConfiguration: Configuration

        init(_ description: CodeDescription) {
            id = description.code
            shortDescription = Text(text: description.summary)
            help = Text(text: "\(description.summary) Fix: \(description.fix)")
            defaultConfiguration = Configuration(level: SARIFWriter.level(description.severity))
        }
    }

    struct Tool: Encodable {
        struct Driver: Encodable {
            var name = "aasa-fetch"
            var version = AASAFetchVersion.string
            var informationUri = SARIFWriter.informationURI
            var rules: [Rule] = CodeCatalogue.all.map(Rule.init)
        }

        var driver = Driver()
    }

    struct Result: Encodable {
        var problem: CIProblem

        private enum Keys: String, CodingKey {
            case ruleId, ruleIndex, level, message, locations
        }

        private enum LocationKeys: String, CodingKey {
            case physicalLocation
        }

        private enum PhysicalKeys: String, CodingKey {
            case artifactLocation, region
        }

        private enum RegionKeys: String, CodingKey {
            case startLine, startColumn
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(problem.code, forKey: .ruleId)
            if let index = CodeCatalogue.position(of: problem.code) { try container.encode(index, forKey: .ruleIndex) }
            try container.encode(SARIFWriter.level(problem.severity), forKey: .level)
            try container.encode(Text(text: problem.messageWithFix), forKey: .message)
            guard let artifact = problem.location.file ?? problem.location.url else { return }
            var locations = container.nestedUnkeyedContainer(forKey: .locations)
            var location = locations.nestedContainer(keyedBy: LocationKeys.self)
            var physical = location.nestedContainer(keyedBy: PhysicalKeys.self, forKey: .physicalLocation)
            try physical.encode(["uri": SARIFWriter.uri(artifact)], forKey: .artifactLocation)
            // A line and column belong to the local file; a URL alone has no region here.
            if problem.location.file != nil, let line = problem.location.line, line > 0 {
                var region = physical.nestedContainer(keyedBy: RegionKeys.self, forKey: .region)
                try region.encode(line, forKey: .startLine)
                if let column = problem.location.column, column > 0 { try region.encode(column, forKey: .startColumn) }
            }
        }
    }

    /// The head: up to the open `results` array.
    func head() -> String {
        let tool = (try? encoder.string(Tool(), depth: 3)) ?? "{}"
        return """
            {
              "$schema": \(Self.quoted(Self.schemaURI)),
              "version": "2.1.0",
              "runs": [
                {
                  "tool": \(tool),
                  "columnKind": "unicodeCodePoints",
                  "results": [
            """
    }

    static func quoted(_ text: String) -> String {
        (try? ReportJSONWriter(style: .compact).string(text)) ?? "\"\""
    }

    func begin(command: String) {
        write(head())
    }

    private mutating func result(_ problem: CIProblem) {
        guard let text = try? encoder.string(Result(problem: problem), depth: 4) else { return }
        write((results == 0 ? "\n        " : ",\n        ") + text)
        results += 1
    }

    mutating func loose(_ problems: [CIProblem]) {
        for problem in problems { result(problem) }
    }

    func openSuite(_ name: String, counts: CICounts) {}

    mutating func testCase(_ item: CICase) {
        for problem in item.problems { result(problem) }
    }

    func closeSuite() {}

    func finish(summary: String) {
        write(results == 0 ? "],\n" : "\n      ],\n")
        write("""
                  "properties": {"summary": \(Self.quoted(summary))}
                }
              ]
            }

            """)
    }

    /// A whole log for a run that failed before its report: no results, one invocation that did
    /// not succeed, with the failure as its notification.
    static func failureDocument(code: String, message: String, exitCode: Int32) -> String {
        var text = SARIFWriter(write: { _ in }).head()
        text += """
            ],
                  "invocations": [
                    {
                      "executionSuccessful": false,
                      "exitCode": \(exitCode),
                      "toolExecutionNotifications": [
                        {"level": "error", "descriptor": {"id": \(quoted(code))}, "message": {"text": \(quoted(message))}}
                      ]
                    }
                  ]
                }
              ]
            }

            """
        return text
    }
}
