import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation
import Synchronization

extension AASAFetchCommand {
    /// `aasa-fetch [fetch]`: downloads every associated domain's file the way the OS does and says
    /// whether each entry associates the app. The default command.
    ///
    /// Exit status: 0 every entry associates (or could not be judged for want of an app ID),
    /// 1 at least one fails, 2 the input could not be read, 64 usage error.
    /// JSON shape: ``RunReport`` (docs/json.md, docs/schema/fetch.schema.json).
    struct Fetch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fetch",
            abstract: "Download every associated domain's file as Apple's downloader does, and judge association (default command).",
            discussion: HelpText.discussion(
                "Records what it downloads in the store (--cache, --store; --no-store for a pure run).",
                examples: CommandHelp.fetch, exitCodes: CommandHelp.fetchExitCodes)
        )

        @OptionGroup var input: InputOptions
        @OptionGroup var network: NetworkOptions
        @OptionGroup var routing: RouteOptions
        @OptionGroup var storage: RunStoreOptions
        @OptionGroup var output: FormatOptions
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        /// Whether the run prints JSON (`--json`, `--format json`).
        var json: Bool { output.format == .json }

        private var store: StoreOptions { storage.store }
        private var noStore: Bool { storage.noStore }
        private var quiet: Bool { input.quiet }

        func run() async throws {
            try input.requireEntries(command: "fetch")
            let console = Console.standard
            // SIGINT, SIGTERM, SIGHUP: downloads under way are cancelled, what finished is
            // recorded, then the process ends as the signal would have ended it. Caught from the
            // spool's making on, or from the store's opening on (the handlers' pipe takes two
            // descriptors, which a store opened under a tight limit needs).
            let stop = RunStop()
            defer { stop.uninstall() }
            if input.domainsFile != nil {
                try await runSpooled(console: console, stop: stop)
                return
            }
            let loaded = try input.loadOrExit(console: console)
            let region = input.effectiveRegion
            let plan = FetchPlan(entries: loaded.entries, prioritizer: DomainPrioritizer(region: region))
            // Every fetch with its route (a CDN host is keyed by its route in the store, too); with
            // `both`, the CDN fetches compared with the origin's, host by host.
            let (routed, comparison) = RoutedRun.split(plan, route: routing.route)
            let source = PlanSource(plan: routed, comparison: comparison, labelsCDN: routing.route == .cdn)
            try await runStreaming(source: source, settled: loaded.settled, region: region, console: console, stop: stop) { store, now throws(CommandFailure) in
                try await StoreSession.registerInChunks(plan: routed, appIDs: loaded.appIDs, in: store, now: now)
            }
        }

        /// A `--domains` run (every route) through a ``RunSpool``: the list is read line by line
        /// into a temporary database, hosts are registered, fetched, judged and printed a page at a
        /// time, and the entries section is read back from it; the spool is deleted at the end, on
        /// failure and on SIGINT/SIGTERM/SIGHUP.
        private func runSpooled(console: Console, stop: RunStop) async throws {
            let region = input.effectiveRegion
            let spool: RunSpool
            do {
                spool = try RunSpool(prioritizer: DomainPrioritizer(region: region))
            } catch {
                throw CommandFailure(code: error.code, message: error.message)
            }
            stop.removeOnStop(spool.directory)
            stop.install()
            defer { spool.remove() }
            let settled: InputOptions.Settled
            let source: SpoolSource
            do {
                settled = try input.loadSpooled(into: spool)
                source = try SpoolSource(spool: spool, route: routing.route)
            } catch {
                throw CommandFailure(spool: error)
            }
            try await runStreaming(source: source, settled: settled, region: region, console: console, stop: stop) { store, now throws(CommandFailure) in
                try await StoreSession.registerInChunks(spool: spool, route: routing.route, appIDs: settled.appIDs, in: store, now: now)
            }
        }

        /// Every run, streamed: opens the store and registers the run's hosts with
        /// `register`, fetches, judges, prints and records each host, and sets the exit status.
        private func runStreaming(
            source: any RunSource, settled: InputOptions.Settled, region: String?, console: Console, stop: RunStop,
            register: (any AssociationStore, Date) async throws(CommandFailure) -> Void
        ) async throws {
            // A record per host: standard output is written in blocks (not on a terminal).
            StandardStreams.bufferOutput()
            // The store: opened before any download, so an unusable one stops the run at once.
            var recordIn: (any AssociationStore)?
            if !noStore {
                do {
                    let opened = try await store.open(create: true)
                    // The streaming run loads each batch's stored states when it records it.
                    let registeredAt = Date()
                    try await register(opened, registeredAt)
                    // Every host registered: the run's set replaces the app's earlier one.
                    try await StoreSession.replaceSets(appIDs: settled.appIDs, route: routing.route, registeredAt: registeredAt, in: opened,
                                                       console: quiet ? nil : console)
                    recordIn = opened
                } catch {
                    throw CommandFailure(code: error.code, message: "\(error.message) (--no-store runs without it)")
                }
            }
            let options = try network.fetchOptions()
            // After the store and the CA file, before the loops are fitted to the descriptors
            // left (they count the handlers' pipe then).
            stop.install()
            let clients = RouteClients(options: options, usesCDN: routing.route != .origin)
            let fetcher = clients.fetcher(cdnBase: routing.cdnBase)
            let hosts = source.hostCount
            let progress = ProgressReporter(total: hosts, quiet: quiet, console: console)
            let streaming = StreamingRun(
                source: source, fetcher: fetcher, settled: settled, region: region, format: output.format,
                console: console, store: recordIn, progress: progress, stopped: { stop.signal != nil }, quiet: quiet
            )
            // On a task of its own, so that a signal can cancel it; the run is handed over whole.
            let handover = Handover(streaming)
            let running = Task { await handover.value.run() }
            stop.cancelOnStop(running)
            let (summary, failure) = await running.value
            await clients.shutdown()
            // Stopped by a signal: what finished is recorded; end as the signal would have.
            if let number = stop.signal { stop.end(number) }
            if let failure { throw failure }
            // An error about the app itself (`--app`: a profile that refuses a domain, signatures
            // that disagree) fails the run as an entry that fails does: the device would refuse.
            if let summary, summary.failed > 0 || settled.findings.contains(where: { $0.severity == .error }) { throw ExitStatus.failure }
        }
    }
}

/// A progress line on standard error, rewritten in place (`\r`, erase to the end of the line).
enum ProgressLine {
    /// Whether to draw one: standard error is a terminal that takes cursor control (not
    /// `TERM=dumb`) and the run is not `--quiet`.
    static func enabled(console: Console, quiet: Bool) -> Bool {
        !quiet && console.stderrIsTerminal && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// `line` escaped and cut to one row of the terminal: a line that wraps cannot be rewritten
    /// in place (`\r` goes back to the start of its last row only), so each redraw left a copy.
    static func fitted(_ line: String, width: Int? = terminalWidth()) -> String {
        let escaped = TerminalText.escaped(line)
        guard let width, width > 1, escaped.count >= width else { return escaped }
        return String(escaped.prefix(width - 2)) + "…"
    }

    /// The columns of the terminal on standard error, when it says.
    static func terminalWidth() -> Int? {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}

/// A value built on one task and handed to another, which alone uses it from then on (the
/// streaming run holds its source, a class that is not `Sendable`, and nothing else touches it
/// once its task starts).
private final class Handover<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A fetch run's answer to the stopping signals (``StoppingSignals``). While the downloads run,
/// the first signal cancels them: nothing new starts, what finished is judged, printed and
/// recorded (``StreamingRun`` then skips its closing summary), and the process ends as the signal
/// would have ended it (``end(_:)``). Before the downloads start, or at a second signal, the
/// process ends at once. Either way the run spool is deleted (the folder is unlinked without
/// waiting for the database: a write may be under way).
final class RunStop: Sendable {
    private struct State {
        var signal: Int32?
        var running: Task<(summary: RunSummary?, failure: CommandFailure?), Never>?
        var spool: String?
    }

    private let state = Mutex(State())
    private let handlers = Mutex<StoppingSignals.Installed?>(nil)

    /// Catches the stopping signals from now on (once; later calls do nothing).
    func install() {
        handlers.withLock { installed in
            guard installed == nil else { return }
            installed = StoppingSignals.install { [weak self] number in self?.caught(number) }
        }
    }

    /// Gives the signals their default action back.
    func uninstall() {
        handlers.withLock { installed in
            installed?.cancel()
            installed = nil
        }
    }

    /// The first signal caught, if any.
    var signal: Int32? { state.withLock { $0.signal } }

    /// The run spool to delete when the process ends on a signal.
    func removeOnStop(_ directory: String) {
        state.withLock { $0.spool = directory }
    }

    /// The downloads a signal cancels; when one came already, they are cancelled at once.
    func cancelOnStop(_ task: Task<(summary: RunSummary?, failure: CommandFailure?), Never>) {
        let cancelNow = state.withLock { state -> Bool in
            state.running = task
            return state.signal != nil
        }
        if cancelNow { task.cancel() }
    }

    /// Called for each signal (on a global queue).
    func caught(_ number: Int32) {
        let (first, running) = state.withLock { state -> (Bool, Task<(summary: RunSummary?, failure: CommandFailure?), Never>?) in
            let first = state.signal == nil
            if first { state.signal = number }
            return (first, state.running)
        }
        guard first, let running else { end(number) }
        running.cancel()
    }

    /// Deletes the spool, writes what was judged and ends the process with exit 128 + `number`,
    /// as a shell reports a process the signal ended.
    func end(_ number: Int32) -> Never {
        if let spool = state.withLock({ $0.spool }) { try? FileManager.default.removeItem(atPath: spool) }
        // What was judged reaches the reader, as if standard output were not buffered.
        StandardStreams.flushOutputIfIdle()
        _exit(128 + number)
    }
}

/// Progress on standard error while hosts download: done/total, rate, failures by code, ETA.
/// Only on a terminal; one line rewritten in place. When standard output goes to the same
/// terminal, every result written there goes through ``output(endsLine:_:)``, which erases the
/// progress line first and draws it again after the result, so the two never share a line; it is
/// drawn only while standard output is at the start of a line (a `--json` document whose last line
/// is still open is never erased).
final class ProgressReporter: Sendable {
    private struct State {
        var done = 0
        var failures: [String: Int] = [:]
        var lastDraw = ContinuousClock.now - .seconds(1)
        /// The text of the progress line, once there is one.
        var line: String?
        /// Whether the progress line is on the screen now.
        var shown = false
        /// Whether standard output's last write ended a line (the cursor is at column 0).
        var outputAtLineStart = true
        var finished = false
    }

    private let total: Int
    private let enabled: Bool
    private let sharesTerminal: Bool
    private let started = ContinuousClock.now
    private let state = Mutex(State())
    private let write: @Sendable (String) -> Void

    /// - Parameters:
    ///   - enabled: whether to draw at all (standard error is a terminal, not `--quiet`, several hosts).
    ///   - sharesTerminal: whether standard output is that same terminal.
    ///   - write: where the progress escapes and text go (standard error).
    init(total: Int, enabled: Bool, sharesTerminal: Bool = false,
         write: @escaping @Sendable (String) -> Void = { Console.standard.errControl($0) }) {
        self.total = total
        self.enabled = enabled
        self.sharesTerminal = sharesTerminal
        self.write = write
    }

    /// A progress reporter for a console: enabled when standard error is a terminal and `quiet` is not set.
    convenience init(total: Int, quiet: Bool, console: Console) {
        self.init(total: total, enabled: ProgressLine.enabled(console: console, quiet: quiet) && total > 1,
                  sharesTerminal: console.stdoutSharesTerminalWithStderr)
    }

    func update(done: Int, result: HostFetchResult) {
        guard enabled else { return }
        state.withLock { state in
            state.done = done
            if result.code != "ok" { state.failures[result.code, default: 0] += 1 }
            let now = ContinuousClock.now
            guard now - state.lastDraw >= .milliseconds(100) || done == total else { return }
            state.lastDraw = now
            let elapsed = Double((now - started).components.seconds) + Double((now - started).components.attoseconds) / 1e18
            let rate = elapsed > 0 ? Double(done) / elapsed : 0
            let eta = rate > 0 ? Int(Double(total - done) / rate) : 0
            let failures = state.failures.sorted { $0.value > $1.value }.prefix(3).map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            state.line = "\(done)/\(total) hosts · \(String(format: "%.1f", rate))/s · ETA \(eta)s" + (failures.isEmpty ? "" : " · \(failures)")
            draw(&state)
        }
    }

    /// Runs `body`, which writes to standard output, with the progress line out of its way: erased
    /// before, drawn again after when `body` ended its last line (`endsLine`).
    func output<E: Error>(endsLine: Bool = true, _ body: () throws(E) -> Void) throws(E) {
        guard enabled, sharesTerminal else {
            try body()
            return
        }
        try state.withLock { (state) throws(E) in
            erase(&state)
            defer {
                state.outputAtLineStart = endsLine
                draw(&state)
            }
            try body()
        }
    }

    func finish() {
        guard enabled else { return }
        state.withLock { state in
            erase(&state)
            state.finished = true
        }
    }

    private func draw(_ state: inout State) {
        guard let line = state.line, !state.finished, !sharesTerminal || state.outputAtLineStart else { return }
        write("\r\u{1B}[K" + ProgressLine.fitted(line))
        state.shown = true
    }

    private func erase(_ state: inout State) {
        guard state.shown else { return }
        write("\r\u{1B}[K")
        state.shown = false
    }
}
