import Foundation

/// The hosts a forced check leased (``AssociationStore/claimForced(hosts:after:now:limit:leaseSeconds:owner:)``),
/// and where the next batch starts.
public struct ForcedClaim: Sendable {
    /// The hosts leased, with their stored state (`hosts`, in order of addition), and the selected
    /// hosts after the cursor that other processes hold an unexpired lease on (left to them).
    public var claim: DueClaim
    /// The position of the last host leased, to pass as `after` for the next batch; `nil` when
    /// nothing was leased (the selection is exhausted).
    public var cursor: Int64?

    /// Creates a claim.
    public init(claim: DueClaim, cursor: Int64?) {
        self.claim = claim
        self.cursor = cursor
    }
}

extension HistoryEvent {
    /// An event read back from a store row (the detail is the stored JSON; an unknown kind is `nil`).
    static func stored(host: String, route: String, at: Date, kind: String, detail: String) -> HistoryEvent? {
        guard let kind = HistoryKind(rawValue: kind) else { return nil }
        let decoded = (try? JSONDecoder().decode(HistoryDetail.self, from: Data(detail.utf8))) ?? HistoryDetail()
        return HistoryEvent(key: HostKey(host: host, route: Route(rawValue: route) ?? .origin), at: at, kind: kind, detail: decoded)
    }
}
