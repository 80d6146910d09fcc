@testable import AASAFetchCLI
import Testing

/// The descriptor budget of a run: what `--concurrency` is lowered to under `ulimit -n`.
struct ProcessLimitsTests {
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
}
