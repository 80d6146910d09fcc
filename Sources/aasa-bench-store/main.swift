// aasa-bench-store: does `aasa-fetch refresh` cost grow with the due hosts, not the store size?
//
// Fills stores with N hosts none of which is due (one transaction each), then times
// `aasa-fetch refresh` on each from process start to exit, next to `aasa-fetch --version` (the cost
// of starting the process), and the due-host query alone in this process.
//
// Usage: aasa-bench-store --tool PATH/aasa-fetch [--sizes 10000,1000000] [--runs 7] [--keep DIR]
import AASAFetchCore
import Foundation
import Glibc

struct Arguments {
    var tool = ""
    var sizes = [10_000, 1_000_000]
    var runs = 11
    var keep: String?

    init() {
        var iterator = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--tool": tool = iterator.next() ?? ""
            case "--sizes": sizes = (iterator.next() ?? "").split(separator: ",").compactMap { Int($0) }
            case "--runs": runs = Int(iterator.next() ?? "") ?? runs
            case "--keep": keep = iterator.next()
            default:
                FileHandle.standardError.write(Data("usage: aasa-bench-store --tool PATH [--sizes 10000,1000000] [--runs N] [--keep DIR]\n".utf8))
                exit(64)
            }
        }
        if tool.isEmpty || !FileManager.default.isExecutableFile(atPath: tool) {
            FileHandle.standardError.write(Data("aasa-bench-store: --tool must name the aasa-fetch binary\n".utf8))
            exit(64)
        }
    }
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

/// Runs a program once (posix_spawn and waitpid, so nothing polls) and returns the wall time from
/// spawn to exit in milliseconds, and the exit status.
func timeProcess(_ tool: String, _ arguments: [String]) throws -> (Double, Int32) {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for descriptor: Int32 in [0, 1, 2] {
        posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
    }
    let argv: [UnsafeMutablePointer<CChar>?] = ([tool] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let started = ContinuousClock.now
    let spawned = posix_spawn(&pid, tool, &actions, nil, argv, environ)
    guard spawned == 0 else { throw NSError(domain: "posix_spawn", code: Int(spawned)) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let elapsed = milliseconds(ContinuousClock.now - started)
    return (elapsed, (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
}

let arguments = Arguments()
let root = URL(fileURLWithPath: arguments.keep ?? FileManager.default.temporaryDirectory.appendingPathComponent("aasa-bench-store-\(UUID().uuidString)").path)
try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
defer { if arguments.keep == nil { try? FileManager.default.removeItem(at: root) } }

var startTimes: [Double] = []
_ = try timeProcess(arguments.tool, ["--version"])  // warm the page cache
var spawnTimes: [Double] = []
for _ in 0..<arguments.runs { spawnTimes.append(try timeProcess("/bin/true", []).0) }
print("spawning /bin/true, median of \(arguments.runs): \(String(format: "%.1f", median(spawnTimes))) ms")
for _ in 0..<arguments.runs { startTimes.append(try timeProcess(arguments.tool, ["--version"]).0) }
let processStart = median(startTimes)
print("process start (aasa-fetch --version), median of \(arguments.runs): \(String(format: "%.1f", processStart)) ms")

struct Row {
    var size: Int
    var fileMB: Double
    var insertSeconds: Double
    var queryMS: Double
    var refreshMS: Double
}
var rows: [Row] = []
let now = Date()
for size in arguments.sizes {
    let folder = root.appendingPathComponent("store-\(size)")
    let path = folder.appendingPathComponent(SQLiteAssociationStore.fileName).path
    let store = try SQLiteAssociationStore(path: path)
    let insertStart = ContinuousClock.now
    let total = try await store.insertSyntheticHosts(count: size, nextCheck: now.addingTimeInterval(30 * 86400), now: now)
    let insertSeconds = milliseconds(ContinuousClock.now - insertStart) / 1000
    var queries: [Double] = []
    for _ in 0..<arguments.runs {
        let started = ContinuousClock.now
        let claim = try await store.claimDue(now: now, limit: 128, leaseSeconds: 600, owner: "bench")
        queries.append(milliseconds(ContinuousClock.now - started))
        precondition(claim.hosts.isEmpty, "no host should be due")
    }
    var refreshes: [Double] = []
    _ = try timeProcess(arguments.tool, ["refresh", "--cache", folder.path])  // warm the page cache
    for _ in 0..<arguments.runs {
        let (time, status) = try timeProcess(arguments.tool, ["refresh", "--cache", folder.path])
        precondition(status == 0, "refresh exited \(status)")
        refreshes.append(time)
    }
    let bytes = [path, path + "-wal"].reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int) ?? 0) }
    rows.append(Row(size: total, fileMB: Double(bytes) / 1_048_576, insertSeconds: insertSeconds, queryMS: median(queries), refreshMS: median(refreshes)))
    print(String(format: "%9d hosts: store %.1f MB, bulk insert %.2f s, due query %.3f ms, refresh %.1f ms (%.1f ms above process start)",
                 total, Double(bytes) / 1_048_576, insertSeconds, median(queries), median(refreshes), median(refreshes) - processStart))
}
if let smallest = rows.first, let largest = rows.last, rows.count > 1 {
    let ratio = largest.refreshMS / smallest.refreshMS
    let worstAbove = rows.map { $0.refreshMS - processStart }.max() ?? 0
    print(String(format: "refresh %d hosts / %d hosts: %.2fx (target < 2x: %@); worst %.1f ms above process start (target < 100 ms: %@)",
                 largest.size, smallest.size, ratio, ratio < 2 ? "met" : "MISSED", worstAbove, worstAbove < 100 ? "met" : "MISSED"))
}
