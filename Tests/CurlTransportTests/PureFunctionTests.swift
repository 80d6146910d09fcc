import AASAFetchTestSupport
@testable import CurlTransport
import Foundation
import Synchronization
import Testing

struct AddressPolicyTests {
    @Test(arguments: [
        // IPv4 private, loopback, link-local, CGNAT, documentation, benchmarking, multicast, reserved
        ("0.0.0.0", true), ("0.1.2.3", true), ("10.0.0.1", true), ("10.255.255.255", true),
        ("100.64.0.1", true), ("100.127.255.254", true), ("100.128.0.1", false), ("100.63.255.255", false),
        ("127.0.0.1", true), ("127.10.20.30", true), ("169.254.169.254", true), ("172.16.0.1", true),
        ("172.31.255.255", true), ("172.32.0.1", false), ("172.15.255.255", false), ("192.0.0.8", true),
        ("192.0.2.1", true), ("192.88.99.1", true), ("192.168.1.1", true), ("198.18.0.1", true),
        ("198.19.255.255", true), ("198.20.0.1", false), ("198.51.100.7", true), ("203.0.113.9", true),
        ("224.0.0.1", true), ("239.255.255.250", true), ("240.0.0.1", true), ("255.255.255.255", true),
        // IPv4 public
        ("1.1.1.1", false), ("8.8.8.8", false), ("17.253.144.10", false), ("93.184.216.34", false),
        ("192.0.1.1", false), ("192.169.0.1", false), ("223.255.255.255", false),
        // IPv6 reserved
        ("::", true), ("::1", true), ("[::1]", true), ("fe80::1", true), ("fe80::1%eth0", true),
        ("fc00::1", true), ("fd12:3456::1", true), ("ff02::1", true), ("fec0::1", true), ("::a00:1", true),
        ("2001:db8::1", true), ("2001::1", true), ("2001:2::1", true), ("2001:10::1", true),
        ("3fff::1", true), ("100::1", true), ("64:ff9b:1::1", true),
        // IPv4-mapped, NAT64 and 6to4 forms
        ("::ffff:127.0.0.1", true), ("::ffff:10.1.2.3", true), ("::ffff:8.8.8.8", false),
        ("64:ff9b::192.168.0.1", true), ("64:ff9b::8.8.8.8", false), ("2002:c0a8:0101::1", true),
        ("2002:0808:0808::1", false),
        // IPv6 public
        ("2606:4700:4700::1111", false), ("2a00:1450:4001:82b::200e", false), ("2620:149:af0::10", false),
        // Not addresses at all: refused
        ("", true), ("example.com", true), ("127.1", true), ("1.2.3.4.5", true),
    ])
    func classifiesAddress(address: String, refused: Bool) {
        #expect(AddressPolicy.isPrivateOrReserved(address) == refused, "\(address)")
    }
}

struct FailureClassifierTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var code: Int
        var verify: Int = 0
        var text: String = ""
        var tooLarge: Bool = false
        var refused: Bool = false
        var connected: Bool = false
        var expected: TransferFailureKind
        var testDescription: String { "code \(code) verify \(verify) → \(expected.rawValue)" }
    }

    @Test(arguments: [
        Case(code: CurlCode.couldntResolveHost, text: "Could not resolve host: nowhere.invalid", expected: .dnsFailure),
        Case(code: CurlCode.couldntConnect, text: "Failed to connect", expected: .connectFailure),
        Case(code: CurlCode.couldntConnect, refused: true, expected: .privateAddress),
        Case(code: CurlCode.operationTimedOut, text: "Connection timed out after 1001 milliseconds", expected: .timeout),
        Case(code: CurlCode.peerFailedVerification, verify: 10, expected: .tlsExpired),
        Case(code: CurlCode.peerFailedVerification, verify: 9, expected: .tlsNotYetValid),
        Case(code: CurlCode.peerFailedVerification, verify: 2, expected: .tlsUntrusted),
        Case(code: CurlCode.peerFailedVerification, verify: 18, expected: .tlsUntrusted),
        Case(code: CurlCode.peerFailedVerification, verify: 19, expected: .tlsUntrusted),
        Case(code: CurlCode.peerFailedVerification, verify: 20, expected: .tlsUntrusted),
        Case(code: CurlCode.peerFailedVerification, verify: 21, expected: .tlsUntrusted),
        Case(code: CurlCode.peerFailedVerification, verify: 27, expected: .tlsUntrusted),
        Case(code: CurlCode.peerFailedVerification, verify: 62, expected: .tlsHostnameMismatch),
        Case(
            code: CurlCode.peerFailedVerification,
            text: "SSL: no alternative certificate subject name matches target host name 'a.test'",
            expected: .tlsHostnameMismatch),
        Case(
            code: CurlCode.peerFailedVerification,
            text: "SSL: certificate subject name 'b.test' does not match target host name 'a.test'",
            expected: .tlsHostnameMismatch),
        Case(code: CurlCode.peerFailedVerification, verify: 7, expected: .tlsFailure),
        Case(code: CurlCode.sslCACert, verify: 10, expected: .tlsExpired),
        Case(code: CurlCode.sslConnectError, verify: 10, expected: .tlsExpired),
        Case(code: CurlCode.sslConnectError, text: "OpenSSL SSL_connect: SSL_ERROR_SYSCALL", expected: .tlsFailure),
        Case(code: CurlCode.sslCipher, expected: .tlsFailure),
        Case(code: CurlCode.sslCACertBadFile, expected: .invalidRequest),
        Case(code: CurlCode.setoptOptionSyntax, expected: .invalidRequest),
        Case(code: CurlCode.recvError, expected: .transferFailure),
        Case(code: CurlCode.sendError, expected: .transferFailure),
        Case(code: CurlCode.partialFile, expected: .transferFailure),
        Case(code: CurlCode.gotNothing, expected: .transferFailure),
        Case(code: CurlCode.http2, expected: .transferFailure),
        Case(code: CurlCode.http2Stream, expected: .transferFailure),
        Case(code: CurlCode.writeError, tooLarge: true, expected: .tooLarge),
        Case(code: CurlCode.writeError, expected: .transferFailure),
        Case(code: CurlCode.filesizeExceeded, expected: .tooLarge),
        Case(code: CurlCode.urlMalformat, expected: .invalidRequest),
        Case(code: CurlCode.unsupportedProtocol, expected: .invalidRequest),
        Case(code: CurlCode.unsupportedProtocol, text: "Received HTTP/0.9 when not allowed", expected: .invalidResponse),
        // A status line libcurl refuses comes from the server: the connection was made.
        Case(code: CurlCode.unsupportedProtocol, text: "Unsupported response code in HTTP response", connected: true, expected: .invalidResponse),
        Case(code: CurlCode.badContentEncoding, text: "Unrecognized content encoding type", expected: .invalidResponse),
    ])
    func classifies(_ item: Case) {
        let kind = FailureClassifier.classify(
            curlCode: item.code, tlsVerifyResult: item.verify, errorText: item.text,
            bodyLimitExceeded: item.tooLarge, refusedPrivateAddress: item.refused, connected: item.connected)
        #expect(kind == item.expected)
    }
}

struct InvalidRequestTests {
    @Test(.timeLimit(.minutes(1)), arguments: ["http://127.0.0.1:9/", "ftp://127.0.0.1/file", "not a url"])
    func rejectsNonHTTPS(url: String) async {
        let client = makeClient()
        defer { _ = client }
        let failure = await expectFailure { () async throws(TransferFailure) in
            try await client.perform(TransferRequest(url: url, allowPrivateAddresses: true))
        }
        #expect(failure?.kind == .invalidRequest)
        await client.shutdown()
    }
}

struct ClientLifecycleTests {
    /// A hang bound: alone it takes half a second; under a whole suite's load, with the test
    /// threads held by other tests' child processes, it took 114 s.
    @Test(.timeLimit(.minutes(5)))
    func shutdownStopsTheLoopThreadAndIsIdempotent() async {
        for _ in 0..<20 {
            let client = makeClient()
            await client.shutdown()
            await client.shutdown()
            let exited = await waitUntil(timeout: .seconds(5), interval: .milliseconds(5)) { client.loopThreadExited }
            #expect(exited)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func concurrentShutdownsAllReturn() async {
        let client = makeClient()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask { await client.shutdown() }
            }
        }
        let late = await expectFailure { () async throws(TransferFailure) in
            try await client.perform(TransferRequest(url: "https://aasa.test/"))
        }
        #expect(late?.kind == .cancelled)
    }
}

/// A loop that could not start (its epoll set or multi handle failed, say for want of
/// descriptors) takes nothing while another loop runs; before, it had no load, so the
/// least-loaded choice sent it every transfer and each failed.
struct LoopRoutingTests {
    static let failure = TransferFailure(kind: .descriptorsExhausted, message: "the curl loop could not create its epoll set")

    @Test func aLoopThatCouldNotStartGetsNoNewTransfer() {
        let group = LoopGroup(loops: 3, maxConnections: 8)
        #expect(group.loop(forAffinity: nil) == 0, "with every loop idle the first one is chosen")
        group.markFailedToStart(loop: 0, with: Self.failure)
        let chosen = Set((0..<50).map { _ in group.loop(forAffinity: nil) })
        #expect(!chosen.contains(0), "\(chosen)")
        #expect(chosen == [1])
    }

    @Test func aKeyWhoseLoopCouldNotStartMovesToTheNextRunningLoopForGood() throws {
        let group = LoopGroup(loops: 3, maxConnections: 8)
        let keys = (0..<64).map { "host\($0).example" }
        let home = Dictionary(uniqueKeysWithValues: keys.map { ($0, LoopGroup.loopIndex(forKey: $0, loops: 3)) })
        let onLoop1 = try #require(keys.first { home[$0] == 1 })
        let onLoop2 = try #require(keys.first { home[$0] == 2 })
        let onLoop0 = try #require(keys.first { home[$0] == 0 })
        group.markFailedToStart(loop: 1, with: Self.failure)
        for _ in 0..<10 {
            #expect(group.loop(forAffinity: onLoop1) == 2, "the next loop that runs, every time")
            #expect(group.loop(forAffinity: onLoop2) == 2)
            #expect(group.loop(forAffinity: onLoop0) == 0)
        }
        group.markFailedToStart(loop: 2, with: Self.failure)
        #expect(group.loop(forAffinity: onLoop1) == 0, "past the end, round to the first")
        #expect(group.loop(forAffinity: onLoop2) == 0)
    }

    /// A loop whose thread cannot be started (`pthread_create` fails: the limit on processes) is
    /// closed at once: its share goes to the loop that runs, and with none running every transfer
    /// fails `threads-exhausted` instead of waiting for a thread that never comes.
    @Test func aLoopWhoseThreadCannotStartIsClosedNotWaitedFor() async {
        let request = TransferRequest(url: "https://refused.example/", connectTo: ["::127.0.0.1:9"])
        let oneDown = CurlClient(maxConnections: 8, maxConnectionsPerHost: 0, threads: 2) { loop, body in
            loop == 1 ? EAGAIN : CurlClient.startThread(body)
        }
        let noneUp = CurlClient(maxConnections: 8, maxConnectionsPerHost: 0, threads: 2) { _, _ in EAGAIN }
        // In a task of its own, so that a transfer given to a loop that never runs fails the test
        // instead of hanging it.
        let outcome = Mutex<[TransferFailureKind?]?>(nil)
        Task {
            var kinds: [TransferFailureKind?] = []
            for client in [oneDown, oneDown, oneDown, oneDown, oneDown, oneDown, noneUp] {
                do throws(TransferFailure) {
                    _ = try await client.perform(request)
                    kinds.append(nil)
                } catch {
                    kinds.append(error.kind)
                }
            }
            outcome.withLock { $0 = kinds }
        }
        // A hang detector, not a timing: alone the transfers end in milliseconds, but under the
        // whole suite on two cores the task may wait long for a thread of the shared pool (it
        // missed 20 s twice).
        let ended = await waitUntil(timeout: .seconds(120)) { outcome.withLock { $0 != nil } }
        #expect(ended, "a transfer waited for a loop whose thread never started")
        guard let kinds = outcome.withLock({ $0 }) else { return }
        #expect(kinds.prefix(6).allSatisfy { $0 != nil && $0 != .threadsExhausted }, "\(kinds)")
        #expect(oneDown.transfersStartedPerLoop == [6, 0])
        #expect(kinds.last == .threadsExhausted, "\(kinds)")
        for client in [oneDown, noneUp] {
            await client.shutdown()
            // A running loop marks its thread exited just after it lets shutdown() return.
            #expect(await waitUntil(timeout: .seconds(5), interval: .milliseconds(5)) { client.loopThreadExited })
        }
    }

    /// What a loop holds now: the identifiers of the starts queued on it (taken, as the loop would).
    static func queuedStarts(_ group: LoopGroup, loop: Int) -> [UInt64] {
        group.mailboxes[loop].takeCommands().commands.compactMap { command in
            if case .start(let id, _, _) = command { return id }
            return nil
        }
    }

    /// A loop that fails to start between the choice of it and the hand-over of a transfer (the
    /// caller reserved on it while it was still starting) passes the transfer to a loop that
    /// runs. Before, the transfer failed as `cancelled` ("the client was shut down"), exit 1, and
    /// the host was reported as not associated although the other loop ran.
    @Test func aLoopThatFailsToStartDuringTheHandOverIsPassedOver() throws {
        let group = LoopGroup(loops: 2, maxConnections: 8)
        let request = TransferRequest(url: "https://aasa.test/")
        let raced = try group.mailboxes[0].reserve().get()
        group.markFailedToStart(loop: 0, with: Self.failure)
        let results = Mutex<[Result<TransferResponse, TransferFailure>]>([])
        let handedOver = group.mailboxes[0].submit(id: raced, request: request) { result in results.withLock { $0.append(result) } }
        #expect(!handedOver, "the closed loop declines the transfer instead of failing it")
        #expect(results.withLock { $0.isEmpty })
        let ticket = group.dispatch(request) { result in results.withLock { $0.append(result) } }
        #expect(ticket.loop == 1)
        #expect(Self.queuedStarts(group, loop: 1) == [ticket.id])
        #expect(results.withLock { $0.isEmpty })
    }

    /// Transfers queued on a loop before it found it could not start go to the loop that runs,
    /// and their first tickets still cancel them. Before, each failed `descriptors-exhausted`
    /// while the other loop could have run it.
    @Test func transfersQueuedOnALoopThatCannotStartGoToOneThatRuns() throws {
        let group = LoopGroup(loops: 2, maxConnections: 8)
        let kinds = Mutex<[Int: TransferFailureKind]>([:])
        let tickets = (0..<3).map { index in
            group.dispatch(TransferRequest(url: "https://aasa.test/\(index)", affinity: "loop-0-key")) { result in
                if case .failure(let failure) = result { kinds.withLock { $0[index] = failure.kind } }
            }
        }
        let home = LoopGroup.loopIndex(forKey: "loop-0-key", loops: 2)
        #expect(tickets.allSatisfy { $0.loop == home && $0.id != 0 })
        group.markFailedToStart(loop: home, with: Self.failure)
        let other = 1 - home
        let moved = Self.queuedStarts(group, loop: other)
        #expect(moved.count == 3, "every queued transfer moved")
        #expect(kinds.withLock { $0.isEmpty }, "none failed: \(kinds.withLock { $0 })")
        // The moved transfers run now; cancelling through the first tickets reaches them there
        // (the cancel command is queued for the running loop).
        group.cancel(loop: tickets[0].loop, id: tickets[0].id)
        let commands = group.mailboxes[other].takeCommands().commands
        #expect(commands.count == 1)
        if case .cancel(let id)? = commands.first { #expect(id == moved[0]) } else { Issue.record("\(commands)") }
    }

    /// A transfer cancelled while its loop is failing to start is not moved: it fails `cancelled`.
    @Test func aTransferCancelledWhileItsLoopFailsIsNotMoved() throws {
        let group = LoopGroup(loops: 2, maxConnections: 8)
        let kinds = Mutex<[TransferFailureKind]>([])
        let ticket = group.dispatch(TransferRequest(url: "https://aasa.test/")) { result in
            if case .failure(let failure) = result { kinds.withLock { $0.append(failure.kind) } }
        }
        #expect(ticket.loop == 0)
        let (commands, _) = group.mailboxes[0].close(startupFailure: Self.failure)
        group.cancel(loop: ticket.loop, id: ticket.id)
        group.forward(commands, from: 0)
        #expect(kinds.withLock { $0 } == [.cancelled])
        #expect(Self.queuedStarts(group, loop: 1).isEmpty)
    }

    /// With no loop running, what was queued fails with the startup failure, not `cancelled`.
    @Test func withNoLoopRunningQueuedTransfersFailWithTheStartupFailure() {
        let group = LoopGroup(loops: 2, maxConnections: 8)
        group.markFailedToStart(loop: 1, with: Self.failure)
        let kinds = Mutex<[TransferFailureKind]>([])
        let ticket = group.dispatch(TransferRequest(url: "https://aasa.test/")) { result in
            if case .failure(let failure) = result { kinds.withLock { $0.append(failure.kind) } }
        }
        #expect(ticket.loop == 0)
        group.markFailedToStart(loop: 0, with: Self.failure)
        #expect(kinds.withLock { $0 } == [.descriptorsExhausted])
    }

    @Test func withNoLoopRunningATransferGoesWhereItWouldHave() {
        let group = LoopGroup(loops: 2, maxConnections: 8)
        group.markFailedToStart(loop: 0, with: Self.failure)
        group.markFailedToStart(loop: 1, with: Self.failure)
        #expect(group.loop(forAffinity: nil) == 0)
        let key = "host.example"
        #expect(group.loop(forAffinity: key) == LoopGroup.loopIndex(forKey: key, loops: 2))
    }
}

/// Header names are compared with ASCII letters folded, nothing else.
struct HeaderNameTests {
    @Test(arguments: [
        ("Content-Type", "content-type", true), ("ETAG", "etag", true), ("a", "A", true), ("", "", true),
        ("Age", "Age ", false), ("Age", "Ag", false), ("@", "`", false), ("[", "{", false), ("1", "\u{11}", false),
        // Unicode case mappings do not apply: the Kelvin sign is not `k`, `É` is not `é`.
        ("\u{212A}eep-Alive", "keep-alive", false), ("É", "é", false), ("é", "é", true),
    ])
    func namesMatchWithASCIILettersFolded(a: String, b: String, same: Bool) {
        #expect(a.equalsIgnoringASCIICase(b) == same)
        #expect(b.equalsIgnoringASCIICase(a) == same)
    }

    @Test func aResponsesHeaderIsFoundByAnyCaseOfItsName() {
        let response = TransferResponse(status: 200, headers: [("content-TYPE", "application/json"), ("Age", "3"), ("age", "4")], body: [], url: "https://a.test/")
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("AGE") == "3")
        #expect(response.header("Ag") == nil)
    }
}

/// The connection key of a URL: its `host[:port]`, lower-cased, without user info or path.
struct AuthorityTests {
    @Test(arguments: [
        ("https://CDN.Example.com/a/v1/x.test", "cdn.example.com"), ("https://a.test:8443/x?y#z", "a.test:8443"),
        ("https://user:pw@a.test/x", "a.test"), ("https://a.test?q", "a.test"), ("https://a.test#f", "a.test"),
        ("https://a.test", "a.test"), ("a.test/x", "a.test"), ("mailto:x@a.test", "a.test"), ("", ""),
        ("https://[::1]:443/x", "[::1]:443"), ("https://xn--bcher-kva.example/", "xn--bcher-kva.example"),
    ])
    func authorityIsTheHostAndPort(url: String, expected: String) {
        #expect(TransferRequest.authority(of: url) == expected)
    }
}

/// `StartPacer`: the transfers a loop runs below its slots follow how busy its thread is.
struct StartPacerTests {
    static let ms: UInt64 = 1_000_000

    /// Runs `windows` windows of 20 ms in which the thread wanted the CPU `share` of the time,
    /// with the target binding (more transfers queued than it allows).
    static func run(_ pacer: inout StartPacer, windows: Int, share: Double, from start: inout UInt64, wanted: inout UInt64) {
        for _ in 0..<windows {
            _ = pacer.mayStart(running: pacer.target)
            start += 20 * ms
            wanted += UInt64(Double(20 * ms) * share)
            pacer.tick(now: start, wanted: wanted)
        }
    }

    @Test func growsWhileIdleShrinksWhileBusyAndStaysBetweenFloorAndCeiling() {
        var now: UInt64 = 5 * Self.ms
        var wanted: UInt64 = 0
        var pacer = StartPacer(ceiling: 1024, now: now, wanted: wanted)
        #expect(pacer.target == StartPacer.floor)
        let below = pacer.mayStart(running: 7)
        let at = pacer.mayStart(running: 8)
        #expect(below && !at)
        // A thread mostly waiting on the network: the target climbs to the slots, and no further.
        Self.run(&pacer, windows: 40, share: 0.2, from: &now, wanted: &wanted)
        #expect(pacer.target == 1024)
        // A thread busy all the time: the target comes down, to the floor at most.
        Self.run(&pacer, windows: 12, share: 1.0, from: &now, wanted: &wanted)
        #expect(pacer.target < 400)
        Self.run(&pacer, windows: 200, share: 1.0, from: &now, wanted: &wanted)
        #expect(pacer.target == StartPacer.floor)
        // Between the two thresholds it holds.
        Self.run(&pacer, windows: 5, share: 0.9, from: &now, wanted: &wanted)
        let held = pacer.target
        Self.run(&pacer, windows: 20, share: 0.9, from: &now, wanted: &wanted)
        #expect(pacer.target == held)
    }

    @Test func aThreadBusyMostOfTheTimeGrowsItsTargetByOneThirtySecondNotAQuarter() {
        var now: UInt64 = 0
        var wanted: UInt64 = 0
        var pacer = StartPacer(ceiling: 1 << 20, now: now, wanted: wanted)
        // Busy 80 % of the time: between the fast-growth and the growth thresholds.
        Self.run(&pacer, windows: 6, share: 0.8, from: &now, wanted: &wanted)
        #expect(pacer.busy >= StartPacer.fastGrowBelow && pacer.busy < StartPacer.growBelow)
        let settled = pacer.target
        #expect(settled < 24)
        // Below 64 a 32nd rounds down to the minimum step of one transfer per window.
        Self.run(&pacer, windows: 20, share: 0.8, from: &now, wanted: &wanted)
        #expect(pacer.target == settled + 20)
        // Idle most of the time, the same 20 windows multiply it (by a quarter each).
        let before = pacer.target
        Self.run(&pacer, windows: 20, share: 0.1, from: &now, wanted: &wanted)
        #expect(pacer.target > before * 20)
        // From a large target, a busy thread's step is a 32nd of it.
        Self.run(&pacer, windows: 6, share: 0.8, from: &now, wanted: &wanted)
        let large = pacer.target
        Self.run(&pacer, windows: 1, share: 0.8, from: &now, wanted: &wanted)
        #expect(large >= 512 && pacer.target == large + large / 32)
    }

    /// A loop's crawl, window by window (20 ms, the thread busy `busy` of the time): the loop starts
    /// transfers while the pacer lets it; a transfer takes `time(running)` from its start, given
    /// the transfers running then, and succeeds, except the hosts `dead` names (by their place in
    /// the list, from 1), which never answer and fail after 5 s (a timeout).
    struct Crawl {
        var pacer: StartPacer
        var now: UInt64 = 0
        var wanted: UInt64 = 0
        var ends: [(at: UInt64, took: UInt64?)] = []
        var started = 0
        /// Whether the target was ever capped.
        var capped = false

        init(ceiling: Int) {
            pacer = StartPacer(ceiling: ceiling, now: 0, wanted: 0)
        }

        /// Runs `windows` windows; returns the most the target reached.
        @discardableResult
        mutating func run(windows: Int, busy: Double = 0.2, dead: (Int) -> Bool = { _ in false },
                          time: (Int) -> UInt64) -> Int {
            var highest = pacer.target
            for _ in 0..<windows {
                let now = self.now
                for end in ends where end.at <= now {
                    pacer.finished(taking: end.took)
                }
                ends.removeAll { $0.at <= now }
                while pacer.mayStart(running: ends.count) {
                    started += 1
                    if dead(started) {
                        ends.append((at: now + 5_000 * ms, took: nil))
                    } else {
                        let took = time(ends.count)
                        ends.append((at: now + took, took: took))
                    }
                }
                self.now += 20 * ms
                wanted += UInt64(busy * Double(20 * ms))
                pacer.tick(now: self.now, wanted: wanted, running: ends.count)
                highest = max(highest, pacer.target)
                capped = capped || pacer.cap != nil
            }
            return highest
        }
    }

    @Test func growingThatFinishesNoMoreTransfersIsCappedAtWhatRanBeforeThenProbedAgain() {
        var crawl = Crawl(ceiling: 1024)
        // The other side finishes 500 transfers a second however many run (a server that is the
        // bottleneck): by Little's law each takes 2 ms per transfer running, while the idle thread
        // makes the target grow.
        let server: (Int) -> UInt64 = { UInt64(max(1, $0)) * 2 * StartPacerTests.ms }
        let highest = crawl.run(windows: 30, time: server)
        guard let cap = crawl.pacer.cap else {
            Issue.record("growing that paid nothing was not capped (target \(crawl.pacer.target))")
            return
        }
        #expect(crawl.pacer.target == cap && cap < highest && highest < 1024)
        // Held for two seconds (100 windows) however idle the thread is.
        crawl.run(windows: 60, time: server)
        #expect(crawl.pacer.cap == cap && crawl.pacer.target == cap)
        // Then lifted: the target grows past it, until the check caps it again, this time for
        // four seconds.
        let probed = crawl.run(windows: 60, time: server)
        #expect(probed > cap)
        guard let second = crawl.pacer.cap else {
            Issue.record("the probe after the hold was not capped (target \(crawl.pacer.target))")
            return
        }
        crawl.run(windows: 150, time: server)
        #expect(crawl.pacer.cap == second && crawl.pacer.target == second)
    }

    @Test func growingThatFinishesMoreTransfersIsNotCapped() {
        // Network latency: a transfer takes 200 ms however many run, so running more finishes more.
        var crawl = Crawl(ceiling: 1024)
        crawl.run(windows: 60) { _ in 200 * StartPacerTests.ms }
        let (capped, target) = (crawl.capped, crawl.pacer.target)
        #expect(!capped)
        #expect(target == 1024)
    }

    @Test func hostsThatTimeOutDoNotReadAsGrowingThatDidNotPay() {
        // Network latency as above, with hosts that never answer and fail after 5 s: one in ten,
        // one in two, two in three, a block of 1,000 in a row (one provider's parked domains), or
        // every other one from the 200th (reached while the target grows). They pile up among the
        // transfers running while the others finish at the same pace. The thread is busy 80 % of
        // the time, so the target grows by a 32nd per window and the check sees it grow.
        let lists: [(String, (Int) -> Bool)] = [
            ("one in ten", { $0 % 10 == 0 }),
            ("one in two", { $0 % 2 == 0 }),
            ("two in three", { $0 % 3 != 0 }),
            ("hosts 200 to 1,199", { (200..<1_200).contains($0) }),
            ("every other host from the 200th", { $0 >= 200 && $0 % 2 == 0 }),
        ]
        for (name, dead) in lists {
            var crawl = Crawl(ceiling: 1024)
            crawl.run(windows: 500, busy: 0.8, dead: dead) { _ in 200 * StartPacerTests.ms }
            let (capped, target) = (crawl.capped, crawl.pacer.target)
            #expect(!capped, "\(name) dead")
            #expect(target == 1024, "\(name) dead")
        }
    }

    @Test func aTargetThatHeldNothingBackDoesNotGrow() {
        var now: UInt64 = 0
        var pacer = StartPacer(ceiling: 100, now: now, wanted: 0)
        for _ in 0..<50 {
            let allowed = pacer.mayStart(running: 2)  // few transfers to run: never bound
            #expect(allowed)
            now += 20 * StartPacerTests.ms
            pacer.tick(now: now, wanted: 0)
        }
        #expect(pacer.target == StartPacer.floor)
    }

    @Test func withoutSchedstatTheWallTimeOutsidePollCounts() {
        var now: UInt64 = 0
        var pacer = StartPacer(ceiling: 64, now: now)
        for _ in 0..<30 {
            _ = pacer.mayStart(running: pacer.target)
            pacer.waited(18 * StartPacerTests.ms)  // asleep 90 % of the window
            now += 20 * StartPacerTests.ms
            pacer.tick(now: now)
        }
        #expect(pacer.target == 64)
        for _ in 0..<60 {
            now += 20 * StartPacerTests.ms  // never asleep
            pacer.tick(now: now)
        }
        #expect(pacer.target == StartPacer.floor)
        // A window that is not over changes nothing; a clock that went back starts a new one.
        pacer.tick(now: now + StartPacerTests.ms)
        pacer.tick(now: now - StartPacerTests.ms)
        #expect(pacer.target == StartPacer.floor)
    }

    @Test func aSlotLimitBelowTheFloorIsTheTarget() {
        var pacer = StartPacer(ceiling: 3, now: 0)
        #expect(pacer.target == 3)
        let allowed = pacer.mayStart(running: 3)
        #expect(!allowed)
    }

    @Test func schedstatLinesAreParsed() {
        #expect(ThreadSchedule.parse(ArraySlice("123 456 7\n".utf8)) == 579)
        #expect(ThreadSchedule.parse(ArraySlice("123 456".utf8)) == 579)
        #expect(ThreadSchedule.parse(ArraySlice("123\n".utf8)) == nil)
        #expect(ThreadSchedule.parse(ArraySlice("".utf8)) == nil)
        #expect(ThreadSchedule.parse(ArraySlice("99999999999999999999 1 1".utf8)) == nil)
        #expect(ThreadSchedule.parse(ArraySlice("18446744073709551615 1 1".utf8)) == nil)
        // This thread's own line reads, and only grows.
        let schedule = ThreadSchedule()
        defer { schedule.close() }
        if let first = schedule.wanted() {
            var spin: UInt64 = 0
            for index in 0..<2_000_000 { spin &+= UInt64(index) }
            #expect(spin > 0)
            #expect((schedule.wanted() ?? 0) >= first)
        }
    }
}

/// The default number of curl loops: the cores this process may use.
struct CPUBudgetTests {
    @Test(arguments: [
        ("max 100000", nil), ("max 100000\n", nil), ("100000 100000", 1), ("150000 100000", 2), ("50000 100000", 1),
        ("200000 100000\n", 2), ("400000 50000", 8), ("1 1000000", 1), ("0 100000", nil), ("-1 100000", nil),
        ("100000", nil), ("", nil), ("abc def", nil), ("100000 0", nil),
    ] as [(String, Int?)])
    func cpuMaxInWholeCores(text: String, cores: Int?) {
        #expect(CPUBudget.cores(cpuMax: text) == cores)
    }

    /// The smallest quota on the path from the process's cgroup up to the root counts; a
    /// cgroup without a quota (`max`) or without the file does not.
    @Test func theSmallestQuotaOnTheCgroupPathCounts() {
        let files = [
            "/sys/fs/cgroup/cpu.max": "max 100000",
            "/sys/fs/cgroup/kubepods/cpu.max": "800000 100000",
            "/sys/fs/cgroup/kubepods/pod1/cpu.max": "250000 100000",
            "/sys/fs/cgroup/kubepods/pod1/app/cpu.max": "max 100000",
            "/sys/fs/cgroup/unified/system.slice/cpu.max": "150000 100000",
        ]
        let read = { (path: String) in files[path] }
        #expect(CPUBudget.cgroupV2Quota(membership: "0::/kubepods/pod1/app\n", read: read) == 3)
        #expect(CPUBudget.cgroupV2Quota(membership: "0::/kubepods\n", read: read) == 8)
        // A cgroup namespace: the process sees its own cgroup as the root.
        #expect(CPUBudget.cgroupV2Quota(membership: "0::/\n", read: { $0 == "/sys/fs/cgroup/cpu.max" ? "50000 100000" : nil }) == 1)
        // cgroup v1 lines only, or nothing to read: no quota.
        #expect(CPUBudget.cgroupV2Quota(membership: "4:memory:/x\n1:cpu:/\n", read: read) == nil)
        #expect(CPUBudget.cgroupV2Quota(membership: nil, read: read) == nil)
        #expect(CPUBudget.cgroupV2Quota(membership: "0::/other\n", read: { _ in nil }) == nil)
        // A hybrid layout: the v2 line last, and the v2 hierarchy mounted at .../unified.
        #expect(CPUBudget.cgroupV2Quota(membership: "9:name=systemd:/\n1:cpu:/\n0::/kubepods/pod1/other\n", read: read) == 3)
        #expect(CPUBudget.cgroupV2Quota(membership: "1:cpu:/\n0::/system.slice\n", read: read) == 2)
    }

    /// What this machine gives: at least one core, and never more than the affinity mask allows.
    @Test func theBudgetIsWithinTheAffinityMask() throws {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let allowed = line.split(separator: ":")[1].split(separator: ",").reduce(0) { total, range in
            let bounds = range.trimmingCharacters(in: .whitespaces).split(separator: "-").compactMap { Int($0) }
            return total + (bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 1)
        }
        #expect(CPUBudget.cores >= 1)
        #expect(CPUBudget.cores <= allowed)
        #expect(CurlClient.defaultThreads == CPUBudget.cores)
    }
}
