import Dispatch
import Glibc
internal import CLibPQ

/// A PostgreSQL error with a stable code and, for server errors, the SQLSTATE.
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `postgres-connect-failure`, `postgres-query-failure` or `postgres-closed`.
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
    // @unchecked: `connection` is only touched on `queue`, which serialises every access.
    private let queue: DispatchQueue
    private var connection: OpaquePointer?

    private init(connection: OpaquePointer, queue: DispatchQueue) {
        self.connection = connection
        self.queue = queue
    }

    deinit {
        if let connection { PQfinish(connection) }
    }

    /// Connects with a libpq connection string or URL (`postgres://user@host:port/db`).
    ///
    /// - Parameter defaults: connection parameters (`connect_timeout`, `application_name`…) used
    ///   when `conninfo` does not set them itself.
    public static func connect(_ conninfo: String, defaults: [String: String] = [:]) async throws(PostgresError) -> PostgresConnection {
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
                continuation.resume(returning: .success(PostgresConnection(connection: raw, queue: queue)))
            }
        }
        return try result.get()
    }

    /// Runs one statement with `$1`, `$2`… parameters sent separately (text format), and returns its rows.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) async throws(PostgresError) -> PostgresRows {
        let result: Result<PostgresRows, PostgresError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.executeOnQueue(sql, parameters)) }
        }
        return try result.get()
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

    private func transactionOnQueue<T>(attempts: Int, _ body: (PostgresTransaction) throws -> T) -> Result<T, any Error> {
        var remaining = attempts
        var resetOnce = false
        while true {
            remaining -= 1
            if let connection, PQstatus(connection) != CONNECTION_OK {
                PQreset(connection)
                if PQstatus(connection) != CONNECTION_OK {
                    return .failure(PostgresError(code: "postgres-connect-failure", message: Self.errorMessage(connection)))
                }
            }
            if case .failure(let error) = executeOnQueue("BEGIN", []) {
                // A server restarted since the last call: the first statement finds the connection dead.
                if let connection, PQstatus(connection) != CONNECTION_OK, !resetOnce {
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
                let broken = connection.map { PQstatus($0) != CONNECTION_OK } ?? false
                if !broken { _ = executeOnQueue("ROLLBACK", []) }
                let state = (error as? PostgresError)?.sqlState
                if (state == "40001" || state == "40P01") && remaining > 0 { continue }
                if broken && !resetOnce && connection != nil {
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
        let raw = pointers.withUnsafeBufferPointer { buffer in
            PQexecParams(connection, sql, Int32(parameters.count), nil, buffer.baseAddress, nil, nil, 0)
        }
        guard let raw else {
            return .failure(PostgresError(code: "postgres-query-failure", message: Self.errorMessage(connection)))
        }
        defer { PQclear(raw) }
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
