import AASAFetchCore
import CurlTransport
import Foundation
import Synchronization

/// A transport that answers from a script instead of the network, for unit tests of the run logic
/// (``AASAFetcher``, ``CDNFetcher``, ``RefreshJob``, ``Diagnoser``): each request is matched
/// against the rules in the order they were added, and the first rule that matches gives the next
/// of its answers (the last one repeats). Every request is logged.
///
/// ```swift
/// let transport = ScriptedTransport()
/// transport.on("https://example.com/.well-known/apple-app-site-association", .status(503), .json(body))
/// transport.on("https://example.com/.well-known/apple-app-site-association", when: { $0.userAgent.hasPrefix("Mozilla") }, .json(body))
/// ```
public final class ScriptedTransport: HTTPTransferring, Sendable {
    /// One scripted answer.
    public enum Answer: Sendable {
        /// A complete response.
        case response(TransferResponse)
        /// A transfer failure.
        case failure(TransferFailure)

        /// A response with this status, headers and body (the URL is filled from the request).
        public static func status(_ status: Int, headers: [(String, String)] = [], body: String = "") -> Answer {
            .response(TransferResponse(status: status, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8), url: ""))
        }

        /// A 200 with `Content-Type: application/json` and more headers (`ETag`, `Cache-Control`, …).
        public static func json(_ body: String, headers: [(String, String)] = []) -> Answer {
            .status(200, headers: [("Content-Type", "application/json")] + headers, body: body)
        }

        /// A failure of this kind, after the transfer got as far as `reached`.
        public static func fail(_ kind: TransferFailureKind, _ message: String = "scripted failure", tlsVerifyResult: Int = 0,
                                reached: TransferPhase = .nothing, afterStatus status: Int? = nil) -> Answer {
            var failure = TransferFailure(kind: kind, message: message, tlsVerifyResult: tlsVerifyResult)
            failure.reached = reached
            failure.response = status.map { TransferResponse(status: $0, headers: [], body: [], url: "") }
            return .failure(failure)
        }
    }

    private struct Rule: Sendable {
        var url: String
        var when: @Sendable (TransferRequest) -> Bool
        var answers: [Answer]
        var used = 0
    }

    private struct State: Sendable {
        var rules: [Rule] = []
        var log: [TransferRequest] = []
    }

    private let state = Mutex(State())
    private let fallback: Answer

    /// Creates a transport; requests no rule matches get `fallback` (by default a connection failure).
    public init(fallback: Answer = .fail(.connectFailure, "no scripted answer for this request")) {
        self.fallback = fallback
    }

    /// Adds a rule: requests for `url` (and, with `when`, only those it accepts) get `answers` in
    /// order; once they are used up, the last one repeats.
    public func on(_ url: String, when: @escaping @Sendable (TransferRequest) -> Bool = { _ in true }, _ answers: Answer...) {
        precondition(!answers.isEmpty, "a rule needs an answer")
        state.withLock { $0.rules.append(Rule(url: url, when: when, answers: answers)) }
    }

    /// Every request made, in order.
    public var requests: [TransferRequest] { state.withLock { $0.log } }

    /// The requests made for one URL, in order.
    public func requests(to url: String) -> [TransferRequest] { requests.filter { $0.url == url } }

    public func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse {
        let answer: Answer = state.withLock { state in
            state.log.append(request)
            guard let index = state.rules.firstIndex(where: { $0.url == request.url && $0.when(request) }) else { return fallback }
            let rule = state.rules[index]
            state.rules[index].used += 1
            return rule.answers[min(rule.used, rule.answers.count - 1)]
        }
        switch answer {
        case .response(var response):
            if response.url.isEmpty { response.url = request.url }
            if request.maxBodyBytes < response.body.count {
                // As CurlClient: only a 200 answer's body fails; any other is cut at the limit.
                guard response.status != 200 || !request.failsOnLargeBody else {
                    throw TransferFailure(kind: .tooLarge, message: "scripted body of \(response.body.count) bytes is over \(request.maxBodyBytes)")
                }
                response.body = Array(response.body.prefix(request.maxBodyBytes))
                response.bodyTruncated = true
            }
            return response
        case .failure(let failure):
            throw failure
        }
    }
}

extension TransferRequest {
    /// The value of an extra request header (`If-None-Match`, …), if the request carries it.
    public func header(_ name: String) -> String? {
        let prefix = name.lowercased() + ":"
        return headers.first { $0.lowercased().hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces) }
    }
}

/// Name resolution and TCP connects from a script, for unit tests of ``Diagnoser``: hosts resolve
/// to the addresses given (others fail as an unknown name), connects give the outcome given per
/// address (others connect in 1 ms).
public struct ScriptedNetworkProbe: NetworkProbing {
    private let addresses: [String: [String]]
    private let connects: [String: NetworkConnectOutcome]
    private let resolverShortOfDescriptors: Bool

    /// Creates a probe; `resolverShortOfDescriptors`: every name fails as when the process has no
    /// descriptor left.
    public init(addresses: [String: [String]] = [:], connects: [String: NetworkConnectOutcome] = [:], resolverShortOfDescriptors: Bool = false) {
        self.addresses = addresses
        self.connects = connects
        self.resolverShortOfDescriptors = resolverShortOfDescriptors
    }

    public func resolve(_ host: String, timeout: Double) async -> Result<[String], NetworkProbeError> {
        if resolverShortOfDescriptors { return .failure(NetworkProbeError(message: "Name or service not known", descriptorsExhausted: true)) }
        guard let found = addresses[host], !found.isEmpty else { return .failure(NetworkProbeError(message: "Name or service not known")) }
        return .success(found)
    }

    public func connect(address: String, port: Int, timeout: Double) async -> NetworkConnectOutcome {
        connects[address] ?? .connected(milliseconds: 1)
    }
}
