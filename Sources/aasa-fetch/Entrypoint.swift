import AASAFetchCLI
import Foundation

/// The executable: a stub that runs the command library.
@main
enum Entrypoint {
    /// Synchronous, so the process is prepared before the concurrency runtime opens its first
    /// descriptor; then the command runs in a task while the main thread serves the main queue.
    static func main() {
        AASAFetchCommand.prepareProcess()
        // libcurl runs with CURLOPT_NOSIGNAL, so a peer closing a connection must not kill us;
        // a closed standard output is handled by the command library (StandardStreams).
        signal(SIGPIPE, SIG_IGN)
        Task {
            await AASAFetchCommand.runFromCommandLine()
            exit(0)
        }
        dispatchMain()
    }
}
