import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension AASAFetchCommand {
    /// `aasa-fetch match`: which app a URL opens, as `swcutil` decides it.
    ///
    /// Files come from `--aasa FILE` (served for the URL's host, or `--host`) or are downloaded for
    /// the entries of `--entitlements`/`--domain` (exact host first, then `*.` parents, longest
    /// first). Without `--app-id` every app the files name is answered.
    ///
    /// `--json` prints one ``MatchExplanation`` object per line (per URL and app):
    /// `{"schemaVersion","url","appID","decision":"match|exclude|no_match","host","detail","component":{"kind","index","rule","inherited"},"reason","nearest":{…}}`
    /// (`inherited`: the keys the rule took from `defaults`, each `{"key","level","value"}`).
    /// `--cases FILE|-` speaks the conformance line protocol: `{"id","aasa","domain","appId","url"}`
    /// in, ``CaseReply`` out: `{"schemaVersion","id","decision","error"}` (`error` `{code, message}`
    /// and `decision` `null` for a line that cannot be used). Schemas: docs/schema/match*.schema.json.
    ///
    /// Exit status: 0 every answer is `match` (with `--cases`: every line answered), 1 at least one
    /// `exclude` or `no_match` (with `--cases`: a line could not be used), 2 unusable input, 64 usage.
    struct Match: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "match",
            abstract: "Tell which app a URL opens (match, exclude or no_match) and why.",
            discussion: HelpText.discussion(
                "Answers for --app-id, else the app ID of --entitlements/--app, else every app the files name. Files come from --aasa, or are downloaded for the entries (the store's approved files are used when present).",
                examples: CommandHelp.match, exitCodes: CommandHelp.matchExitCodes)
        )

        @Argument(help: "URLs to decide.") var urls: [String] = []
        @Option(name: .customLong("urls"), help: ArgumentHelp("A file of URLs, one a line ('-' for standard input).", valueName: "file"), completion: .file())
        var urlsFile: String?
        @Option(help: ArgumentHelp("An association file on disk to match against.", valueName: "file"), completion: .file())
        var aasa: String?
        @Option(help: ArgumentHelp("With --aasa: the host the file is served for (default: each URL's host).", valueName: "host"))
        var host: String?
        @Option(help: ArgumentHelp("Conformance line protocol input ('-' for standard input).", valueName: "file"), completion: .file())
        var cases: String?
        @OptionGroup var input: InputOptions
        @OptionGroup var network: NetworkOptions
        @OptionGroup var storage: RunStoreOptions
        @Flag(help: "Print JSON lines.") var json = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        func validate() throws {
            // `--host` names the host an `--aasa` file is served for; elsewhere it would be
            // dropped without a word (each --cases line names its own domain).
            if host != nil && aasa == nil {
                throw ValidationError("--host goes with --aasa FILE: it names the host that file is served for")
            }
            if cases != nil {
                guard urls.isEmpty, urlsFile == nil, aasa == nil, !input.hasEntries else {
                    throw ValidationError("--cases takes no URLs, files or entries: each line carries its own")
                }
                return
            }
            guard !urls.isEmpty || urlsFile != nil else { throw ValidationError("give a URL, --urls FILE or --cases FILE") }
            guard (aasa == nil) == input.hasEntries else {
                throw ValidationError("give either --aasa FILE or --entitlements/--app/--domain/--domains")
            }
        }

        func run() async throws {
            let console = Console.standard
            if let cases {
                try runCases(cases, console: console)
                return
            }
            if json { console.expectJSON(lines: true) }
            let urls = try allURLs()
            let (matcher, apps) = try await makeMatcher(urls: urls, console: console)
            guard !apps.isEmpty else {
                throw CommandFailure(code: "no-app-id", message: "the files name no app for applinks; pass --app-id")
            }
            var allMatch = true
            for url in urls where !console.outputFailed {
                for app in apps {
                    let explanation = matcher.explain(url: url, appID: app)
                    if explanation.decision != .match { allMatch = false }
                    if json {
                        try console.jsonLine(explanation)
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
            console.out("    \(Self.clipped(explanation.reason))")
            if let nearest = explanation.nearest {
                console.out("    nearest rule: \(nearest.host.map { "\($0), " } ?? "")detail \(nearest.detail), \(nearest.component.kind) \(nearest.component.index): \(Self.clipped(nearest.component.rule))")
                if case let inherited = nearest.component.inherited, !inherited.isEmpty {
                    console.out("      from defaults: " + inherited.map(\.summary).joined(separator: ", "))
                }
                for failure in nearest.failures where !explanation.reason.contains(failure.summary) {
                    console.out("      \(failure.summary)")
                }
            }
        }

        /// The most characters of a reason or rule a human line shows: a rule of a 128 KiB file
        /// can be 70 KB long (`--json` keeps it whole).
        static let shownCharacters = 400

        /// `text`, cut to ``shownCharacters`` with a count of what was left out.
        static func clipped(_ text: String) -> String {
            guard text.count > shownCharacters else { return text }
            let rest = text.count - shownCharacters
            return String(text.prefix(shownCharacters)) + "… (\(Plural.count(rest, "more character")); --json shows all)"
        }

        private func allURLs() throws -> [String] {
            var all = urls
            if let urlsFile {
                do throws(LineReaderError) {
                    var reader = urlsFile == "-" ? LineReader(handle: FileHandle.standardInput) : try LineReader(path: urlsFile)
                    defer { reader.close() }
                    while let line = try reader.next() {
                        let url = line.trimmingCharacters(in: .whitespaces)
                        if !url.isEmpty && !url.hasPrefix("#") { all.append(url) }
                    }
                } catch {
                    if case .lineTooLong = error {
                        throw CommandFailure(code: "urls-line-too-long", message: "\(urlsFile): \(error); the file holds one URL a line")
                    }
                    throw CommandFailure(code: "urls-unreadable", message: "cannot read \(urlsFile): \(error)")
                }
            }
            return all
        }

        /// The bytes of the value of the last member `key` of a line's top-level object: from
        /// where the value starts to the comma before the next member (or the object's end),
        /// white space left out.
        static func valueBytes(of key: String, in members: [JSONMember], line: [UInt8]) -> [UInt8]? {
            guard let index = members.lastIndex(where: { $0.key == key }) else { return nil }
            let start = members[index].value.position.offset
            var end = index + 1 < members.count ? members[index + 1].keyPosition.offset : line.count
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
            while end > start, isSpace(line[end - 1]) { end -= 1 }
            // The comma before the next member, or the brace that ends the object.
            if end > start, line[end - 1] == UInt8(ascii: index + 1 < members.count ? "," : "}") { end -= 1 }
            while end > start, isSpace(line[end - 1]) { end -= 1 }
            guard start < end, end <= line.count else { return nil }
            return Array(line[start..<end])
        }

        private static func decode(_ bytes: [UInt8], name: String) throws -> AASADocument {
            // A signed file is read by its content, as fetch reads it.
            var bytes = bytes
            switch CMSUnwrapper.body(bytes) {
            case .plain: break
            case .signed(let content): bytes = content
            case .unusable: throw CommandFailure(code: "invalid-json", message: "\(name): \(CMSUnwrapper.unusableReason)")
            }
            do {
                return try AASADecoder.decodeDocument(bytes)
            } catch {
                throw CommandFailure(code: error.code, message: "\(name): \(error.message)")
            }
        }

        /// Builds the matcher and the apps to answer for: `--app-id`, else the app ID of
        /// `--entitlements`/`--app` (as `fetch` judges it), else every app the files name for applinks.
        private func makeMatcher(urls: [String], console: Console) async throws -> (URLMatcher, [String]) {
            if let aasa {
                let data: [UInt8]
                do {
                    data = try BoundedFile.read(path: aasa, limit: network.maxSize)
                } catch {
                    throw CommandFailure(fileError: error, path: aasa)
                }
                let document = try Self.decode(data, name: aasa)
                let compiled = CompiledAssociation(document: document)
                // `--host` as URL hosts are compared (a Unicode name in Punycode); a URL without a
                // host names none (`https:///a` was matched against a file served for "").
                var hosts = host.map { [URLParts.normalisedHost($0)] } ?? urls.compactMap { URLParts($0)?.host }.filter { !$0.isEmpty }
                hosts = Array(Set(hosts)).sorted()
                var files: [String: CompiledAssociation] = [:]
                for host in hosts { files[host] = compiled }
                let apps = input.appIDs.isEmpty ? document.appIDs(for: .applinks) : input.appIDs
                return (URLMatcher(entitlementDomains: hosts.map { "applinks:\($0)" }, files: files), apps)
            }
            let loaded = try input.load()
            if !input.quiet {
                for finding in loaded.findings { console.err(HumanRenderer.noteLine(finding)) }
            }
            // An entry with an error (`entitlement-not-punycode`, …) never matches on a device, as
            // `fetch` and `diagnose` say of it: it covers no URL here either.
            let applinks = loaded.entries.filter { $0.service == .applinks && $0.isFetchable }
            let entries = applinks.filter { $0.errorCode == nil }
            if !input.quiet {
                for entry in applinks {
                    guard let error = entry.findings.first(where: { $0.severity == .error }) else { continue }
                    console.err("aasa-fetch: \(TerminalText.escaped(entry.raw ?? "")) covers no URL, error \(error.code): \(TerminalText.escaped(error.message))")
                }
            }
            let plan = FetchPlan(entries: entries, prioritizer: DomainPrioritizer(region: input.effectiveRegion))
            // The store's approved files are used when present; only the missing ones are downloaded (and recorded).
            // A stored file over this run's `--max-size` is not used: it is downloaded again, and
            // judged by that limit, as `fetch` would.
            let options = try network.fetchOptions()
            var files: [String: CompiledAssociation] = [:]
            var fileApps: [String] = []
            var missing = plan.fetches
            var stored: (store: any AssociationStore, previous: [HostKey: HostState])?
            if !storage.noStore {
                let database = try await storage.store.open(create: true)
                let previous = try await StoreSession.register(plan: plan, appIDs: loaded.appIDs, in: database, now: Date())
                stored = (database, previous)
                missing = []
                for fetch in plan.fetches {
                    if let state = previous[HostKey(host: fetch.host, route: fetch.route)], (state.approvedSize ?? 0) <= options.maxSize,
                       let document = state.approvedDocument {
                        files[fetch.host] = CompiledAssociation(document: document)
                        for app in document.appIDs(for: .applinks) where !fileApps.contains(app) { fileApps.append(app) }
                    } else {
                        missing.append(fetch)
                    }
                }
            }
            var results: [HostFetchResult] = []
            if !missing.isEmpty {
                let client = CurlClient(maxConnections: options.concurrency, threads: options.threads)
                let progress = ProgressReporter(total: missing.count, enabled: !input.quiet && console.stderrIsTerminal && missing.count > 1)
                results = await AASAFetcher(transport: client, options: options).fetchAll(missing) { done, result in
                    progress.update(done: done, result: result)
                }
                progress.finish()
                await client.shutdown()
            }
            if let stored {
                try await StoreSession.record(results, previous: stored.previous, in: stored.store, now: Date())
            }
            for result in results {
                guard let document = result.document else {
                    console.diagnostic(result.code, "\(result.host): \(result.reason)")
                    continue
                }
                files[result.host] = CompiledAssociation(document: document)
                for app in document.appIDs(for: .applinks) where !fileApps.contains(app) { fileApps.append(app) }
            }
            let apps = loaded.appIDs.isEmpty ? fileApps : loaded.appIDs
            return (URLMatcher(entitlementDomains: entries.compactMap(\.normalized), files: files), apps)
        }

        /// The conformance line protocol: one ``CaseReply`` line per input line.
        private func runCases(_ path: String, console: Console) throws {
            console.expectJSON(lines: true)
            var reader: CaseLineReader
            do {
                reader = try path == "-" ? CaseLineReader(descriptor: 0) : CaseLineReader(path: path)
            } catch {
                throw CommandFailure(code: "file-unreadable", message: "cannot read \(path): \(error)")
            }
            defer { reader.close() }
            // The association files compiled so far, by their bytes; a few, so that memory stays bounded.
            var cache: [Data: CompiledAssociation] = [:]
            var failed = false
            while true {
                let next: CaseLineReader.Line?
                do {
                    next = try reader.next()
                } catch {
                    throw CommandFailure(code: "file-unreadable", message: "cannot read \(path): \(error)")
                }
                guard let next else { break }
                var reply = CaseReply()
                switch next {
                case .tooLong:
                    failed = true
                    reply.error = .init(code: "line-too-long", message: "a line is longer than \(CaseLineReader.maxLineBytes) bytes")
                case .text(let line):
                    guard !line.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) else { continue }
                    do {
                        // One parser for the line, the project's (Foundation's refused valid JSON
                        // such as 1e400, and said nothing useful): the id is echoed exactly, and
                        // the `aasa` value's own bytes are decoded as `--aasa` decodes a file.
                        let parsed: JSONDocument
                        do {
                            parsed = try JSONParser.parse(line)
                        } catch {
                            throw CommandFailure(code: "invalid-line", message: "the line is not JSON: column \(error.column): \(error.message)")
                        }
                        reply.id = parsed.root.member("id").map { CaseReply.ID($0.value) }
                        guard let members = parsed.root.objectMembers else {
                            throw CommandFailure(code: "invalid-line", message: "a line is not a JSON object")
                        }
                        guard let aasa = Self.valueBytes(of: "aasa", in: members, line: line),
                              let url = parsed.root.member("url")?.value.stringValue, let appID = parsed.root.member("appId")?.value.stringValue else {
                            throw CommandFailure(code: "invalid-line", message: "a line needs aasa, and url and appId as strings")
                        }
                        let domainValue = parsed.root.member("domain")?.value
                        if let domainValue, domainValue.stringValue == nil, domainValue.kind != .null {
                            throw CommandFailure(code: "invalid-line", message: "domain is a string when given")
                        }
                        let domain = domainValue?.stringValue ?? ""
                        let bytes = Data(aasa)
                        let compiled: CompiledAssociation
                        if let cached = cache[bytes] {
                            compiled = cached
                        } else {
                            compiled = CompiledAssociation(document: try Self.decode(aasa, name: "aasa"))
                            if cache.count >= CaseLineReader.compiledFilesKept { cache.removeAll() }
                            cache[bytes] = compiled
                        }
                        reply.decision = compiled.decide(url: url, appID: appID, domain: domain).decision.rawValue
                    } catch let failure as CommandFailure {
                        failed = true
                        reply.error = .init(code: failure.code, message: failure.message)
                    } catch {
                        failed = true
                        reply.error = .init(code: "invalid-line", message: error.localizedDescription)
                    }
                }
                try console.jsonLine(reply)
            }
            if failed { throw ExitStatus.failure }
        }
    }
}

/// The lines of `match --cases`, read as they arrive: a reader of the line protocol waits for each
/// answer before it writes the next line, so nothing waits for the end of the input. Memory is
/// bounded: a line longer than ``maxLineBytes`` is answered `line-too-long` and skipped up to its end.
/// Lines end at LF only (a JSON text may hold U+2028 and other separators in its strings).
struct CaseLineReader {
    /// The longest line: 1 MiB (an association file is at most 128 KiB, escaped in its line).
    static let maxLineBytes = 1 << 20
    /// How many compiled association files `match --cases` keeps for the lines that repeat one.
    static let compiledFilesKept = 32
    /// Bytes asked of each `read(2)`.
    static let readSize = 64 * 1024

    /// What ``next()`` gives.
    enum Line: Equatable {
        /// A line without its LF.
        case text([UInt8])
        /// A line over ``maxLineBytes``, skipped.
        case tooLong
    }

    private let descriptor: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// Whether the rest of a too-long line is being skipped.
    private var skipping = false

    /// Reads an open descriptor (standard input), left open by ``close()``.
    init(descriptor: Int32) {
        self.descriptor = descriptor
        ownsDescriptor = false
    }

    /// Opens `path`.
    init(path: String) throws(CaseReadError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw CaseReadError(errno: errno) }
        var status = stat()
        if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            Glibc.close(descriptor)
            throw CaseReadError(errno: EISDIR)
        }
        self.descriptor = descriptor
        ownsDescriptor = true
    }

    /// Closes the file it opened.
    func close() {
        if ownsDescriptor { Glibc.close(descriptor) }
    }

    /// The next line, or `nil` at the end of the input.
    mutating func next() throws(CaseReadError) -> Line? {
        var searchFrom = start
        while true {
            if let end = buffer[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                let length = end - start
                let line = skipping || length > Self.maxLineBytes ? [] : Array(buffer[start..<end])
                start = end + 1
                if skipping {
                    skipping = false
                    searchFrom = start
                    continue
                }
                return length > Self.maxLineBytes ? .tooLong : .text(line)
            }
            if buffer.count - start > Self.maxLineBytes || (skipping && buffer.count > start) {
                // Too long: answered once, then its bytes are dropped as they come.
                buffer.removeAll(keepingCapacity: true)
                start = 0
                searchFrom = 0
                if !skipping {
                    skipping = true
                    return .tooLong
                }
            }
            if atEnd {
                guard start < buffer.count, !skipping else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return .text(line)
            }
            buffer.removeSubrange(0..<start)
            start = 0
            searchFrom = buffer.count
            // Read straight into the buffer's spare room (no chunk allocated per read).
            let filled = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: Self.readSize))
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, Self.readSize) }
            buffer.removeSubrange((filled + max(0, count))...)
            if count < 0 {
                if errno == EINTR { continue }
                throw CaseReadError(errno: errno)
            }
            if count == 0 { atEnd = true }
        }
    }
}

/// A `match --cases` input that cannot be read.
struct CaseReadError: Error, CustomStringConvertible {
    var errno: Int32
    var description: String { SystemReason.text(errno: errno) }
}

/// One reply of the conformance line protocol (`match --cases`): `{"schemaVersion", "id",
/// "decision", "error"}`; `decision` is `null` when the line could not be used, `error` otherwise.
struct CaseReply: Encodable {
    /// The `id` of the request, echoed as any JSON value.
    struct ID: Encodable {
        let value: JSONValue

        init(_ value: JSONValue) {
            self.value = value
        }

        func encode(to encoder: any Encoder) throws {
            switch value.kind {
            case .null:
                var single = encoder.singleValueContainer()
                try single.encodeNil()
            case .bool(let bool):
                var single = encoder.singleValueContainer()
                try single.encode(bool)
            case .number(let number):
                // Echoed as written: 12345678901234567890 came back as 1.2345678901234567e+19, and
                // 1e400 (inf as a Double) ended the whole stream with internal-error.
                var single = encoder.singleValueContainer()
                try single.encode(JSONNumberText(number.text))
            case .string(let string):
                var single = encoder.singleValueContainer()
                try single.encode(string)
            case .array(let elements):
                var unkeyed = encoder.unkeyedContainer()
                for element in elements { try unkeyed.encode(ID(element)) }
            case .object:
                var keyed = encoder.container(keyedBy: JSONMemberKey.self)
                for member in value.uniqueMembers { try keyed.encode(ID(member.value), forKey: JSONMemberKey(member.key)) }
            }
        }
    }

    /// A member name as a coding key.
    struct JSONMemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    var schemaVersion = JSONSchemaVersion.current
    var id: ID?
    var decision: String?
    var error: ErrorDocument.Failure?
}
