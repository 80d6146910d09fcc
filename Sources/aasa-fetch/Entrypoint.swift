import AASAFetchCLI
import Foundation

/// The executable: a stub that runs the command library.
@main
enum Entrypoint {
    static func main() async {
        // libcurl runs with CURLOPT_NOSIGNAL, so a peer closing a connection must not kill us.
        signal(SIGPIPE, SIG_IGN)
        await AASAFetchCommand.runFromCommandLine()
    }
}
