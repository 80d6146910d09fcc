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

    @Test func connectionFailureHasAStableCode() async {
        do {
            _ = try await PostgresConnection.connect("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2")
            Issue.record("expected a connection failure")
        } catch {
            #expect(error.code == "postgres-connect-failure")
        }
    }
}
