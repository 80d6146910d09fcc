import AASAFetchTestSupport
import PostgresClient
import Testing

/// The libpq wrapper against a real PostgreSQL server on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PostgresConnectionTests {
    @Test func queriesWithParametersNullsAndErrors() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let connection = try await PostgresConnection.connect(server.url)
        try await connection.execute("CREATE TABLE t (id int PRIMARY KEY, name text, body bytea)")
        let inserted = try await connection.execute(
            "INSERT INTO t VALUES ($1, $2, decode($3, 'base64')), ($4, NULL, NULL)", ["1", "a'b\"c; DROP TABLE t", "AAEC/w==", "2"])
        #expect(inserted.affected == 2)
        let rows = try await connection.execute("SELECT id, name, encode(body, 'base64') AS body FROM t ORDER BY id")
        #expect(rows.columns == ["id", "name", "body"])
        #expect(rows.rows == [["1", "a'b\"c; DROP TABLE t", "AAEC/w=="], ["2", nil, nil]])
        #expect(rows.value(0, "name") == "a'b\"c; DROP TABLE t")

        do {
            try await connection.execute("INSERT INTO t VALUES (1, 'dup', NULL)")
            Issue.record("expected a unique violation")
        } catch {
            #expect(error.code == "postgres-query-failure")
            #expect(error.sqlState == "23505")
        }
        await connection.close()
        await #expect(throws: PostgresError.self) { try await connection.execute("SELECT 1") }
    }

    /// A statement far larger than the socket's buffers is sent in pieces (the connection does
    /// not block on a send) and answered.
    @Test func aLargeParameterIsSentWhole() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let connection = try await PostgresConnection.connect(server.url)
        let large = String(repeating: "0123456789abcdef", count: 512 * 1024)  // 8 MiB
        let rows = try await connection.execute("SELECT length($1) AS n, md5($1) = md5(repeat('0123456789abcdef', 524288)) AS same", [large])
        #expect(rows.rows == [["8388608", "t"]])
    }

    /// A server that stops answering (frozen: its connections open, nothing sent back, as with a
    /// hung machine) fails a statement with `postgres-timeout` after the response timeout, once,
    /// instead of blocking for good; when it answers again, the next call connects again and works.
    @Test func aFrozenServerTimesOutAndTheConnectionRecovers() async throws {
        let server = try await PostgresServer.start()
        defer {
            server.resume()
            server.stop()
        }
        var connection: PostgresConnection?
        for transaction in [false, true] {
            server.resume()
            let connected = try await PostgresConnection.connect(server.url, responseTimeout: .seconds(2))
            connection = connected
            try await connected.execute("SELECT 1")
            server.pause()
            let started = ContinuousClock.now
            do {
                if transaction {
                    try await connected.transaction { try $0.execute("SELECT 1") }
                } else {
                    try await connected.execute("SELECT 1")
                }
                Issue.record("a frozen server answered")
            } catch let error as PostgresError {
                #expect(error.code == "postgres-timeout", "\(error)")
                #expect(error.message == "the server did not answer within 2 s")
            }
            // It waited for the answer, and gave up once: a transaction run again would first have
            // to connect again, and fail on the frozen server with postgres-connect-failure.
            #expect(started.duration(to: .now) >= .seconds(2), "transaction \(transaction)")
        }
        server.resume()
        let recovered = try #require(connection)
        let rows = try await recovered.execute("SELECT 42 AS answer")
        #expect(rows.value(0, "answer") == "42")
        let inTransaction = try await recovered.transaction { try $0.execute("SELECT 43 AS answer").value(0, "answer") }
        #expect(inTransaction == "43")
    }

    /// `finish(within:)` (a process stopping) cuts the statement in progress short, long before
    /// the response timeout, and fails later statements at once, even once the server is back.
    @Test func finishWithinBoundsTheStatementInProgressAndLaterOnes() async throws {
        let server = try await PostgresServer.start()
        defer {
            server.resume()
            server.stop()
        }
        let connection = try await PostgresConnection.connect(server.url)
        #expect(connection.responseTimeout == .seconds(120))
        try await connection.execute("SELECT 1")
        server.pause()
        let started = ContinuousClock.now
        let statement = Task { () -> PostgresError? in
            do throws(PostgresError) {
                try await connection.execute("SELECT 1")
                return nil
            } catch {
                return error
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        connection.finish(within: .seconds(1))
        let error = await statement.value
        let waited = started.duration(to: .now)
        #expect(error?.code == "postgres-timeout", "\(String(describing: error))")
        #expect(error?.message == "the server did not answer before the process stopped waiting")
        // Cut short by the limit (1 s after 0.5 s), not by the 120 s response timeout.
        #expect(waited >= .milliseconds(1400) && waited < .seconds(60), "\(waited)")
        // Later statements fail without trying, even with the server back.
        server.resume()
        do {
            try await connection.execute("SELECT 1")
            Issue.record("a statement ran after the limit")
        } catch {
            #expect(error.code == "postgres-timeout" && error.message == "the server did not answer before the process stopped waiting")
        }
    }

    @Test func connectionFailureHasAStableCode() async {
        do {
            _ = try await PostgresConnection.connect("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2")
            Issue.record("expected a connection failure")
        } catch {
            #expect(error.code == "postgres-connect-failure")
        }
    }
}
