import CurlTransport
import Foundation

/// A host and the route its file is fetched over: the key of everything the store keeps.
public struct HostKey: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The ASCII host.
    public var host: String
    /// The route.
    public var route: Route

    /// Creates a key.
    public init(host: String, route: Route = .origin) {
        self.host = host
        self.route = route
    }

    /// `host` for the origin route, `host (cdn)` otherwise.
    public var description: String { route == .origin ? host : "\(host) (\(route.rawValue))" }

    public static func < (lhs: HostKey, rhs: HostKey) -> Bool {
        (lhs.host, lhs.route.rawValue) < (rhs.host, rhs.route.rawValue)
    }
}

/// The HTTP validators of an approved response, sent back as `If-None-Match` and
/// `If-Modified-Since` on refresh.
public struct CacheValidators: Sendable, Hashable, Codable {
    /// The `ETag` header, as sent.
    public var etag: String?
    /// The `Last-Modified` header, as sent.
    public var lastModified: String?

    /// Creates validators.
    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Whether there is nothing to validate with.
    public var isEmpty: Bool { etag == nil && lastModified == nil }

    /// The validators a response carries.
    public init(headers: [HTTPHeader]) {
        func value(_ name: String) -> String? { headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value }
        self.init(etag: value("etag"), lastModified: value("last-modified"))
    }
}

/// The last result recorded for a host: what the last download gave, approved or not.
public struct StoredResult: Sendable, Hashable {
    /// `ok` or the failure code.
    public var code: String
    /// One line on what happened.
    public var reason: String
    /// The HTTP status, when a response arrived (304 for a not-modified answer).
    public var httpStatus: Int?
    /// The URL of the response the result rests on.
    public var url: String
    /// The response headers.
    public var headers: [HTTPHeader]
    /// The body read, when any (for a 304, the stored body it confirmed).
    public var body: [UInt8]?
    /// When it was fetched.
    public var fetchedAt: Date

    /// Creates a result record.
    public init(code: String, reason: String, httpStatus: Int?, url: String, headers: [HTTPHeader], body: [UInt8]?, fetchedAt: Date) {
        self.code = code
        self.reason = reason
        self.httpStatus = httpStatus
        self.url = url
        self.headers = headers
        self.body = body
        self.fetchedAt = fetchedAt
    }
}

/// A lease on a host: a refresh process is fetching it until `expires`.
public struct HostLease: Sendable, Hashable {
    /// Who holds it (`hostname:pid:random`).
    public var owner: String
    /// When it lapses, so another process may take the host over.
    public var expires: Date

    /// Creates a lease.
    public init(owner: String, expires: Date) {
        self.owner = owner
        self.expires = expires
    }
}

/// Everything the store knows about one host.
public struct HostState: Sendable, Hashable {
    /// Host and route.
    public var key: HostKey
    /// The priority tier recorded when the host was added.
    public var tier: Int
    /// The last result, `nil` before the first download finished.
    public var lastResult: StoredResult?
    /// The last approved body (a file that decoded); never erased by a failure.
    public var approvedBody: [UInt8]?
    /// The size of the approved body in bytes, `nil` when there is none (also filled when the
    /// body itself was not loaded).
    public var approvedSize: Int?
    /// When the approved body was last confirmed (a 200 or a 304).
    public var approvedAt: Date?
    /// The validators of the approved response.
    public var validators: CacheValidators
    /// Failures in a row since the last approved result.
    public var consecutiveFailures: Int
    /// When the host is due again.
    public var nextCheck: Date
    /// The lease of a refresh fetching it, if any (it may have expired).
    public var lease: HostLease?
    /// When it was added to the store.
    public var addedAt: Date
    /// Since when no entry needs the host (its app's entitlements were recorded again without
    /// it); `nil` while some entry needs it. An unneeded host is not refreshed, and `refresh`
    /// removes it after the grace period (``StoreRetention``).
    public var unneededSince: Date?

    /// Creates a state.
    public init(
        key: HostKey, tier: Int, lastResult: StoredResult? = nil, approvedBody: [UInt8]? = nil, approvedAt: Date? = nil,
        validators: CacheValidators = CacheValidators(), consecutiveFailures: Int = 0, nextCheck: Date,
        lease: HostLease? = nil, addedAt: Date, unneededSince: Date? = nil
    ) {
        self.key = key
        self.unneededSince = unneededSince
        self.tier = tier
        self.lastResult = lastResult
        self.approvedBody = approvedBody
        self.approvedSize = approvedBody?.count
        self.approvedAt = approvedAt
        self.validators = validators
        self.consecutiveFailures = consecutiveFailures
        self.nextCheck = nextCheck
        self.lease = lease
        self.addedAt = addedAt
    }

    /// Whether the last result is an approved file.
    public var isApproved: Bool { lastResult?.code == "ok" }

    /// The approved file decoded, when there is one.
    public var approvedDocument: AASADocument? {
        guard let approvedBody, case .document(let document, _) = AASADecoder.decode(approvedBody) else { return nil }
        return document
    }
}

/// One entitlement entry and app ID that need a host.
public struct EntryNeed: Sendable, Hashable, Codable {
    /// The normalized entry, e.g. `applinks:*.example.com`.
    public var entry: String
    /// The service.
    public var service: Service
    /// The host whose file serves it.
    public var host: String
    /// The route.
    public var route: Route
    /// The app ID that needs it; empty when none was known.
    public var appID: String

    /// Creates a need.
    public init(entry: String, service: Service, host: String, route: Route = .origin, appID: String) {
        self.entry = entry
        self.service = service
        self.host = host
        self.route = route
        self.appID = appID
    }

    /// The key of the host.
    public var key: HostKey { HostKey(host: host, route: route) }
}

/// A host to add to the store (kept as it is when already there).
public struct HostRegistration: Sendable, Hashable {
    /// Host and route.
    public var key: HostKey
    /// Its priority tier.
    public var tier: Int

    /// Creates a registration.
    public init(key: HostKey, tier: Int) {
        self.key = key
        self.tier = tier
    }
}

/// What a history event says beyond its kind. Absent fields are omitted in JSON.
public struct HistoryDetail: Sendable, Hashable, Codable {
    /// The result code (for `broke`, `failed`, `approved`).
    public var code: String?
    /// The code before (for `approved` after failures, `failed` when the failure changed).
    public var previousCode: String?
    /// One line on what happened.
    public var reason: String?
    /// The HTTP status.
    public var httpStatus: Int?
    /// The semantic changes of the file (for `changed`).
    public var changes: [AASAChange]?
    /// The app ID concerned (for `association-lost` and `association-gained`).
    public var appID: String?
    /// The entry concerned.
    public var entry: String?
    /// The service concerned.
    public var service: Service?

    /// Creates a detail.
    public init(
        code: String? = nil, previousCode: String? = nil, reason: String? = nil, httpStatus: Int? = nil,
        changes: [AASAChange]? = nil, appID: String? = nil, entry: String? = nil, service: Service? = nil
    ) {
        self.code = code
        self.previousCode = previousCode
        self.reason = reason
        self.httpStatus = httpStatus
        self.changes = changes
        self.appID = appID
        self.entry = entry
        self.service = service
    }
}

extension HistoryDetail {
    /// The text a store keeps this detail in (`history.detail`): byte for byte what Foundation's
    /// `JSONEncoder` writes with `.sortedKeys` and `.withoutEscapingSlashes` (absent fields left
    /// out), the format of stores in the field. Written here without Foundation's coder, which
    /// ran once per recorded event (every first download is one); a detail with ``changes`` (a
    /// changed file, rare) still goes through `JSONEncoder`.
    public var storedJSON: String {
        if changes != nil {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
        }
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        func member(_ key: StaticString, _ value: String?) {
            guard let value else { return }
            Self.beginMember(key, &bytes)
            Self.appendFoundationQuoted(value, to: &bytes)
        }
        // The keys sorted.
        member("appID", appID)
        member("code", code)
        member("entry", entry)
        if let httpStatus {
            Self.beginMember("httpStatus", &bytes)
            bytes.append(contentsOf: String(httpStatus).utf8)
        }
        member("previousCode", previousCode)
        member("reason", reason)
        member("service", service?.name)
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func beginMember(_ key: StaticString, _ bytes: inout [UInt8]) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A string literal as `JSONEncoder` writes it: `"` and `\` escaped, the C0 controls as
    /// `\b \t \n \f \r` or `\u00xx`, every other character (`/` included) as it is.
    static func appendFoundationQuoted(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x00..<0x20:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// The kinds of change the history records (stable codes).
public enum HistoryKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The host serves an approved file after none (its first, or a recovery from failures).
    case approved
    /// The approved file changed in meaning (``AASADiff``).
    case changed
    /// The host served an approved file and now fails; the last approved file is kept.
    case broke
    /// A failure with no approved file before it, or a failure whose code changed.
    case failed
    /// An app that needs the host is no longer listed for the entry's service.
    case associationLost = "association-lost"
    /// An app that needs the host is listed again (or for the first time after a change).
    case associationGained = "association-gained"

    /// Whether this change means an association broke (a refresh then exits 1).
    public var isBreaking: Bool { self == .broke || self == .associationLost }
}

/// One change in a host's history.
public struct HistoryEvent: Sendable, Hashable {
    /// Host and route.
    public var key: HostKey
    /// When it was seen.
    public var at: Date
    /// What changed.
    public var kind: HistoryKind
    /// The details.
    public var detail: HistoryDetail

    /// Creates an event.
    public init(key: HostKey, at: Date, kind: HistoryKind, detail: HistoryDetail) {
        self.key = key
        self.at = at
        self.kind = kind
        self.detail = detail
    }
}

/// What recording one download changes for a host: the result, the approved body and validators
/// when approved, the failure count, the next check and the history events.
public struct HostUpdate: Sendable, Hashable {
    /// Host and route.
    public var key: HostKey
    /// The result to store as the last one.
    public var result: StoredResult
    /// The new approved body; `nil` keeps the stored one (failures never erase it).
    public var approvedBody: [UInt8]?
    /// The validators to store; `nil` keeps the stored ones.
    public var validators: CacheValidators?
    /// Failures in a row after this result.
    public var consecutiveFailures: Int
    /// When the host is due again.
    public var nextCheck: Date
    /// How the result was classified.
    public var outcome: RefreshOutcome
    /// Changes to add to the history.
    public var events: [HistoryEvent]
    /// Notifications to queue for delivery (`refresh --notify`), in the same transaction as the
    /// history, so a change recorded is a change notified; empty without `--notify`.
    public var notifications: [NotificationEvent] = []
    /// The stored fetch time the update was judged against (`nil`: never fetched). A leased
    /// record (``AssociationStore/record(_:owner:)`` with an owner) is written only while the
    /// host's fetch time is still that one: a recording run that recorded the host meanwhile made
    /// the judgement stale (its events would come twice), and its result stands (`leaseLost` with
    /// no owner).
    public var judgedAgainst: Date?
    /// When the download ended (``HostFetchResult/finishedAt``), where the run knows it: without
    /// a lease, the update is recorded only over an older download (the result's fetch time is
    /// the recording time, which comes later).
    public var downloadedAt: Date?

    /// Creates an update.
    public init(
        key: HostKey, result: StoredResult, approvedBody: [UInt8]?, validators: CacheValidators?,
        consecutiveFailures: Int, nextCheck: Date, outcome: RefreshOutcome, events: [HistoryEvent]
    ) {
        self.key = key
        self.result = result
        self.approvedBody = approvedBody
        self.validators = validators
        self.consecutiveFailures = consecutiveFailures
        self.nextCheck = nextCheck
        self.outcome = outcome
        self.events = events
    }
}

/// The hosts a refresh leased, and the due hosts it left to other processes.
public struct DueClaim: Sendable {
    /// The hosts leased to the caller, in priority order, with their stored state.
    public var hosts: [HostState]
    /// Due hosts skipped because another process holds an unexpired lease on them.
    public var leasedElsewhere: Int
    /// The owners of those leases.
    public var otherOwners: [String]
    /// When the first of those leases lapses (a worker waits for it: its owner may have died).
    public var nextLeaseExpiry: Date?

    /// Creates a claim.
    public init(hosts: [HostState], leasedElsewhere: Int = 0, otherOwners: [String] = [], nextLeaseExpiry: Date? = nil) {
        self.hosts = hosts
        self.leasedElsewhere = leasedElsewhere
        self.otherOwners = otherOwners
        self.nextLeaseExpiry = nextLeaseExpiry
    }
}

/// What ``AssociationStore/record(_:owner:)`` did with a download.
public enum RecordResult: Sendable, Hashable {
    /// Recorded (and the caller's lease released). Also the answer when this same download
    /// (same host, route and fetch time) is already the stored result: an earlier call recorded
    /// it and only its answer was lost (a `COMMIT` whose reply never came, or a batch recorded
    /// again after an outage in the middle of recording it). Nothing is written twice.
    case recorded
    /// Not recorded: the caller's lease lapsed and another process took the host over (`owner`,
    /// `nil` when that process already recorded it and released the lease). Its result stands.
    case leaseLost(owner: String?)
    /// Not recorded: the host is no longer in the store (forgotten meanwhile).
    case hostMissing
}

/// A failure of the store, with a stable code (`store-corrupt`, `store-locked`,
/// `store-unreadable`, `store-missing`, `store-newer-schema`, `store-full`, `store-error`; for
/// PostgreSQL also `store-bad-url`, `store-unreachable`, `store-auth-failed`).
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code.
    public var code: String
    /// What happened, for people.
    public var message: String

    /// Creates an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// One kept approved file of a host and route (the last ``StoreRetention/keptVersions`` distinct
/// files are kept; a file equal to the latest kept one only confirms it).
public struct StoredVersion: Sendable, Hashable {
    /// Host and route.
    public var key: HostKey
    /// Its place: 0 the latest, -1 the one before, and so on.
    public var index: Int
    /// When this file was first approved.
    public var fetchedAt: Date
    /// When it was last approved (a later 200 with the same bytes, or a 304).
    public var approvedAt: Date
    /// Its size in bytes.
    public var size: Int
    /// SHA-256 of the bytes, 64 hexadecimal digits.
    public var digest: String
    /// The `ETag` it was last served with.
    public var etag: String?
    /// The `Last-Modified` it was last served with.
    public var lastModified: String?
    /// The bytes, when asked for.
    public var body: [UInt8]?

    /// Creates a version.
    public init(
        key: HostKey, index: Int, fetchedAt: Date, approvedAt: Date, size: Int, digest: String,
        etag: String? = nil, lastModified: String? = nil, body: [UInt8]? = nil
    ) {
        self.key = key
        self.index = index
        self.fetchedAt = fetchedAt
        self.approvedAt = approvedAt
        self.size = size
        self.digest = digest
        self.etag = etag
        self.lastModified = lastModified
        self.body = body
    }
}

/// What the store forgets, and when: the defaults of `refresh --prune-after` and
/// `--keep-history`, the number of approved files kept per host, and the batch size of pruning.
public enum StoreRetention {
    /// How long a host no entry needs stays in the store before `refresh` removes it: 30 days.
    public static let defaultPruneAfter: TimeInterval = 30 * 86_400
    /// How long history events are kept: 180 days.
    public static let defaultKeepHistory: TimeInterval = 180 * 86_400
    /// Approved files kept per host and route (the latest and the four before it).
    public static let keptVersions = 5
    /// Rows removed per transaction when pruning, so a large store is never locked for long.
    public static let batchSize = 1_000
}

/// What recording a run's entitlements again removed: the needs of the app IDs that the run no
/// longer has, and the hosts that no entry needs any more (now unneeded).
public struct RetiredNeeds: Sendable, Hashable {
    /// The needs removed.
    public var needs: Int
    /// Hosts that became unneeded, in order of addition.
    public var unneededHosts: [HostKey]

    /// Creates a result.
    public init(needs: Int = 0, unneededHosts: [HostKey] = []) {
        self.needs = needs
        self.unneededHosts = unneededHosts
    }
}
