import AASAFetchCore
import ArgumentParser

extension RouteChoice: ExpressibleByArgument {}

/// `--route origin|cdn|both` and `--cdn-base URL`, shared by `fetch` and `diagnose`.
struct RouteOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Where devices get the file: origin (direct), cdn (Apple's CDN; ?mode= entries still direct) or both (compared by meaning; the origin decides).", valueName: "origin|cdn|both"))
    var route: RouteChoice = .origin

    @Option(name: .customLong("cdn-base"), help: ArgumentHelp("The CDN's base URL; the host is appended.", valueName: "url"))
    var cdnBase: String = CDNFetcher.defaultBase

    func validate() throws {
        guard CDNFetcher.isValidBase(cdnBase) else {
            throw ValidationError("--cdn-base takes an https:// URL without query, e.g. \(CDNFetcher.defaultBase), not '\(cdnBase)'")
        }
    }
}
