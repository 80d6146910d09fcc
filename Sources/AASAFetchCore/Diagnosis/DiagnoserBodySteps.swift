import Foundation

// The `json`, `structure` and `association` steps of a diagnosis: what the file says.

extension Diagnoser.Walk {
    mutating func bodySteps(_ result: HostFetchResult, service: Service) {
        let body = result.body ?? []
        let source = result.route == .cdn ? "the CDN's copy" : "the file"
        switch AASADecoder.decode(body) {
        case .invalidJSON(let error, _):
            let looksHTML = AASAFetcher.looksLikeHTML(body)
            let finding = result.findings.first { $0.code == "invalid-json" }
            add(DiagnosisStep(
                step: "json", title: "JSON", status: .failed, code: "invalid-json",
                summary: "\(source) is not valid JSON: line \(error.line), column \(error.column): \(error.message)"
                    + (looksHTML ? " (it looks like an HTML page)" : ""),
                details: ["at line \(error.line), column \(error.column): \(error.excerpt)", "kind: \(error.kind.rawValue)"],
                findings: finding.map { [$0] } ?? [],
                fix: finding?.fix ?? "fix the JSON syntax"))
            return
        case .notAnAssociationFile(let reason, _):
            add(DiagnosisStep(step: "json", title: "JSON", status: .passed, summary: "\(source) is valid JSON (\(body.count) bytes)"))
            add(DiagnosisStep(
                step: "structure", title: "Structure", status: .failed, code: "not-an-association-file",
                summary: "valid JSON but not an association file: \(reason)",
                findings: result.findings.filter { $0.code == "not-an-association-file" },
                fix: "the top level must be an object with applinks, webcredentials, activitycontinuation, appclips or authsrv"))
            return
        case .document(let document, _):
            if let bom = result.findings.first(where: { $0.code == "bom" }) {
                add(DiagnosisStep(step: "json", title: "JSON", status: .warned, code: "bom",
                                  summary: "\(source) is valid JSON after a UTF-8 byte order mark", findings: [bom], fix: bom.fix))
            } else {
                add(DiagnosisStep(step: "json", title: "JSON", status: .passed, summary: "\(source) is valid JSON (\(body.count) bytes)"))
            }
            structureStep(document: document, body: body)
            associationStep(document: document, service: service, host: result.host, source: source)
        }
    }

    mutating func structureStep(document: AASADocument, body: [UInt8]) {
        let lint = AASALinter.lint(body).filter { $0.code != "bom" }
        var details = ["services: " + document.services.map(\.name).joined(separator: ", ")]
        if let applinks = document.applinks {
            details.append("applinks: \(applinks.details.count) detail\(applinks.details.count == 1 ? "" : "s")")
        }
        let serious = lint.filter { $0.severity != .info }
        if let first = serious.first {
            add(DiagnosisStep(step: "structure", title: "Structure", status: .warned, code: first.code,
                              summary: "\(serious.count) lint finding\(serious.count == 1 ? "" : "s"); first: \(first.message)",
                              details: details, findings: lint, fix: first.fix))
        } else {
            add(DiagnosisStep(step: "structure", title: "Structure", status: .passed, summary: "no lint findings",
                              details: details, findings: lint))
        }
    }

    mutating func associationStep(document: AASADocument, service: Service, host: String, source: String) {
        let listed = document.appIDs(for: service)
        let details = ["\(service.name) lists: " + (listed.isEmpty ? "nothing" : AssociationJudge.shortList(listed, limit: 20))]
        guard !appIDs.isEmpty else {
            add(DiagnosisStep(step: "association", title: "App ID and service", status: .warned, code: "app-id-unknown",
                              summary: "no app ID given, so association cannot be judged", details: details,
                              fix: "pass --app-id TEAMID.bundle.id, or use entitlements with application-identifier"))
            return
        }
        let missing = appIDs.filter { !listed.contains($0) }
        guard let appID = missing.first else {
            add(DiagnosisStep(step: "association", title: "App ID and service", status: .passed,
                              summary: "\(appIDs.joined(separator: ", ")) listed for \(service.name) in \(source) of \(host)", details: details))
            return
        }
        var message = "\(appID) is not listed for \(service.name) in \(source) of \(host)"
        let elsewhere = document.services.filter { $0 != service && document.appIDs(for: $0).contains(appID) }
        if !elsewhere.isEmpty {
            message += " (it is listed only under \(elsewhere.map(\.name).joined(separator: ", ")))"
        } else if !document.services.contains(service) {
            message += " (the file has no \(service.name) section)"
        }
        let fix = service == .applinks
            ? "add \"\(appID)\" to the appIDs of a detail under applinks.details"
            : "add \"\(appID)\" to \(service.name).apps"
        add(DiagnosisStep(step: "association", title: "App ID and service", status: .failed, code: "app-not-listed",
                          summary: message, details: details,
                          findings: [.error("app-not-listed", message, fix: fix)], fix: fix))
    }
}
