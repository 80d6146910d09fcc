import CurlTransport
import Foundation

// The `dns` and `tcp` steps of a diagnosis, on the origin route; the download after them (`tls`,
// `http`) is in DiagnoserDownloadSteps.swift.

extension Diagnoser.Walk {
    /// The origin's steps: DNS, a bare TCP connect, then the download (TLS and HTTP).
    /// - Returns: the download's result (`nil` when a step failed before an answer), the URL for
    ///   the user-agent check (`nil` when no HTTP answer was reached) and the user agent that matters.
    mutating func originSteps(host: String, diagnoser: Diagnoser) async -> (result: HostFetchResult?, userAgentURL: String?, userAgent: String) {
        let options = diagnoser.options
        var userAgent = options.userAgent
        if entry.mode != nil, userAgent == FetchOptions().userAgent { userAgent = Diagnoser.deviceUserAgent }
        let target = ConnectTarget(host: host, port: 443, resolve: options.resolve, connectTo: options.connectTo)
        guard let usable = await dnsStep(host: host, target: target, diagnoser: diagnoser),
              await tcpStep(usable, target: target, diagnoser: diagnoser)
        else {
            return (nil, nil, userAgent)
        }
        return await downloadSteps(host: host, userAgent: userAgent, diagnoser: diagnoser)
    }

    /// DNS: every address, private ones flagged; --resolve / --connect-to said where they came from.
    /// - Returns: the addresses to connect to, or `nil` when the step failed.
    mutating func dnsStep(host: String, target: ConnectTarget, diagnoser: Diagnoser) async -> [String]? {
        let options = diagnoser.options
        var dnsDetails: [String] = []
        if let via = target.connectToEntry {
            dnsDetails.append("--connect-to \(via): connections to \(host):443 go to \(target.host):\(target.port)")
        }
        var addresses: [String]
        if let fixed = target.fixedAddresses {
            addresses = fixed
            dnsDetails.append("address\(fixed.count == 1 ? "" : "es") from --resolve \(target.resolveEntry ?? "")")
        } else if NetworkProbe.isNumeric(target.host) {
            addresses = [target.host]
            dnsDetails.append("address from --connect-to")
        } else {
            switch await diagnoser.probe.resolve(target.host, timeout: options.connectTimeout) {
            case .success(let found):
                addresses = found
            case .failure(let error) where error.timedOut:
                // What the download says too (libcurl's lookup counts against the connect time):
                // the records may well exist, the servers did not answer.
                add(DiagnosisStep(step: "dns", title: "DNS", status: .failed, code: "timeout",
                                  summary: "\(target.host) could not be looked up: \(error.message) (--connect-timeout)", details: dnsDetails,
                                  fix: "make the domain's name servers answer within seconds: a device waits about as briefly"))
                return nil
            case .failure(let error) where error.descriptorsExhausted:
                add(DiagnosisStep(step: "dns", title: "DNS", status: .failed, code: "descriptors-exhausted",
                                  summary: "\(target.host) could not be looked up: this process has no file descriptor left (\(error.message))",
                                  details: dnsDetails, fix: "raise the limit of open files (ulimit -n)"))
                return nil
            case .failure(let error):
                let fix = AASAFetcher.fix(for: .dnsFailure)
                add(DiagnosisStep(step: "dns", title: "DNS", status: .failed, code: "dns-failure",
                                  summary: "\(target.host) does not resolve: \(error.message)", details: dnsDetails, fix: fix))
                return nil
            }
        }
        let privateOnes = addresses.filter(AddressPolicy.isPrivateOrReserved)
        dnsDetails += addresses.map { "\($0)" + (privateOnes.contains($0) ? " (private or reserved)" : "") }
        let summary = "\(host) → \(addresses.joined(separator: ", "))"
            + (target.connectToEntry != nil ? " (via --connect-to)" : (target.fixedAddresses != nil ? " (from --resolve)" : ""))
        let privateFix = AASAFetcher.fix(for: .privateAddress)
        if !privateOnes.isEmpty, privateOnes.count == addresses.count, !options.allowPrivateAddresses, entry.mode != nil {
            // A ?mode= entry is fetched by the device itself, never through the CDN: on the same
            // network it may reach these.
            add(DiagnosisStep(step: "dns", title: "DNS", status: .failed, code: "private-address",
                              summary: "\(summary): only private or reserved addresses; a device fetches this ?mode= entry itself and may reach them on its network, but this tool refuses them without --allow-private",
                              details: dnsDetails, fix: "pass --allow-private to check the entry as a device on that network would"))
            return nil
        } else if !privateOnes.isEmpty, privateOnes.count == addresses.count, !options.allowPrivateAddresses {
            add(DiagnosisStep(step: "dns", title: "DNS", status: .failed, code: "private-address",
                              summary: "\(summary): only private or reserved addresses; Apple's CDN refuses them (SWCERR00202) and so does this tool without --allow-private",
                              details: dnsDetails, fix: privateFix))
            return nil
        } else if !privateOnes.isEmpty, entry.mode == nil {
            let why = options.allowPrivateAddresses
                ? "allowed by --allow-private, but Apple's CDN refuses them (SWCERR00202); only ?mode= direct fetches on a device could reach them"
                : "those are skipped; Apple's CDN refuses them too"
            add(DiagnosisStep(step: "dns", title: "DNS", status: .warned, code: "private-address",
                              summary: "\(summary): \(privateOnes.joined(separator: ", ")) private or reserved — \(why)",
                              details: dnsDetails, fix: privateFix))
        } else {
            add(DiagnosisStep(step: "dns", title: "DNS", status: .passed, summary: summary, details: dnsDetails))
        }
        return options.allowPrivateAddresses ? addresses : addresses.filter { !privateOnes.contains($0) }
    }

    /// Seconds as a message shows them: `5`, `0.25`.
    static func seconds(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// TCP: a bare connect to each usable address until one answers.
    /// - Returns: whether one did.
    mutating func tcpStep(_ usable: [String], target: ConnectTarget, diagnoser: Diagnoser) async -> Bool {
        let options = diagnoser.options
        var tcpDetails: [String] = []
        var connected = false
        var sawTimeout = false
        // --connect-timeout bounds the whole step, as it bounds libcurl's connect over every
        // address: each address gets its share of what is left (100 silent addresses took 100
        // times the timeout), and those left when it is spent are named, not tried.
        let deadline = ContinuousClock.now + .milliseconds(Int(options.connectTimeout * 1000))
        for (index, address) in usable.enumerated() {
            let remaining = ContinuousClock.now.duration(to: deadline)
            // A few milliseconds left are none: a connect needs more than that.
            guard remaining > .milliseconds(10) else {
                sawTimeout = true
                tcpDetails.append("\(usable.count - index) more address\(usable.count - index == 1 ? "" : "es") not tried: the --connect-timeout of \(options.connectTimeout) s was spent")
                break
            }
            let seconds = Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18
            let share = max(seconds / Double(usable.count - index), min(seconds, 0.25))
            switch await diagnoser.probe.connect(address: address, port: target.port, timeout: share) {
            case .connected(let milliseconds):
                tcpDetails.append("\(address) port \(target.port): connected in \(milliseconds) ms")
                connected = true
            case .failed(let reason):
                tcpDetails.append("\(address) port \(target.port): \(reason)")
            case .descriptorsExhausted(let reason):
                add(DiagnosisStep(step: "tcp", title: "TCP connect", status: .failed, code: "descriptors-exhausted",
                                  summary: "no socket for \(address) port \(target.port): this process has no file descriptor left (\(reason))",
                                  details: tcpDetails, fix: "raise the limit of open files (ulimit -n)"))
                return false
            case .timedOut:
                sawTimeout = true
                tcpDetails.append("\(address) port \(target.port): no answer within \(Self.seconds(share)) s")
            }
            if connected { break }
        }
        guard connected else {
            let code = sawTimeout ? "timeout" : "connect-failure"
            add(DiagnosisStep(step: "tcp", title: "TCP connect", status: .failed, code: code,
                              summary: "no TCP connection to \(target.host) port \(target.port)", details: tcpDetails,
                              fix: sawTimeout ? "open port \(target.port) to every address (a firewall that drops packets?)" : AASAFetcher.fix(for: .connectFailure)))
            return false
        }
        add(DiagnosisStep(step: "tcp", title: "TCP connect", status: .passed, summary: tcpDetails.last ?? "connected",
                          details: tcpDetails.count > 1 ? tcpDetails : []))
        return true
    }
}

/// Where a connection to HOST:PORT really goes under curl's `--connect-to` and `--resolve`.
struct ConnectTarget {
    /// The host connected to (after `--connect-to`).
    var host: String
    /// The port connected to.
    var port: Int
    /// The `--connect-to` entry used, if any.
    var connectToEntry: String?
    /// Addresses given by a `--resolve` entry, if any.
    var fixedAddresses: [String]?
    /// The `--resolve` entry used, if any.
    var resolveEntry: String?

    init(host: String, port: Int, resolve: [String], connectTo: [String]) {
        self.host = host
        self.port = port
        for entry in connectTo {
            let parts = CurlEntry.fields(entry)
            guard parts.count >= 4 else { continue }
            guard parts[0].isEmpty || parts[0].lowercased() == host.lowercased(), parts[1].isEmpty || Int(parts[1]) == port else { continue }
            self.host = parts[2].isEmpty ? host : Self.unbracket(parts[2])
            self.port = parts[3].isEmpty ? port : (Int(parts[3]) ?? port)
            connectToEntry = entry
            break
        }
        // As libcurl reads `--resolve`: a host of `*` stands for any, and a later entry for the
        // same name and port replaces an earlier one (the last match wins). (Entries with spaces
        // are refused with the options: libcurl would refuse them.)
        for entry in resolve {
            var text = Substring(entry)
            if text.hasPrefix("-") { continue }
            if text.hasPrefix("+") { text = text.dropFirst() }
            let parts = CurlEntry.fields(String(text))
            guard parts.count >= 3, parts[0] == "*" || parts[0].lowercased() == self.host.lowercased(), Int(parts[1]) == self.port else { continue }
            fixedAddresses = parts[2...].joined(separator: ":").split(separator: ",").map { Self.unbracket(String($0)) }
            resolveEntry = entry
        }
    }

    static func unbracket(_ text: String) -> String {
        text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
    }
}

/// curl's `--resolve` and `--connect-to` entries (`HOST:PORT:ADDR`, `HOST:PORT:HOST2:PORT2`).
public enum CurlEntry {
    /// Splits an entry at its colons outside brackets (a bracketed IPv6 address is one field).
    /// The one reader of those entries: `diagnose` follows them with it, and the options are
    /// checked with it.
    public static func fields(_ entry: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var bracket = false
        for character in entry {
            if character == "[" { bracket = true }
            if character == "]" { bracket = false }
            if character == ":", !bracket {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts
    }
}
