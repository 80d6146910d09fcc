import AASAFetchCore
import ArgumentParser

extension AASAFetchCommand {
    /// `aasa-fetch plan`: parses the entries and shows the downloads a run would make, in order,
    /// without touching the network.
    ///
    /// JSON shape: `{"schemaVersion":1,"region":"CN"|null,"appIDs":[…],"entries":[EntryVerdict…],
    /// "fetches":[{"host","route","tier","entries":[raw…]}],"findings":[…]}` (docs/schema/plan.schema.json).
    struct Plan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "plan",
            abstract: "Show parsed entries, their findings and the downloads in start order (no network).",
            discussion: HelpText.discussion(examples: CommandHelp.plan, exitCodes: CommandHelp.planExitCodes)
        )

        @OptionGroup var input: InputOptions
        @Flag(help: "Print JSON.") var json = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        func run() async throws {
            try input.requireEntries(command: "plan")
            let console = Console.standard
            let loaded = try input.loadOrExit(console: console)
            let region = input.effectiveRegion
            let plan = FetchPlan(entries: loaded.entries, prioritizer: DomainPrioritizer(region: region))
            let output = PlanOutput(
                region: region,
                appIDs: loaded.appIDs,
                entries: loaded.entries.map(EntryVerdict.init(parsed:)),
                fetches: plan.fetches.map { fetch in
                    PlanOutput.Fetch(host: fetch.host, route: fetch.route, tier: fetch.tier,
                                     entries: fetch.entryIndexes.map { loaded.entries[$0].raw ?? "" })
                },
                findings: loaded.findings
            )
            if json {
                try console.json(output)
            } else {
                HumanRenderer(console: console).renderPlan(output)
            }
            if loaded.entries.contains(where: { $0.errorCode != nil }) { throw ExitStatus.failure }
        }
    }
}

/// What `plan --json` prints.
struct PlanOutput: Encodable {
    struct Fetch: Encodable {
        var host: String
        var route: Route
        var tier: Int
        var entries: [String]
    }

    var schemaVersion = JSONSchemaVersion.current
    var region: String?
    var appIDs: [String]
    var entries: [EntryVerdict]
    var fetches: [Fetch]
    var findings: [Finding]
}
