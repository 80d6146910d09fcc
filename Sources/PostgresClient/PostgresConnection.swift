import Dispatch
import Glibc
import Synchronization
internal import CLibPQ

/// A PostgreSQL error with a stable code and, for server errors, the SQLSTATE.
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `postgres-connect-failure`, `postgres-query-failure`, `postgres-timeout` (no answer in
    /// time, see ``PostgresConnection/responseTimeout``) or `postgres-closed`.
    public var code: String
    /// The server's SQLSTATE (e.g. `40001`), when it sent one.
    public var sqlState: String?
    /// libpq's message.
    public var message: String

    /// Creates an error.
    public init(code: String, sqlState: String? = nil, message: String) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
    }

    public var description: String {
        "\(code)\(sqlState.map { " [\($0)]" } ?? ""): \(message)"
    }
}

/// The rows of a query, every value in PostgreSQL's text format (`nil` for SQL NULL).
public struct PostgresRows: Sendable, Hashable {
    /// Column names.
    public var columns: [String]
    /// Rows of values.
    public var rows: [[String?]]
    /// Rows affected by an INSERT, UPDATE or DELETE.
    public var affected: Int

    /// The value of a named column in a row.
    public func value(_ row: Int, _ column: String) -> String? {
        guard let index = columns.firstIndex(of: column), rows.indices.contains(row) else { return nil }
        return rows[row][index]
    }
}

/// One connection to a PostgreSQL server through libpq.
///
/// libpq calls block, so every call runs on this connection's own serial queue, never on Swift's
/// cooperative thread pool; callers `await` the result. A connection serves one caller at a time
/// by construction (the queue), which is what libpq requires.
public final class PostgresConnection: @unchecked Sendable {
    // @unchecked: `connection` and `needsReset` are only touched on `queue`, which serialises
    // every access; `cutoff` is a Mutex.
    private let queue: DispatchQueue
    private var connection: OpaquePointer?
    /// Set when a statement was abandoned mid-answer: the connection's state is unknown, so the
    /// next call connects again (`PQreset`) before it sends anything.
    private var needsReset = false
    /// The longest a statement may wait for the server's answer (sending included).
    public let responseTimeout: Duration
    /// When set (``finish(within:)``), no statement may run past this instant.
    private let cutoff = Mutex<ContinuousClock.Instant?>(nil)

    private init(connection: OpaquePointer, queue: DispatchQueue, responseTimeout: Duration) {
        self.connection = connection
        self.queue = queue
        self.responseTimeout = responseTimeout
    }

    deinit {
        if let connection { PQfinish(connection) }
    }

    /// Connects with a libpq connection string or URL (`postgres://user@host:port/db`).
    ///
    /// Statements are sent without blocking and their answers awaited with `poll`, so a server that
    /// stops answering (frozen, overloaded, or cut off by the network with no reset) fails the
    /// statement with `postgres-timeout` after `responseTimeout` instead of blocking for good. The
    /// next call then connects again first.
    ///
    /// - Parameters:
    ///   - defaults: connection parameters (`connect_timeout`, `application_name`…) used when
    ///     `conninfo` does not set them itself.
    ///   - responseTimeout: the longest one statement may wait for its answer.
    public static func connect(
        _ conninfo: String, defaults: [String: String] = [:], responseTimeout: Duration = .seconds(120)
    ) async throws(PostgresError) -> PostgresConnection {
        let queue = DispatchQueue(label: "aasa-fetch.postgres")
        let result: Result<PostgresConnection, PostgresError> = await withCheckedContinuation { continuation in
            queue.async {
                // Defaults first, then `dbname` expanded from `conninfo`: libpq lets later values win.
                let pairs = defaults.sorted { $0.key < $1.key } + [("dbname", conninfo)]
                let keys = pairs.map { strdup($0.0) }
                let values = pairs.map { strdup($0.1) }
                defer { (keys + values).forEach { free($0) } }
                let connected = (keys.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { keyBuffer in
                    (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { valueBuffer in
                        PQconnectdbParams(keyBuffer.baseAddress, valueBuffer.baseAddress, 1)
                    }
                }
                guard let raw = connected else {
                    continuation.resume(returning: .failure(PostgresError(code: "postgres-connect-failure", message: "out of memory")))
                    return
                }
                guard PQstatus(raw) == CONNECTION_OK else {
                    let message = Self.errorMessage(raw)
                    PQfinish(raw)
                    continuation.resume(returning: .failure(PostgresError(code: "postgres-connect-failure", message: message)))
                    return
                }
                // Server notices (e.g. "relation … already exists, skipping") are not ours to print.
                PQsetNoticeProcessor(raw, { _, _ in }, nil)
                PQsetnonblocking(raw, 1)
                continuation.resume(returning: .success(PostgresConnection(connection: raw, queue: queue, responseTimeout: responseTimeout)))
            }
        }
        return try result.get()
    }

    /// Runs one statement with `$1`, `$2`… parameters sent separately (text format), and returns its rows.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) async throws(PostgresError) -> PostgresRows {
        let result: Result<PostgresRows, PostgresError> = await withCheckedContinuation { continuation in
            queue.async {
                if let failure = self.connectIfNeeded() {
                    continuation.resume(returning: .failure(failure))
                    return
                }
                continuation.resume(returning: self.executeOnQueue(sql, parameters))
            }
        }
        return try result.get()
    }

    /// From now on, every statement, the one running included, must end within `seconds`; past
    /// that it fails with `postgres-timeout` at once (a stopping process must not wait for a server
    /// that does not answer). An earlier limit stays.
    public func finish(within seconds: Duration) {
        let limit = ContinuousClock.now.advanced(by: seconds)
        cutoff.withLock { $0 = min($0 ?? limit, limit) }
    }

    /// Runs `body` as one transaction (`BEGIN` … `COMMIT`, `ROLLBACK` when it throws) on the
    /// connection's queue: no other caller's statement can interleave with it.
    ///
    /// A transaction that fails with a serialization failure or a deadlock (SQLSTATE `40001`,
    /// `40P01`) is run again, up to `attempts` times. A connection found broken before a
    /// transaction starts (the server restarted) is reset first; a transaction that fails because
    /// the connection broke before `COMMIT` was sent is reset and run again once.
    ///
    /// - Parameter body: the statements, run synchronously on the queue through the
    ///   ``PostgresTransaction`` it is given (valid only inside `body`).
    @discardableResult
    public func transaction<T: Sendable>(
        attempts: Int = 3, _ body: @escaping @Sendable (PostgresTransaction) throws -> T
    ) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.transactionOnQueue(attempts: max(1, attempts), body)) }
        }
        return try result.get()
    }

    /// Checks a connection string or URL without connecting: `nil` when libpq can parse it,
    /// else libpq's message (e.g. `invalid integer value "x" for connection option "port"`).
    public static func parseError(_ conninfo: String) -> String? {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            defer { if let message { PQfreemem(message) } }
            return message.map { String(cString: $0).trimmingCharacters(in: " \n") } ?? "cannot parse the connection string"
        }
        PQconninfoFree(options)
        return nil
    }

    /// Connects again when the last statement broke the connection or was abandoned; the error
    /// when that fails (or the ``finish(within:)`` limit has passed).
    private func connectIfNeeded() -> PostgresError? {
        guard let connection else { return nil }  // closed: the statement says so
        if let cutoff = cutoff.withLock({ $0 }), ContinuousClock.now >= cutoff {
            return PostgresError(code: "postgres-timeout", message: "the server did not answer before the process stopped waiting")
        }
        guard needsReset || PQstatus(connection) != CONNECTION_OK else { return nil }
        PQreset(connection)
        guard PQstatus(connection) == CONNECTION_OK else {
            return PostgresError(code: "postgres-connect-failure", message: Self.errorMessage(connection))
        }
        PQsetnonblocking(connection, 1)
        needsReset = false
        return nil
    }

    private func transactionOnQueue<T>(attempts: Int, _ body: (PostgresTransaction) throws -> T) -> Result<T, any Error> {
        var remaining = attempts
        var resetOnce = false
        while true {
            remaining -= 1
            if let failure = connectIfNeeded() { return .failure(failure) }
            if case .failure(let error) = executeOnQueue("BEGIN", []) {
                // A server restarted since the last call: the first statement finds the connection
                // dead. (Not after a timeout: the server may still be there, not answering.)
                if let connection, needsReset || PQstatus(connection) != CONNECTION_OK, error.code != "postgres-timeout", !resetOnce {
                    resetOnce = true
                    remaining = max(remaining, 1)
                    continue
                }
                return .failure(error)
            }
            let transaction = PostgresTransaction(connection: self)
            do {
                let value = try body(transaction)
                transaction.isOpen = false
                if case .failure(let error) = executeOnQueue("COMMIT", []) { return .failure(error) }
                return .success(value)
            } catch {
                transaction.isOpen = false
                let timedOut = (error as? PostgresError)?.code == "postgres-timeout"
                let broken = needsReset || (connection.map { PQstatus($0) != CONNECTION_OK } ?? false)
                if !broken { _ = executeOnQueue("ROLLBACK", []) }
                let state = (error as? PostgresError)?.sqlState
                if (state == "40001" || state == "40P01") && remaining > 0 { continue }
                if broken && !timedOut && !resetOnce && connection != nil {
                    resetOnce = true
                    remaining = max(remaining, 1)
                    continue
                }
                return .failure(error)
            }
        }
    }

    fileprivate func executeInTransaction(_ sql: String, _ parameters: [String?]) throws(PostgresError) -> PostgresRows {
        dispatchPrecondition(condition: .onQueue(queue))
        return try executeOnQueue(sql, parameters).get()
    }

    /// Closes the connection; later calls fail with `postgres-closed`.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                if let connection = self.connection { PQfinish(connection) }
                self.connection = nil
                continuation.resume()
            }
        }
    }

    private func executeOnQueue(_ sql: String, _ parameters: [String?]) -> Result<PostgresRows, PostgresError> {
        guard let connection else {
            return .failure(PostgresError(code: "postgres-closed", message: "the connection is closed"))
        }
        // Keep C copies of the parameters alive for the call.
        let cStrings: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.flatMap { strdup($0) } }
        defer { cStrings.forEach { free($0) } }
        let pointers = cStrings.map { UnsafePointer($0) }
        let sent = pointers.withUnsafeBufferPointer { buffer in
            PQsendQueryParams(connection, sql, Int32(parameters.count), nil, buffer.baseAddress, nil, nil, 0)
        }
        guard sent == 1 else {
            return .failure(PostgresError(code: "postgres-query-failure", message: Self.errorMessage(connection)))
        }
        // Every result of the statement (one, or an error), each awaited without blocking.
        var results: [OpaquePointer] = []
        defer { results.forEach { PQclear($0) } }
        let deadline = ContinuousClock.now.advanced(by: responseTimeout)
        while true {
            if let failure = awaitAnswer(connection, deadline: deadline) {
                needsReset = true
                return .failure(failure)
            }
            guard let next = PQgetResult(connection) else { break }
            results.append(next)
        }
        // One statement (the extended protocol allows no more): one result, its rows or its error.
        guard let raw = results.last else {
            return .failure(PostgresError(code: "postgres-query-failure", message: Self.errorMessage(connection)))
        }
        switch PQresultStatus(raw) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            let columnCount = Int(PQnfields(raw))
            let rowCount = Int(PQntuples(raw))
            let columns = (0..<columnCount).map { String(cString: PQfname(raw, Int32($0))) }
            var rows: [[String?]] = []
            rows.reserveCapacity(rowCount)
            for row in 0..<rowCount {
                rows.append((0..<columnCount).map { column in
                    PQgetisnull(raw, Int32(row), Int32(column)) == 1
                        ? nil : String(cString: PQgetvalue(raw, Int32(row), Int32(column)))
                })
            }
            let affected = Int(String(cString: PQcmdTuples(raw))) ?? 0
            return .success(PostgresRows(columns: columns, rows: rows, affected: affected))
        default:
            let state = PQresultErrorField(raw, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = PQresultErrorMessage(raw).map { String(cString: $0) } ?? "query failed"
            return .failure(PostgresError(code: "postgres-query-failure", sqlState: state,
                                          message: message.trimmingCharacters(in: " \n")))
        }
    }

    /// Sends what libpq still holds and reads until the next result can be taken without
    /// blocking; `nil` then. An error when the connection breaks, or `postgres-timeout` when the
    /// server has not answered by `deadline` (or the ``finish(within:)`` limit).
    private func awaitAnswer(_ connection: OpaquePointer, deadline: ContinuousClock.Instant) -> PostgresError? {
        let socket = PQsocket(connection)
        while true {
            let flushed = PQflush(connection)  // 0: all sent, 1: more to send, -1: failed
            if flushed < 0 {
                return PostgresError(code: "postgres-query-failure", message: Self.errorMessage(connection))
            }
            if flushed == 0 && PQisBusy(connection) == 0 { return nil }
            let limit = cutoff.withLock { $0 }.map { min($0, deadline) } ?? deadline
            let left = ContinuousClock.now.duration(to: limit)
            if left <= .zero || socket < 0 {
                let waited = limit == deadline ? "within \(responseTimeout.components.seconds) s" : "before the process stopped waiting"
                return PostgresError(code: "postgres-timeout", message: "the server did not answer \(waited)")
            }
            // At most a quarter of a second at a time, so a later finish(within:) is seen.
            let milliseconds = min(250, max(1, Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN) | (flushed == 1 ? Int16(POLLOUT) : 0), revents: 0)
            let ready = poll(&descriptor, 1, Int32(milliseconds))
            if ready < 0 && errno != EINTR {
                return PostgresError(code: "postgres-query-failure", message: "poll: \(String(cString: strerror(errno)))")
            }
            if ready > 0, descriptor.revents & (Int16(POLLIN) | Int16(POLLERR) | Int16(POLLHUP)) != 0 {
                if PQconsumeInput(connection) == 0 {
                    return PostgresError(code: "postgres-query-failure", message: Self.errorMessage(connection))
                }
            }
        }
    }

    /// libpq's message on one line (it breaks hints onto indented lines of their own).
    private static func errorMessage(_ connection: OpaquePointer) -> String {
        let text = (PQerrorMessage(connection).map { String(cString: $0) } ?? "unknown error").trimmingCharacters(in: " \n\t")
        return text.split(whereSeparator: { $0 == "\n" || $0 == "\t" }).map { String($0).trimmingCharacters(in: " ") }.joined(separator: " ")
    }
}

/// A transaction in progress: statements run synchronously on the connection's own queue (never
/// on Swift's cooperative pool). Valid only inside the body given to
/// ``PostgresConnection/transaction(attempts:_:)``.
public final class PostgresTransaction: @unchecked Sendable {
    // @unchecked: used only on the connection's queue, inside the transaction body.
    private let connection: PostgresConnection
    fileprivate var isOpen = true

    fileprivate init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Runs one statement with `$1`, `$2`… parameters sent separately (text format).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresRows {
        guard isOpen else { throw PostgresError(code: "postgres-closed", message: "the transaction is over") }
        return try connection.executeInTransaction(sql, parameters)
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var scalars = Substring(self)
        while let last = scalars.last, set.contains(last) { scalars = scalars.dropLast() }
        while let first = scalars.first, set.contains(first) { scalars = scalars.dropFirst() }
        return String(scalars)
    }
}
