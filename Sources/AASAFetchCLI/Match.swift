import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation

extension AASAFetchCommand {
    /// `aasa-fetch match`: which app a URL opens, as `swcutil` decides it.
    ///
    /// Files come from `--aasa FILE` (served for the URL's host, or `--host`) or are downloaded for
    /// the entries of `--entitlements`/`--domain` (exact host first, then `*.` parents, longest
    /// first). Without `--app-id` every app the files name is answered.
    ///
    /// `--json` prints one ``MatchExplanation`` object per line (per URL and app):
    /// `{"url","appID","decision":"match|exclude|no_match","host","detail","component":{"kind","index","rule"},"reason","nearest":{…}}`.
    /// `--cases FILE|-` speaks the conformance line protocol: `{"id","aasa","domain","appId","url"}`
    /// in, `{"id","decision"}` out (or `{"id","error"}` for a line that cannot be used).
    ///
    /// Exit status: 0 every answer is `match` (with `--cases`: every line answered), 1 at least one
    /// `exclude` or `no_match` (with `--cases`: a line could not be used), 2 unusable input, 64 usage.
    struct Match: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tell which app a URL opens (match, exclude or no_match) and why."
        )

        @Argument(help: "URLs to decide.") var urls: [String] = []
        @Option(name: .customLong("urls"), help: ArgumentHelp("A file of URLs, one a line ('-' for standard input).", valueName: "file"))
        var urlsFile: String?
        @Option(help: ArgumentHelp("An association file on disk to match against.", valueName: "file"))
        var aasa: String?
        @Option(help: ArgumentHelp("With --aasa: the host the file is served for (default: each URL's host).", valueName: "host"))
        var host: String?
        @Option(help: ArgumentHelp("Conformance line protocol input ('-' for standard input).", valueName: "file"))
        var cases: String?
        @Option(name: .customLong("entitlements"), help: ArgumentHelp("Entitlements whose domains are downloaded and matched.", valueName: "file"))
        var entitlementsPath: String?
        @Option(name: .customLong("app"), help: ArgumentHelp("A built app (.ipa, .app or Mach-O) whose signed domains are downloaded and matched; default app: its app ID.", valueName: "path"))
        var appPath: String?
        @Option(name: .customLong("domain"), help: ArgumentHelp("An entitlement entry (repeatable).", valueName: "entry"))
        var domains: [String] = []
        @Option(name: .customLong("define"), help: ArgumentHelp("A value for an Xcode variable (repeatable).", valueName: "NAME=VALUE"))
        var definitions: [String] = []
        @Option(name: .customLong("app-id"), help: ArgumentHelp("The app to answer for (repeatable); default every app the files name.", valueName: "id"))
        var appIDs: [String] = []
        @OptionGroup var network: NetworkOptions
        @OptionGroup var store: StoreOptions
        @Flag(name: .customLong("no-store"), help: "With --entitlements/--domain: download every file and record nothing.") var noStore = false
        @Flag(help: "Print JSON lines.") var json = false

        func validate() throws {
            if cases != nil {
                guard urls.isEmpty, urlsFile == nil, aasa == nil, entitlementsPath == nil, appPath == nil, domains.isEmpty else {
                    throw ValidationError("--cases takes no URLs, files or entries: each line carries its own")
                }
                return
            }
            guard !urls.isEmpty || urlsFile != nil else { throw ValidationError("give a URL, --urls FILE or --cases FILE") }
            let sources = (aasa == nil ? 0 : 1) + (entitlementsPath == nil && appPath == nil && domains.isEmpty ? 0 : 1)
            guard sources == 1 else { throw ValidationError("give either --aasa FILE or --entitlements/--app/--domain") }
        }

        func run() async throws {
            let console = Console.standard
            if let cases {
                try runCases(cases, console: console)
                return
            }
            let urls: [String]
            let matcher: URLMatcher
            let fileApps: [String]
            do {
                urls = try allURLs()
                (matcher, fileApps) = try await makeMatcher(urls: urls, console: console)
            } catch let failure as CommandFailure {
                console.err("aasa-fetch: \(failure.code): \(failure.message)")
                throw ExitStatus.cannotRun
            }
            let apps = appIDs.isEmpty ? fileApps : appIDs
            guard !apps.isEmpty else {
                console.err("aasa-fetch: no-app-id: the files name no app for applinks; pass --app-id")
                throw ExitStatus.cannotRun
            }
            var allMatch = true
            for url in urls where !console.outputFailed {
                for app in apps {
                    let explanation = matcher.explain(url: url, appID: app)
                    if explanation.decision != .match { allMatch = false }
                    if json {
                        console.outJSON(try JSONOutput.line(explanation))
                    } else {
                        render(explanation, console: console)
                    }
                }
            }
            if !allMatch { throw ExitStatus.failure }
        }

        private func render(_ explanation: MatchExplanation, console: Console) {
            let word: String
            switch explanation.decision {
            case .match: word = console.paint("match   ", .green)
            case .exclude: word = console.paint("exclude ", .yellow)
            case .noMatch: word = console.paint("no_match", .red)
            }
            console.out("\(word) \(explanation.url)  \(explanation.appID)")
            console.out("    \(explanation.reason)")
            if let nearest = explanation.nearest {
                console.out("    nearest rule: \(nearest.host.map { "\($0), " } ?? "")detail \(nearest.detail), \(nearest.component.kind) \(nearest.component.index): \(nearest.component.rule)")
                for failure in nearest.failures where !explanation.reason.contains(failure.summary) {
                    console.out("      \(failure.summary)")
                }
            }
        }

        private func allURLs() throws -> [String] {
            var all = urls
            if let urlsFile {
                let text: String
                if urlsFile == "-" {
                    text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
                } else {
                    do {
                        text = try String(contentsOfFile: urlsFile, encoding: .utf8)
                    } catch {
                        throw CommandFailure(code: "urls-unreadable", message: "cannot read \(urlsFile): \(error.localizedDescription)")
                    }
                }
                all += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            }
            return all
        }

        private static func decode(_ bytes: [UInt8], name: String) throws -> AASADocument {
            do {
                return try AASADecoder.decodeDocument(bytes)
            } catch {
                throw CommandFailure(code: error.code, message: "\(name): \(error.message)")
            }
        }

        /// Builds the matcher and the list of apps the files name for applinks.
        private func makeMatcher(urls: [String], console: Console) async throws -> (URLMatcher, [String]) {
            if let aasa {
                let data: Data
                do {
                    data = aasa == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: aasa))
                } catch {
                    throw CommandFailure(code: "file-unreadable", message: "cannot read \(aasa): \(error.localizedDescription)")
                }
                let document = try Self.decode([UInt8](data), name: aasa)
                let compiled = CompiledAssociation(document: document)
                var hosts = host.map { [$0.lowercased()] } ?? urls.compactMap { URLParts($0)?.host }
                hosts = Array(Set(hosts)).sorted()
                var files: [String: CompiledAssociation] = [:]
                for host in hosts { files[host] = compiled }
                return (URLMatcher(entitlementDomains: hosts.map { "applinks:\($0)" }, files: files), document.appIDs(for: .applinks))
            }
            var strings: [String?] = []
            if let entitlementsPath {
                do {
                    strings += try EntitlementsFile.read(path: entitlementsPath).associatedDomains
                } catch {
                    throw CommandFailure(code: error.code, message: "\(entitlementsPath): \(error.message)")
                }
            }
            var appID: String?
            if let appPath {
                let app = try AppEntitlementsLoader.load(appPath)
                strings += app.file.associatedDomains
                appID = app.file.applicationIdentifier.flatMap { AppID.expand($0, definitions: app.definitions) }
            }
            strings += domains.map { Optional($0) }
            var table: [String: String] = [:]
            for definition in definitions {
                if let equals = definition.firstIndex(of: "=") {
                    table[String(definition[..<equals])] = String(definition[definition.index(after: equals)...])
                }
            }
            let entries = EntryParser(definitions: table).parse(strings).filter { $0.service == .applinks && $0.isFetchable }
            let plan = FetchPlan(entries: entries, prioritizer: DomainPrioritizer(region: nil))
            // The store's approved files are used when present; only the missing ones are downloaded (and recorded).
            var files: [String: CompiledAssociation] = [:]
            var apps: [String] = []
            var missing = plan.fetches
            var stored: (store: any AssociationStore, previous: [HostKey: HostState])?
            if !noStore {
                let database = try await store.open(create: true)
                let appIDs = self.appIDs
                let previous = try await StoreSession.register(plan: plan, appIDs: appIDs, in: database, now: Date())
                stored = (database, previous)
                missing = []
                for fetch in plan.fetches {
                    if let document = previous[HostKey(host: fetch.host, route: fetch.route)]?.approvedDocument {
                        files[fetch.host] = CompiledAssociation(document: document)
                        for app in document.appIDs(for: .applinks) where !apps.contains(app) { apps.append(app) }
                    } else {
                        missing.append(fetch)
                    }
                }
            }
            let options = network.fetchOptions
            var results: [HostFetchResult] = []
            if !missing.isEmpty {
                let client = CurlClient(maxConnections: options.concurrency)
                results = await AASAFetcher(transport: client, options: options).fetchAll(missing)
                await client.shutdown()
            }
            if let stored {
                try await StoreSession.record(results, previous: stored.previous, in: stored.store, now: Date())
            }
            for result in results {
                guard let document = result.document else {
                    console.err("aasa-fetch: \(result.host): \(result.code): \(result.reason)")
                    continue
                }
                files[result.host] = CompiledAssociation(document: document)
                for app in document.appIDs(for: .applinks) where !apps.contains(app) { apps.append(app) }
            }
            return (URLMatcher(entitlementDomains: entries.compactMap(\.normalized), files: files), appID.map { [$0] } ?? apps)
        }

        /// The conformance line protocol.
        private func runCases(_ path: String, console: Console) throws {
            let data: Data
            do {
                data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                console.err("aasa-fetch: file-unreadable: cannot read \(path): \(error.localizedDescription)")
                throw ExitStatus.cannotRun
            }
            var cache: [Data: CompiledAssociation] = [:]
            var failed = false
            for line in data.split(separator: UInt8(ascii: "\n")) where !line.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) {
                var response: [String: Any] = [:]
                do {
                    guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
                        throw CommandFailure(code: "invalid-line", message: "a line is not a JSON object")
                    }
                    response["id"] = object["id"] ?? NSNull()
                    guard let aasa = object["aasa"], let url = object["url"] as? String, let appID = object["appId"] as? String else {
                        throw CommandFailure(code: "invalid-line", message: "a line needs aasa, url and appId")
                    }
                    let domain = object["domain"] as? String ?? ""
                    let bytes = try JSONSerialization.data(withJSONObject: aasa, options: [.fragmentsAllowed])
                    let compiled: CompiledAssociation
                    if let cached = cache[bytes] {
                        compiled = cached
                    } else {
                        compiled = CompiledAssociation(document: try Self.decode([UInt8](bytes), name: "aasa"))
                        cache[bytes] = compiled
                    }
                    response["decision"] = compiled.decide(url: url, appID: appID, domain: domain).decision.rawValue
                } catch let failure as CommandFailure {
                    failed = true
                    response["error"] = "\(failure.code): \(failure.message)"
                } catch {
                    failed = true
                    response["error"] = "invalid-line: \(error.localizedDescription)"
                }
                if response["id"] == nil { response["id"] = NSNull() }
                let out = try JSONSerialization.data(withJSONObject: response, options: [.sortedKeys, .withoutEscapingSlashes])
                console.outJSON(String(decoding: out, as: UTF8.self))
            }
            if failed { throw ExitStatus.failure }
        }
    }
}
