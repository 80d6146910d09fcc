import AASAFetchCore
import CurlTransport
import Foundation
import ArgumentParser

/// How downloads are made; flags named as curl's where curl has one.
struct NetworkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Trust this PEM CA file too (test farms, private servers); results that need it say so.", valueName: "file"), completion: .file(extensions: ["pem", "crt"]))
    var cacert: String?

    @Option(help: ArgumentHelp("Resolve HOST:PORT to ADDR, as curl (repeatable).", valueName: "HOST:PORT:ADDR"))
    var resolve: [String] = []

    @Option(name: .customLong("connect-to"), help: ArgumentHelp("Connect to HOST2:PORT2 instead of HOST:PORT, as curl (repeatable; '::127.0.0.1:8443' sends every host there).", valueName: "HOST:PORT:HOST2:PORT2"))
    var connectTo: [String] = []

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Seconds allowed to connect.", valueName: "seconds"))
    var connectTimeout: Double = 5

    @Option(name: .customLong("max-time"), help: ArgumentHelp("Seconds allowed for one request.", valueName: "seconds"))
    var maxTime: Double = 10

    @Option(name: .customLong("max-size"), help: ArgumentHelp("Largest decoded file accepted, in bytes.", valueName: "bytes"))
    var maxSize: Int = 128 * 1024

    @Flag(name: .customLong("allow-private"), help: "Allow loopback, private and reserved addresses (refused by default, as Apple's CDN does).")
    var allowPrivate = false

    @Option(name: .customLong("user-agent"), help: ArgumentHelp("The User-Agent sent.", valueName: "agent"))
    var userAgent: String = "AASA-Bot/1.0.0"

    @Option(name: .customLong("retry-delays"), help: ArgumentHelp("Seconds to wait before each retry of a transient failure; the count is the number of retries ('' for none).", valueName: "list"))
    var retryDelays: String = "1,3"

    @Option(help: ArgumentHelp("Most downloads at once (one connection per host).", valueName: "n"))
    var concurrency: Int = 32

    @Option(help: ArgumentHelp("Download threads, each with its own curl loop (default: one per core the process may use).", valueName: "n"))
    var threads: Int?

    /// The most `--threads`.
    static let maxThreads = 64

    /// The longest `--connect-timeout` and `--max-time`: a day.
    static let maxSeconds: Double = 86_400
    /// The largest `--max-size`: 1 GiB (Apple's own limit is 128 KiB).
    static let maxSizeLimit = 1 << 30

    /// Every command that downloads validates here, once: durations, sizes, counts, and the
    /// options that end up in request headers or curl's lists (exit 64 for each).
    func validate() throws {
        for (name, seconds) in [("--connect-timeout", connectTimeout), ("--max-time", maxTime)] {
            guard seconds.isFinite, seconds > 0, seconds <= Self.maxSeconds else {
                throw ValidationError("\(name) takes seconds above 0 and at most \(Int(Self.maxSeconds)) (a day), not \(seconds)")
            }
        }
        guard maxSize > 0, maxSize <= Self.maxSizeLimit else { throw ValidationError("--max-size must be between 1 and \(Self.maxSizeLimit) bytes") }
        // Header-like options: a CR or LF would end the User-Agent line and add request headers
        // (a second Host); any control character is refused in them and in curl's lists.
        for (name, values) in [("--user-agent", [userAgent]), ("--resolve", resolve), ("--connect-to", connectTo), ("--cacert", cacert.map { [$0] } ?? [])] {
            for value in values where value.unicodeScalars.contains(where: TerminalText.isControl) {
                throw ValidationError("\(name) must not contain control characters (CR, LF, …): \(TerminalText.escaped(value))")
            }
        }
        guard concurrency >= 1, concurrency <= 4096 else { throw ValidationError("--concurrency must be between 1 and 4096") }
        if let threads, threads < 1 || threads > Self.maxThreads {
            throw ValidationError("--threads must be between 1 and \(Self.maxThreads)")
        }
        guard parsedRetryDelays != nil else {
            throw ValidationError("--retry-delays takes seconds from 0 to \(Int(Self.maxRetryDelay)) separated by commas, e.g. 1,3 ('' for no retries), not '\(TerminalText.escaped(retryDelays))'")
        }
        for entry in resolve {
            if let problem = Self.resolveProblem(entry) {
                throw ValidationError("--resolve takes HOST:PORT:ADDR[,ADDR…] (a port from 1 to 65535, IP addresses): \(problem) in '\(TerminalText.escaped(entry))'")
            }
        }
        for entry in connectTo {
            if let problem = Self.connectToProblem(entry) {
                throw ValidationError("--connect-to takes HOST:PORT:HOST2:PORT2 (each part may be empty, ports from 1 to 65535): \(problem) in '\(TerminalText.escaped(entry))'")
            }
        }
    }

    /// What is wrong with a `--resolve` entry, `nil` when libcurl can use it: `[+]HOST:PORT:ADDR`
    /// with one or more comma-separated IP addresses (IPv6 ones may be bracketed).
    static func resolveProblem(_ entry: String) -> String? {
        let parts = CurlEntry.fields(entry.hasPrefix("+") ? String(entry.dropFirst()) : entry)
        guard parts.count >= 3 else { return "no port and address" }
        guard !parts[0].isEmpty else { return "no host" }
        if let problem = portProblem(parts[1], mayBeEmpty: false) { return problem }
        // Addresses after the port: an IPv6 one may be written without brackets (its colons). No
        // spaces: libcurl refuses `1.2.3.4, 5.6.7.8` when it makes the request.
        for address in parts[2...].joined(separator: ":").split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
            let bare = address.hasPrefix("[") && address.hasSuffix("]") ? String(address.dropFirst().dropLast()) : address
            guard !bare.isEmpty, isIPAddress(bare) else { return "'\(address)' is not an IP address" }
        }
        return nil
    }

    /// What is wrong with a `--connect-to` entry, `nil` when libcurl can use it.
    static func connectToProblem(_ entry: String) -> String? {
        let parts = CurlEntry.fields(entry)
        guard parts.count >= 4 else { return "fewer than four parts" }
        guard parts.count == 4 else { return "more than four parts (an IPv6 address goes in brackets)" }
        return portProblem(parts[1], mayBeEmpty: true) ?? portProblem(parts[3], mayBeEmpty: true)
    }

    private static func portProblem(_ text: some StringProtocol, mayBeEmpty: Bool) -> String? {
        if text.isEmpty { return mayBeEmpty ? nil : "no port" }
        guard text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let port = Int(text), (1...65535).contains(port) else {
            return "'\(text)' is not a port from 1 to 65535"
        }
        return nil
    }

    private static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// The longest pause `--retry-delays` takes: 10 minutes.
    static let maxRetryDelay: Double = 600

    /// The pauses of `--retry-delays`: empty (or blank) for none, else numbers of seconds from 0
    /// to ``maxRetryDelay`` separated by commas; `nil` for anything else (`1,,2`, `,`, `soon`).
    private var parsedRetryDelays: [Double]? {
        guard !retryDelays.allSatisfy(\.isWhitespace) else { return [] }
        var delays: [Double] = []
        for part in retryDelays.split(separator: ",", omittingEmptySubsequences: false).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard let value = Double(part), value.isFinite, value >= 0, value <= Self.maxRetryDelay else { return nil }
            delays.append(value)
        }
        return delays
    }

    /// The options for the fetcher.
    /// - Throws: `address-space-exhausted` when an address-space limit leaves no room for one
    ///   download (``ProcessLimits/concurrency(_:loops:usage:console:)``).
    func fetchOptions() throws(CommandFailure) -> FetchOptions {
        if let cacert { try CAFile.check(cacert, option: "--cacert") }
        var options = FetchOptions()
        options.userAgent = userAgent
        options.connectTimeout = connectTimeout
        options.maxTime = maxTime
        options.maxSize = maxSize
        options.extraCAFile = cacert
        options.resolve = resolve
        options.connectTo = connectTo
        options.allowPrivateAddresses = allowPrivate
        options.retryDelays = parsedRetryDelays ?? [1, 3]
        // No more downloads at once than the open-file limit allows (said once on stderr).
        // Loops: the download threads, plus the one-loop clients a run may add (`refresh`'s CDN
        // client and its webhook client).
        let loops = min(Self.maxThreads, threads ?? CurlClient.defaultThreads)
        // No more loops than leave room for a download (each loop keeps descriptors open).
        let usage = ProcessLimits.Usage.now()
        let loopsFitting = ProcessLimits.loops(loops, extraLoops: 2, usage: usage, console: .standard)
        let fitting = try ProcessLimits.concurrency(concurrency, loops: loopsFitting + 2, usage: usage, console: .standard)
        // Then no more threads than a limit on them allows (a container's pids limit).
        let fitted = try ProcessLimits.fitThreads(concurrency: fitting, loops: loopsFitting, extraLoops: 2, console: .standard)
        options.concurrency = fitted.concurrency
        options.threads = fitted.loops < loops ? fitted.loops : threads
        return options
    }
}
