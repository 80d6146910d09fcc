import CurlTransport
import Foundation

/// What the store says about one host and route now: whether it associates, its last code, and
/// its findings with their fixes, judged from the stored last response by the same code a live run
/// uses (``AASAFetcher``'s classification, ``CDNFetcher``'s for the CDN route, and
/// ``AssociationJudge`` for the apps that need the host). `refresh --metrics` and `report --html`
/// read hosts through it; `show` gives its per-entry ``associations``.
public struct StoredVerdict: Sendable {
    /// One entry and app ID that need the host, and whether the host's file associates them.
    public struct Association: Sendable, Hashable, Encodable {
        /// The entry, e.g. `applinks:*.example.com`.
        public var entry: String
        /// The service.
        public var service: Service
        /// The app ID; `nil` when the run that recorded the need knew none.
        public var appID: String?
        /// `true` listed, `false` not (or the host fails), `nil` when no app ID is known.
        public var associated: Bool?
        /// `ok`, the host's failure code or `app-not-listed`.
        public var code: String
        /// Why not, when not (the finding's message).
        public var reason: String?
    }

    /// The four states a host can be in.
    public enum Status: String, Sendable, CaseIterable {
        /// The last download gave an approved file that lists every app that needs the host.
        case associates
        /// The last download failed, or the file does not list an app that needs the host.
        case fails
        /// The last download gave an approved file, but no app ID is known to judge it with.
        case unjudged
        /// Never downloaded yet.
        case pending
    }

    /// The stored state (bodies as loaded).
    public var state: HostState
    /// The entries and app IDs that need the host.
    public var needs: [EntryNeed]
    /// The status.
    public var status: Status
    /// The host's code as a run gives it: the last download's failure code, else the first need's
    /// failure (`app-not-listed`), else `ok`; `nil` when never fetched.
    public var code: String?
    /// `true` when every need associates, `false` when one does not (or the last download
    /// failed), `nil` when never fetched or an entry has no app ID to judge with (`show`'s field).
    public var associated: Bool?
    /// Per entry and app ID, in the order they were registered.
    public var associations: [Association]
    /// One line on the outcome (the stored reason, or the first association error).
    public var reason: String?
    /// The findings, most serious first, each error with its fix when there is one.
    public var findings: [Finding]

    /// `true` when the host associates, `false` when it fails, `nil` when it cannot be said yet.
    public var associates: Bool? {
        switch status {
        case .associates: true
        case .fails: false
        case .unjudged, .pending: nil
        }
    }

    /// Judges a stored host. `state` must carry its bodies (``AssociationStore/states(of:)``) for
    /// the file's findings and the association to be judged; without them only the stored code counts.
    public init(state: HostState, needs: [EntryNeed]) {
        self.state = state
        self.needs = needs
        guard let last = state.lastResult else {
            status = .pending
            findings = []
            associated = nil
            code = nil
            associations = needs.map {
                Association(entry: $0.entry, service: $0.service, appID: $0.appID.isEmpty ? nil : $0.appID, associated: nil,
                            code: "not-fetched", reason: nil)
            }
            return
        }
        let document = last.code == "ok" ? state.approvedDocument : nil
        // An entry recorded with its error (`applinks:bücher.example`, fetched under its Punycode
        // name) fails whatever the file says and whether an app ID is known, as the run that
        // recorded it said.
        let entryErrors = Self.entryErrors(of: needs)
        associations = needs.map { need in
            let appID = need.appID.isEmpty ? nil : need.appID
            if let error = entryErrors[need.entry] {
                return Association(entry: need.entry, service: need.service, appID: appID, associated: false, code: error.code, reason: error.message)
            }
            // Without an app ID nothing is judged: a file fetched `ok` stays so, body loaded or not
            // (`show`'s list loads only the bodies some app ID needs).
            if appID == nil, last.code == "ok" {
                return Association(entry: need.entry, service: need.service, appID: nil, associated: nil, code: "ok", reason: nil)
            }
            guard let document else {
                let code = last.code == "ok" ? "not-an-association-file" : last.code
                return Association(entry: need.entry, service: need.service, appID: appID, associated: false, code: code, reason: last.reason)
            }
            guard let appID else {
                return Association(entry: need.entry, service: need.service, appID: nil, associated: nil, code: "ok", reason: nil)
            }
            if document.appIDs(for: need.service).contains(appID) {
                return Association(entry: need.entry, service: need.service, appID: appID, associated: true, code: "ok", reason: nil)
            }
            let finding = AssociationJudge.notListed(appID, service: need.service, document: document, host: state.key.host, location: need.entry)
            return Association(entry: need.entry, service: need.service, appID: appID, associated: false, code: finding.code, reason: finding.message)
        }
        if last.code != "ok" {
            associated = false
            code = last.code
        } else if let failing = associations.first(where: { $0.associated == false }) {
            associated = false
            code = failing.code
        } else {
            // Judged by the app IDs known: an entry also recorded without one (a run without
            // --app-id) leaves it unjudged only when no app ID is known at all, as `status` does.
            associated = associations.contains { $0.associated == true } ? true : nil
            code = "ok"
        }
        let result = Self.rejudge(last, key: state.key, approvedBody: state.approvedBody)
        reason = last.reason
        findings = result.findings
        guard last.code == "ok" else {
            status = .fails
            return
        }
        if let error = needs.lazy.compactMap({ entryErrors[$0.entry] }).first {
            status = .fails
            reason = error.message
            if !findings.contains(error) { findings.insert(error, at: 0) }
            return
        }
        let appIDs = Array(Set(needs.map(\.appID).filter { !$0.isEmpty })).sorted()
        guard !appIDs.isEmpty, result.document != nil else {
            status = .unjudged
            return
        }
        // Each app with the entries it needs the host for, judged as a live run judges them.
        var failed = false
        let parser = EntryParser()
        for appID in appIDs {
            let entries = needs.filter { $0.appID == appID }.map(\.entry)
            var verdicts = entries.enumerated().map { EntryVerdict(parsed: parser.parse($0.element, index: $0.offset)) }
            let planned = PlannedFetch(host: state.key.host, route: state.key.route, tier: state.tier,
                                       entryIndexes: Array(verdicts.indices))
            let domain = AssociationJudge.judgeHost(planned, result: result, verdicts: &verdicts, appIDs: [appID])
            if domain.associated == false {
                if !failed { reason = domain.reason }
                failed = true
            }
            for finding in domain.findings where !findings.contains(finding) { findings.append(finding) }
        }
        findings = findings.enumerated().sorted { ($1.element.severity, $0.offset) < ($0.element.severity, $1.offset) }.map(\.element)
        status = failed ? .fails : .associates
    }

    /// The fix of the failure, when the last download failed (or an app is not listed) and there is one.
    public var fix: String? {
        guard let code, code != "ok" else { return nil }
        // The finding the outcome rests on says what the reason says; a parser's finding of the
        // same code (where in the body) may come before it.
        let candidates = findings.filter { $0.code == code && $0.severity == .error && $0.fix != nil }
        return (candidates.first { $0.message == reason } ?? candidates.last)?.fix
    }

    /// The stored response judged again through the fetchers' own classification (what a live run
    /// found, findings and fixes included). Transfer failures, which have no response, take the
    /// fetcher's fix for their kind.
    static func rejudge(_ last: StoredResult, key: HostKey, approvedBody: [UInt8]?) -> HostFetchResult {
        let fallback = HostFetchResult(host: key.host, route: key.route, url: last.url, code: last.code, reason: last.reason,
                                       httpStatus: last.httpStatus, body: last.body, headers: last.headers)
        func failure(fix: String?) -> HostFetchResult {
            var result = fallback
            result.findings = [.error(last.code, last.reason, location: last.url, fix: fix)]
            return result
        }
        if let kind = TransferFailureKind(rawValue: last.code) {
            return failure(fix: AASAFetcher.fix(for: kind))
        }
        let cdn = CDNFetcher(transport: NoTransport(), options: FetchOptions(), base: "https://cdn.invalid/")
        guard let status = last.httpStatus else {
            // No response: on the CDN route, the CDN could not be reached.
            guard key.route == .cdn else { return failure(fix: nil) }
            let judged = cdn.judge(.failure(TransferFailure(kind: .connectFailure, message: "")), host: key.host, url: last.url)
            return failure(fix: judged.code == last.code ? judged.findings.first?.fix : nil)
        }
        // A 304 confirmed the approved file: judge that file with the headers stored beside it.
        let body = last.body ?? (last.code == "ok" ? approvedBody : nil) ?? []
        let response = TransferResponse(status: status == 304 ? 200 : status, headers: last.headers.map { ($0.name, $0.value) },
                                         body: body, url: last.url)
        let fetcher = AASAFetcher(transport: NoTransport(), options: FetchOptions())
        var result: HostFetchResult
        switch key.route {
        case .origin:
            result = fetcher.evaluate(.response(response, reliesOnExtraCA: false), host: key.host, url: last.url, stored: true)
            // A file found only at the legacy root path, as the live run warned.
            if result.code == "ok", last.url == AASAFetcher.legacyRootURL(key.host) {
                result.findings.insert(AASAFetcher.legacyRootPathWarning(host: key.host), at: 0)
            }
        case .cdn:
            result = cdn.judge(.response(response, reliesOnExtraCA: false), host: key.host, url: last.url)
        }
        // Another version may have classified differently: then the stored code stands, unexplained.
        guard result.code == last.code else { return failure(fix: nil) }
        result.reason = last.reason
        result.httpStatus = last.httpStatus
        return result
    }

    /// A transport for judging stored responses: it is never asked for anything.
    private struct NoTransport: HTTPTransferring {
        func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse {
            throw TransferFailure(kind: .invalidRequest, message: "no network while judging the store")
        }
    }
}

extension StoredVerdict {
    /// The error of each recorded entry that fails on its own (parsed again: `applinks:bücher.example`
    /// is recorded as written), by entry; the one place the store's readers decide it.
    static func entryErrors(of needs: [EntryNeed]) -> [String: Finding] {
        let parser = EntryParser()
        var errors: [String: Finding] = [:]
        for entry in Set(needs.map(\.entry)) {
            errors[entry] = parser.parse(entry, index: 0).findings.first { $0.severity == .error }
        }
        return errors
    }
}
