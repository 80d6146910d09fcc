@testable import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// What is particular to the SQLite store (files, migrations, query plan), on real files in
/// temporary folders.
struct StoreTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    final class TemporaryStore {
        let folder: URL
        let path: String
        init() {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-store-test-\(UUID().uuidString)")
            path = folder.appendingPathComponent(SQLiteAssociationStore.fileName).path
        }
        deinit { try? FileManager.default.removeItem(at: folder) }
        func open(create: Bool = true) throws -> SQLiteAssociationStore { try SQLiteAssociationStore(path: path, create: create) }
    }

    static func key(_ host: String) -> HostKey { HostKey(host: host) }

    static func register(_ store: SQLiteAssociationStore, _ hosts: [(String, Int)], at now: Date = t0) async throws {
        _ = try await store.register(
            hosts: hosts.map { HostRegistration(key: key($0.0), tier: $0.1) },
            needs: hosts.map { EntryNeed(entry: "applinks:\($0.0)", service: .applinks, host: $0.0, appID: "ABCDE12345.com.example.app") },
            now: now)
    }

    @Test func migrationsRunOnceAndReopen() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        #expect(try await store.appliedMigrations() == ["v1", "v2-retention", "v3-notify", "v4-claim-indexes"])
        #expect(try await store.integrityCheck() == ["ok"])
        try await Self.register(store, [("example.com", 0)])
        let reopened = try temporary.open(create: false)
        #expect(try await reopened.appliedMigrations() == ["v1", "v2-retention", "v3-notify", "v4-claim-indexes"])
        #expect(try await reopened.allHosts().map(\.key.host) == ["example.com"])
    }

    @Test func dueQueryUsesTheNextCheckIndex() async throws {
        let temporary = TemporaryStore()
        let plan = try await temporary.open().dueQueryPlan().joined(separator: " | ")
        #expect(plan.contains("hosts_next_check"), "plan: \(plan)")
    }

    /// SQLite's default page cache (2 MiB) filled with a large run and was a tenth of a crawl's
    /// memory; the store keeps a small one, also after a reopen.
    @Test func theStoreKeepsASmallPageCache() async throws {
        let temporary = TemporaryStore()
        #expect(try await temporary.open().pageCacheSetting() == -512)
        #expect(try await temporary.open(create: false).pageCacheSetting() == -512)
    }

    @Test func unusableFilesGiveStableCodes() async throws {
        let temporary = TemporaryStore()
        do {
            _ = try temporary.open(create: false)
            Issue.record("a missing store opened")
        } catch let error as StoreError {
            #expect(error.code == "store-missing")
        }
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: temporary.path))
        do {
            _ = try temporary.open()
            Issue.record("a corrupt store opened")
        } catch let error as StoreError {
            #expect(error.code == "store-corrupt", "\(error)")
        }
    }

    /// An empty file (truncated to nothing, a stray `>`) where the store should be is
    /// `store-missing` for a command that does not create stores (`refresh`, `show`, `report`): it
    /// used to be made a new, empty store, and a cron `refresh` then said nothing, for good. The
    /// file is left as it was; a recording command (`create`) still makes the store in it.
    @Test func anEmptyFileIsNoStore() async throws {
        let temporary = TemporaryStore()
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        let url = URL(fileURLWithPath: temporary.path)
        try Data().write(to: url)
        for readOnly in [false, true] {
            do {
                _ = try SQLiteAssociationStore(path: temporary.path, create: false, readOnly: readOnly)
                Issue.record("an empty file opened as a store (readOnly: \(readOnly))")
            } catch let error as StoreError {
                #expect(error.code == "store-missing", "\(error)")
                #expect(error.message.contains("holds no store"), "\(error)")
            }
        }
        #expect(try Data(contentsOf: url).isEmpty, "the empty file was written")
        // An empty SQLite database (no aasa-fetch schema) is no store either.
        let python = try #require(ChildProcess.find("python3"))
        let made = try ChildProcess.run(python, ["-c", "import sqlite3, sys; d = sqlite3.connect(sys.argv[1]); d.execute('PRAGMA user_version = 1'); d.commit()",
                                                 temporary.path])
        #expect(made.status == 0, "\(made.standardError)")
        do {
            _ = try SQLiteAssociationStore(path: temporary.path, create: false)
            Issue.record("an empty database opened as a store")
        } catch let error as StoreError {
            #expect(error.code == "store-missing", "\(error)")
        }
        let created = try SQLiteAssociationStore(path: temporary.path, create: true)
        #expect(try await created.allHosts().isEmpty)
    }

    /// Another application's SQLite file at the store's path is never made into a store (a
    /// recording run added our tables beside its own; readers called it "an empty file"): every
    /// open says it is not an aasa-fetch store, and its table is left as it was.
    @Test func anotherApplicationsDatabaseIsNeverMadeIntoAStore() async throws {
        let temporary = TemporaryStore()
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        let python = try #require(ChildProcess.find("python3"))
        let made = try ChildProcess.run(python, ["-c", "import sqlite3, sys; d = sqlite3.connect(sys.argv[1]); d.execute('CREATE TABLE customers (name TEXT)'); d.execute(\"INSERT INTO customers VALUES ('alice')\"); d.commit()",
                                                 temporary.path])
        #expect(made.status == 0, "\(made.standardError)")
        for (create, readOnly) in [(true, false), (false, false), (false, true)] {
            do {
                _ = try SQLiteAssociationStore(path: temporary.path, create: create, readOnly: readOnly)
                Issue.record("another application's database opened as a store (create \(create), readOnly \(readOnly))")
            } catch let error as StoreError {
                #expect(error.code == "store-corrupt" && error.message.contains("not an aasa-fetch store") && error.message.contains("customers"), "\(error)")
            }
        }
        let tables = try ChildProcess.run(python, ["-c", "import sqlite3, sys; print(sorted(r[0] for r in sqlite3.connect(sys.argv[1]).execute(\"SELECT name FROM sqlite_master WHERE type = 'table'\")))",
                                                   temporary.path])
        #expect(tables.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "['customers']")
    }

    /// A store whose writer stopped mid-transaction leaves a journal a read-only open cannot
    /// recover; read as immutable, the file was torn ("malformed": store-corrupt, move it away).
    /// It is store-unreadable naming the journal; a writer recovers it, and then it reads.
    @Test func aJournalLeftByAStoppedWriterIsNamedNotCalledCorrupt() async throws {
        let temporary = TemporaryStore()
        do {
            let store = try temporary.open()
            try await Self.register(store, (0..<200).map { ("h\($0).example.com", 2) })
        }
        let python = try #require(ChildProcess.find("python3"))
        let stopped = try ChildProcess.run(python, ["-c", """
            import sqlite3, sys, os
            d = sqlite3.connect(sys.argv[1], isolation_level=None)
            d.execute('PRAGMA journal_mode=delete'); d.execute('PRAGMA cache_size=1'); d.execute('BEGIN')
            d.execute('UPDATE hosts SET last_reason = hex(randomblob(2000))')
            os._exit(0)
            """, temporary.path])
        #expect(stopped.status == 0, "\(stopped.standardError)")
        #expect(FileManager.default.fileExists(atPath: temporary.path + "-journal"))
        do {
            _ = try SQLiteAssociationStore(path: temporary.path, create: false, readOnly: true)
            Issue.record("a store with a hot journal opened read-only")
        } catch let error as StoreError {
            #expect(error.code == "store-unreadable" && error.message.contains("-journal holds a write not yet in the file"), "\(error)")
        }
        let writer = try temporary.open(create: false)
        #expect(try await writer.allHosts().count == 200)
        let reader = try SQLiteAssociationStore(path: temporary.path, create: false, readOnly: true)
        #expect(try await reader.allHosts().allSatisfy { $0.lastResult == nil })
    }

    /// A file where the store's folder should be is `store-unreadable` for every command, as it
    /// is for one that creates the store (readers said `store-missing`, which no run can mend).
    @Test func aFileWhereTheFolderShouldBeIsUnreadable() async throws {
        let temporary = TemporaryStore()
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        let file = temporary.folder.appendingPathComponent("not-a-folder")
        try Data("x".utf8).write(to: file)
        for path in [file.appendingPathComponent("aasa-fetch.sqlite").path, file.appendingPathComponent("sub/aasa-fetch.sqlite").path] {
            for (create, readOnly) in [(false, false), (false, true), (true, false)] {
                do {
                    _ = try SQLiteAssociationStore(path: path, create: create, readOnly: readOnly)
                    Issue.record("a store opened under a file (\(path))")
                } catch let error as StoreError {
                    #expect(error.code == "store-unreadable", "\(path) create \(create) readOnly \(readOnly): \(error)")
                }
            }
        }
    }

    /// A store path that is a link to a volume not mounted (or a link loop) fails to open, and the
    /// link stays: only a file this call made is removed when making a store fails.
    @Test func aLinkAtTheStorePathIsNeverRemoved() async throws {
        let temporary = TemporaryStore()
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        let loop = temporary.folder.appendingPathComponent("loop").path
        for target in [temporary.folder.appendingPathComponent("unmounted/volume/aasa-fetch.sqlite").path, temporary.path] {
            try? FileManager.default.removeItem(atPath: temporary.path)
            try FileManager.default.createSymbolicLink(atPath: temporary.path, withDestinationPath: target)
            if target == temporary.path { try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop) }
            do {
                _ = try temporary.open()
                Issue.record("a store opened through a link to \(target)")
            } catch let error as StoreError {
                #expect(error.code == "store-unreadable", "\(target): \(error)")
            }
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: temporary.path)) == target, "the link to \(target) was removed")
        }
    }

    @Test func newerSchemaIsRefused() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await store.executeForTesting("INSERT INTO grdb_migrations (identifier) VALUES ('v999-future')")
        do {
            _ = try temporary.open()
            Issue.record("a newer store opened")
        } catch let error as StoreError {
            #expect(error.code == "store-newer-schema")
        }
    }

    // The behaviour shared with PostgreSQL (round trips, due order, leases, forget…) is in
    // StoreContractTests, run against both stores.
}
