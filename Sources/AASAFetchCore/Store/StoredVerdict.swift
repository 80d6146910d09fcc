/// The verdict a stored record gives the entries and apps that need it, judged the way a run
/// judges them (``AssociationJudge``): what `fetch` said when it recorded the host, per entry and
/// app ID, and for every app that has needed the host since (`show`).
public struct StoredVerdict: Sendable, Hashable {
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

    /// `true` when every need associates, `false` when one does not (or the last download
    /// failed), `nil` when never fetched or no app ID is known.
    public var associated: Bool?
    /// The host's code as a run gives it: the last download's failure code, else the first need's
    /// failure (`app-not-listed`), else `ok`; `nil` when never fetched.
    public var code: String?
    /// Per entry and app ID, in the order they were registered.
    public var associations: [Association]

    /// Judges a stored state for its needs. The state must carry its approved body (as
    /// ``AssociationStore/states(of:)`` returns it) when its last result is `ok`.
    public init(state: HostState, needs: [EntryNeed]) {
        guard let last = state.lastResult else {
            associated = nil
            code = nil
            associations = needs.map {
                Association(entry: $0.entry, service: $0.service, appID: $0.appID.isEmpty ? nil : $0.appID, associated: nil,
                            code: "not-fetched", reason: nil)
            }
            return
        }
        let document = last.code == "ok" ? state.approvedDocument : nil
        associations = needs.map { need in
            let appID = need.appID.isEmpty ? nil : need.appID
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
            associated = associations.contains { $0.associated == nil } ? nil : true
            code = "ok"
        }
    }
}
