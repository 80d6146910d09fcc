import AASAFetchCore
import Foundation
import Testing

/// Failures of the run, not of the host (`cancelled`, `descriptors-exhausted`), are never
/// recorded: the policy gives no update, so the store keeps the host's last real result.
struct RunErrorTests {
    @Test(arguments: ["cancelled", "descriptors-exhausted"])
    func runErrorsAreNotRecorded(code: String) {
        let result = RefreshPolicyTests.failure(code)
        #expect(result.isRunError)
        let previous = RefreshPolicyTests.state(approved: RefreshPolicyTests.good)
        #expect(RefreshPolicy().update(for: result, previous: previous, needs: RefreshPolicyTests.needs, now: RefreshPolicyTests.t0) == nil)
    }

    @Test(arguments: ["connect-failure", "headers-too-large", "invalid-response", "timeout"])
    func hostFailuresAreRecorded(code: String) {
        let result = RefreshPolicyTests.failure(code)
        #expect(!result.isRunError)
        #expect(RefreshPolicy().update(for: result, previous: nil, needs: [], now: RefreshPolicyTests.t0) != nil)
    }
}
