internal import CCurl
import Glibc

/// The loop run by the one thread that owns every curl handle of a ``CurlClient``.
///
/// Drains the ``Mailbox`` (starts and cancels) into its queue, hands queued transfers to curl while
/// fewer than the client's limit run, calls `curl_multi_perform`, completes finished transfers from
/// `curl_multi_info_read` and at once starts queued ones in their place, then sleeps in
/// `curl_multi_poll` until a socket is ready, curl's own timeout expires or another thread calls
/// `curl_multi_wakeup`. Nothing here is shared:
/// the multi, share and easy handles never leave this thread.
final class MultiLoop {
    private let mailbox: Mailbox
    private let multi: UnsafeMutableRawPointer
    private let share: UnsafeMutableRawPointer?
    private var transfers: [UInt64: Transfer] = [:]
    /// Started by callers but not yet handed to curl, oldest first: at most `maxActive` transfers
    /// run at once, and the next one starts on this thread the moment one finishes (no hop through
    /// the caller's threads); its timeouts start only then.
    private var queued: [(id: UInt64, request: TransferRequest, continuation: TransferContinuation)] = []
    private var queueHead = 0
    private let maxActive: Int

    private init(mailbox: Mailbox, multi: UnsafeMutableRawPointer, share: UnsafeMutableRawPointer?, maxActive: Int) {
        self.mailbox = mailbox
        self.multi = multi
        self.share = share
        self.maxActive = maxActive
    }

    /// Runs the loop on the calling thread until the client shuts down.
    static func run(mailbox: Mailbox, maxConnections: Int, maxConnectionsPerHost: Int) {
        guard CurlGlobal.isInitialized else {
            failEverything(mailbox, reason: "libcurl could not be initialised (curl_global_init returned \(CurlGlobal.initResult))")
            return
        }
        guard let multi = curl_multi_init() else {
            failEverything(mailbox, reason: "libcurl could not create a multi handle")
            return
        }
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max(0, maxConnections))
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(0, maxConnectionsPerHost))
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, ccurl_pipe_multiplex)

        // DNS cache and TLS session cache shared by every transfer. All handles live on this
        // thread, so the share handle needs no lock callbacks. Without it transfers still work.
        var share = curl_share_init()
        if let handle = share {
            let dns = ccurl_share_setopt_long(handle, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_DNS.rawValue))
            let tls = ccurl_share_setopt_long(handle, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
            if dns != CURLSHE_OK || tls != CURLSHE_OK {
                _ = curl_share_cleanup(handle)
                share = nil
            }
        }

        let loop = MultiLoop(mailbox: mailbox, multi: multi, share: share, maxActive: maxConnections > 0 ? maxConnections : Int.max)
        mailbox.publish(multi: MultiWakeupHandle(raw: multi))
        loop.runUntilStopped()
        loop.tearDown()
    }

    private static func failEverything(_ mailbox: Mailbox, reason: String) {
        let (commands, waiters) = mailbox.close(startupFailure: reason)
        let failure = TransferFailure(kind: Transfer.descriptorsExhausted() ? .descriptorsExhausted : .invalidRequest, message: reason)
        for case .start(_, _, let continuation) in commands {
            continuation.resume(returning: .failure(failure))
        }
        for waiter in waiters {
            waiter.resume()
        }
    }

    private func runUntilStopped() {
        while true {
            let (commands, stop) = mailbox.takeCommands()
            for command in commands {
                switch command {
                case .start(let id, let request, let continuation):
                    queued.append((id, request, continuation))
                case .cancel(let id):
                    cancel(id: id)
                }
            }
            if stop {
                return
            }
            startQueued()
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            drainMessages()
            if startQueued() {
                // Transfers just started: let curl begin them before sleeping.
                _ = curl_multi_perform(multi, &running)
                drainMessages()
            }
            var ready: Int32 = 0
            if curl_multi_poll(multi, nil, 0, 1000, &ready) != CURLM_OK {
                usleep(10_000)  // poll() itself failed: do not spin; transfers still time out
            }
        }
    }

    /// Hands queued transfers to curl while fewer than `maxActive` run; returns whether it started any.
    @discardableResult
    private func startQueued() -> Bool {
        var started = false
        while transfers.count < maxActive, queueHead < queued.count {
            let next = queued[queueHead]
            queueHead += 1
            start(id: next.id, request: next.request, continuation: next.continuation)
            started = true
        }
        if queueHead == queued.count {
            queued.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 1024, queueHead * 2 > queued.count {
            queued.removeFirst(queueHead)
            queueHead = 0
        }
        return started
    }

    private func start(id: UInt64, request: TransferRequest, continuation: TransferContinuation) {
        guard let transfer = Transfer(id: id, request: request, continuation: continuation) else {
            finish(id: id, continuation: continuation, result: .failure(
                TransferFailure(kind: Transfer.descriptorsExhausted() ? .descriptorsExhausted : .invalidRequest,
                                message: "libcurl could not create an easy handle")))
            return
        }
        do throws(TransferFailure) {
            try transfer.configure(share: share)
        } catch {
            complete(transfer, result: .failure(error), added: false)
            return
        }
        guard let easy = transfer.handle else { return }
        let code = curl_multi_add_handle(multi, easy)
        guard code == CURLM_OK else {
            let message = curl_multi_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
            complete(transfer, result: .failure(
                TransferFailure(kind: Transfer.descriptorsExhausted() ? .descriptorsExhausted : .invalidRequest,
                                curlCode: Int(code.rawValue), message: "curl_multi_add_handle: \(message)")),
                added: false)
            return
        }
        transfers[id] = transfer
    }

    private func cancel(id: UInt64) {
        if let transfer = transfers[id] {
            complete(transfer, result: .failure(Mailbox.cancelledFailure), added: true)
        } else if let index = queued[queueHead...].firstIndex(where: { $0.id == id }) {
            let waiting = queued.remove(at: index)
            finish(id: id, continuation: waiting.continuation, result: .failure(Mailbox.cancelledFailure))
        }  // else already finished
    }

    private func drainMessages() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard ccurl_msg_kind(message) == CURLMSG_DONE, let easy = ccurl_msg_easy(message) else { continue }
            let code = ccurl_msg_result(message)
            var userData: UnsafeMutableRawPointer?
            guard ccurl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &userData) == CURLE_OK,
                let transfer = Transfer.from(userData), transfers[transfer.id] === transfer
            else {
                // Not one of ours (cannot happen): detach it so the loop does not spin on it.
                _ = curl_multi_remove_handle(multi, easy)
                continue
            }
            let result: Result<TransferResponse, TransferFailure> =
                code == CURLE_OK ? .success(transfer.makeResponse()) : .failure(transfer.makeFailure(code))
            complete(transfer, result: result, added: true)
        }
    }

    /// Detaches and frees the transfer, then resumes its continuation (exactly once, no lock held).
    private func complete(_ transfer: Transfer, result: Result<TransferResponse, TransferFailure>, added: Bool) {
        if added, let easy = transfer.handle {
            _ = curl_multi_remove_handle(multi, easy)
        }
        transfer.cleanup()
        transfers[transfer.id] = nil
        let continuation = transfer.continuation
        transfer.continuation = nil
        if let continuation {
            finish(id: transfer.id, continuation: continuation, result: result)
        }
    }

    private func finish(id: UInt64, continuation: TransferContinuation, result: Result<TransferResponse, TransferFailure>) {
        mailbox.finished(id: id)
        continuation.resume(returning: result)
    }

    private func tearDown() {
        let (commands, waiters) = mailbox.close()
        for case .start(let id, _, let continuation) in commands {
            finish(id: id, continuation: continuation, result: .failure(Mailbox.shutDownFailure))
        }
        for waiting in queued[queueHead...] {
            finish(id: waiting.id, continuation: waiting.continuation, result: .failure(Mailbox.shutDownFailure))
        }
        queued = []
        queueHead = 0
        for transfer in Array(transfers.values) {
            complete(transfer, result: .failure(Mailbox.shutDownFailure), added: true)
        }
        _ = curl_multi_cleanup(multi)
        if let share {
            _ = curl_share_cleanup(share)
        }
        for waiter in waiters {
            waiter.resume()
        }
    }
}
