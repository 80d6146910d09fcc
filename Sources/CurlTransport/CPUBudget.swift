internal import CCurl
import Foundation
import Glibc

/// How many cores this process may use: the default number of curl loops (``CurlClient/defaultThreads``).
///
/// The smallest of the online CPUs (with the cgroup v1 quota and cpuset, as Foundation's
/// `activeProcessorCount` reads them), the CPUs of the process's affinity mask (`taskset`,
/// `docker --cpuset-cpus`, a Kubernetes CPU set) and the CPU quota of its cgroup v2 and every
/// ancestor (`cpu.max`, as `docker --cpus` or a Kubernetes CPU limit sets it), rounded up. A
/// loop more than the cores only takes turns with the others, each with its own connections.
package enum CPUBudget {
    /// Computed once, at the first use.
    package static let cores: Int = {
        var cores = ProcessInfo.processInfo.activeProcessorCount
        let affinity = Int(ccurl_affinity_cpu_count())
        if affinity > 0 { cores = min(cores, affinity) }
        if let quota = cgroupV2Quota(membership: readSmallFile("/proc/self/cgroup"), root: "/sys/fs/cgroup", read: readSmallFile) {
            cores = min(cores, quota)
        }
        return max(1, cores)
    }()

    /// The CPU quota of the process's cgroup v2 in whole cores, rounded up: the smallest
    /// `cpu.max` of its cgroup and every ancestor under `root`; `nil` without a v2 membership line
    /// (`0::PATH` in `membership`, the text of `/proc/self/cgroup`) or without any quota.
    package static func cgroupV2Quota(membership: String?, root: String, read: (String) -> String?) -> Int? {
        guard let membership,
            let line = membership.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return nil }
        var path = String(line.dropFirst(3))
        var smallest: Int?
        while true {
            let folder = path == "/" ? root : root + path
            if let text = read(folder + "/cpu.max"), let quota = cores(cpuMax: text) {
                smallest = min(smallest ?? quota, quota)
            }
            guard path != "/", !path.isEmpty, let slash = path.lastIndex(of: "/") else { break }
            path = slash == path.startIndex ? "/" : String(path[..<slash])
        }
        return smallest
    }

    /// Whole cores, rounded up, of a `cpu.max` line ("QUOTA PERIOD" in microseconds); `nil` for
    /// `max` (no quota) or anything else.
    package static func cores(cpuMax text: String) -> Int? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]), quota > 0, period > 0 else { return nil }
        return max(1, (quota + period - 1) / period)
    }

    /// A small system file (`/proc`, `/sys`; at most 64 KiB read), or `nil`.
    private static func readSmallFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
}
