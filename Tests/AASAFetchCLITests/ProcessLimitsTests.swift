@testable import AASAFetchCLI
import CurlTransport
import Testing

/// The descriptor budget of a run: what `--concurrency` is lowered to under `ulimit -n`.
struct ProcessLimitsTests {
    /// The smallest `pids.max` on the cgroup chain, from the v1 `pids` controller and cgroup v2;
    /// `max` and unreadable files set nothing.
    @Test func thePidsLimitIsTheSmallestOnTheChain() {
        let files = [
            "/sys/fs/cgroup/pids/a/b/pids.max": "40\n", "/sys/fs/cgroup/pids/a/pids.max": "max\n",
            "/sys/fs/cgroup/pids/pids.max": "12", "/sys/fs/cgroup/u/v/pids.max": "30\n", "/sys/fs/cgroup/u/pids.max": "25\n",
        ]
        let read = { (path: String) in files[path] }
        #expect(ProcessLimits.pidsLimit(cgroups: "12:pids:/a/b\n4:memory:/x\n", read: read) == 12)
        #expect(ProcessLimits.pidsLimit(cgroups: "0::/u/v\n", read: read) == 25)
        #expect(ProcessLimits.pidsLimit(cgroups: "7:cpu,pids:/a/b\n0::/u/v\n", read: { $0.hasSuffix("pids/pids.max") ? nil : read($0) }) == 25)
        #expect(ProcessLimits.pidsLimit(cgroups: "12:pids:/a\n", read: { $0 == "/sys/fs/cgroup/pids/a/pids.max" ? "max" : nil }) == nil)
        #expect(ProcessLimits.pidsLimit(cgroups: "4:memory:/x\n1:name=systemd:/\n", read: read) == nil)
        #expect(ProcessLimits.pidsLimit(cgroups: "garbage\n0::\n", read: read) == nil)
    }

    /// The thread probe starts what it is asked for (no limit here, or a loose one), again and
    /// again: it joins its threads before it returns (a count of this process's threads would
    /// be disturbed by the tests running beside it).
    @Test func theThreadProbeStartsWhatItIsAskedFor() throws {
        #expect(try #require(ProcessLimits.threadsRunning) >= 1)
        for _ in 0..<3 {
            #expect(ProcessLimits.startableThreads(upTo: 40) == 40)
        }
        #expect(ProcessLimits.startableThreads(upTo: 0) == 0)
    }

    /// Every curl loop holds its multi handle's socket pair, its epoll set and eventfd and its
    /// schedstat file for the whole run, so more loops leave room for fewer downloads: with 38
    /// loops (five descriptors each) and `ulimit -n 256`, the downloads' three descriptors each
    /// still fit beside the loops' and the reserved ones.
    @Test(arguments: [1, 2, 4, 16, 38])
    func theFittingConcurrencyLeavesRoomForEveryLoop(loops: Int) {
        let limit = 256, open = 10
        let fitting = ProcessLimits.fittingConcurrency(limit: limit, open: open, loops: loops)
        let used = open + ProcessLimits.reservedDescriptors + ProcessLimits.descriptorsPerLoop * loops
            + ProcessLimits.descriptorsPerDownload * fitting
        #expect(used <= limit, "\(loops) loops, \(fitting) downloads: \(used) descriptors")
        #expect(limit - used < ProcessLimits.descriptorsPerDownload, "one more download would fit")
        #expect(fitting == max(1, (limit - open - 32 - 5 * loops) / 3))
    }

    /// However tight the limit, one download is always allowed (the run then fails its hosts with
    /// `descriptors-exhausted` rather than not running).
    @Test func atLeastOneDownloadIsAllowed() {
        #expect(ProcessLimits.fittingConcurrency(limit: 16, open: 10, loops: 64) == 1)
    }

    /// At a tight open-file limit the loops are cut first, so that one download fits beside them
    /// and the one-loop clients; never below one loop, never above what was asked.
    @Test(arguments: [(limit: 20, loops: 4, fitted: 1), (limit: 36, loops: 4, fitted: 2), (limit: 41, loops: 4, fitted: 3),
                      (limit: 46, loops: 4, fitted: 4), (limit: 1000, loops: 4, fitted: 4), (limit: 8, loops: 2, fitted: 1)])
    func theLoopsLeaveRoomForADownload(limit: Int, loops: Int, fitted: Int) {
        let open = 6, extra = 2
        let result = ProcessLimits.fittingLoops(loops, limit: limit, open: open, extraLoops: extra)
        #expect(result == fitted)
        if result > 1 {
            let used = open + ProcessLimits.minimumReservedDescriptors + ProcessLimits.descriptorsPerDownload
                + ProcessLimits.descriptorsPerLoop * (result + extra)
            #expect(used <= limit, "\(result) loops: \(used) descriptors")
        }
    }

    /// Under an address-space limit the loops' stacks (2 MiB each, the one-loop clients' too)
    /// are cut first, so that one download fits; never below one loop.
    @Test func theLoopsLeaveAddressSpaceForADownload() {
        let mebibyte = 1 << 20, used = 100 * mebibyte, extra = 2
        let oneLoop = used + ProcessLimits.reservedAddressSpace + ProcessLimits.addressSpacePerDownload + (1 + extra) * AddressSpace.limitedThreadStack
        #expect(ProcessLimits.fittingLoops(4, addressLimit: oneLoop, used: used, extraLoops: extra) == 1)
        #expect(ProcessLimits.fittingConcurrency(addressLimit: oneLoop, used: used, loops: 1 + extra) == 1)
        #expect(ProcessLimits.fittingLoops(4, addressLimit: oneLoop + 2 * mebibyte, used: used, extraLoops: extra) == 2)
        #expect(ProcessLimits.fittingLoops(4, addressLimit: oneLoop + 20 * mebibyte, used: used, extraLoops: extra) == 4)
        #expect(ProcessLimits.fittingLoops(4, addressLimit: oneLoop - mebibyte, used: used, extraLoops: extra) == 1, "refused later, not here")
    }

    /// Under an address-space limit, the downloads get what is left after what is mapped, the
    /// reserve and a stack per loop, at 128 KiB each; with no room for one the answer is 0 or
    /// less, which ends the run as `address-space-exhausted` instead of a failed allocation.
    @Test(arguments: [1, 2, 4, 16])
    func theAddressSpaceLeavesRoomForEveryLoopAndTheReserve(loops: Int) {
        let mebibyte = 1 << 20
        let limit = 200 * mebibyte, used = 100 * mebibyte
        let fitting = ProcessLimits.fittingConcurrency(addressLimit: limit, used: used, loops: loops)
        let taken = used + ProcessLimits.reservedAddressSpace + loops * (2 * mebibyte) + fitting * (128 << 10)
        #expect(taken <= limit, "\(loops) loops, \(fitting) downloads")
        #expect(limit - taken < 128 << 10, "one more download would fit")
        #expect(fitting == (100 - 16 - 2 * loops) * 8)
        #expect(ProcessLimits.fittingConcurrency(addressLimit: limit, used: 190 * mebibyte, loops: loops) < 1)
    }
}
