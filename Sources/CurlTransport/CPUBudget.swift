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
        if let quota = cgroupV2Quota(membership: readSmallFile("/proc/self/cgroup"), read: readSmallFile) {
            cores = min(cores, quota)
        }
        return max(1, cores)
    }()

    /// The CPU quota of the process's cgroup v2 in whole cores, rounded up: the smallest
    /// `cpu.max` of its cgroup and every ancestor (``CgroupChain``); `nil` without a v2
    /// membership line in `membership` (the text of `/proc/self/cgroup`) or without any quota.
    package static func cgroupV2Quota(membership: String?, read: (String) -> String?) -> Int? {
        guard let membership else { return nil }
        return CgroupChain.smallest("cpu.max", v1Controller: nil, membership: membership, read: read, value: cores(cpuMax:))
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

/// The files of a cgroup controller that limit this process: in its cgroup and every ancestor.
package enum CgroupChain {
    /// The smallest limit `file` sets on this process: read with `read` and turned into a number
    /// by `value` (`nil`: no limit there) in the cgroups `membership` (the text of
    /// `/proc/self/cgroup`) names, from the process's own up to the root, under the cgroup v1
    /// mount of `v1Controller` when it is given and listed, and under cgroup v2 (`/sys/fs/cgroup`,
    /// or `/sys/fs/cgroup/unified` in a hybrid layout). `nil` when none sets one.
    package static func smallest(_ file: String, v1Controller: String?, membership: String, read: (String) -> String?,
                                 value: (String) -> Int?) -> Int? {
        var smallest: Int?
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let mounts: [String]
            if let v1Controller, fields[1].split(separator: ",").contains(Substring(v1Controller)) {
                mounts = ["/sys/fs/cgroup/\(v1Controller)"]
            } else if fields[0] == "0", fields[1].isEmpty {
                mounts = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            } else {
                continue
            }
            for mount in mounts {
                var path = fields[2].split(separator: "/").map(String.init)
                while true {
                    if let text = read(([mount] + path + [file]).joined(separator: "/")), let number = value(text) {
                        smallest = min(smallest ?? number, number)
                    }
                    if path.isEmpty { break }
                    path.removeLast()
                }
            }
        }
        return smallest
    }
}
