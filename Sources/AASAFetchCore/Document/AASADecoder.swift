// TEMPORARY stand-in with the agreed API; replaced by the strict decoder from the `document` branch at merge.
import Foundation

/// A JSON syntax error with its position.
public struct JSONSyntaxError: Error, Sendable, Hashable {
    /// 1-based line.
    public var line: Int
    /// 1-based column.
    public var column: Int
    /// What is wrong.
    public var message: String
}

/// The outcome of decoding a file.
public enum AASADecodeResult: Sendable {
    case document(AASADocument, findings: [Finding])
    case invalidJSON(JSONSyntaxError, findings: [Finding])
    case notAnAssociationFile(reason: String, findings: [Finding])
}

/// Decodes association files.
public enum AASADecoder {
    /// Decodes bytes.
    public static func decode(_ bytes: [UInt8]) -> AASADecodeResult {
        var findings: [Finding] = []
        var data = bytes
        if data.starts(with: [0xEF, 0xBB, 0xBF]) {
            data.removeFirst(3)
            findings.append(.warning("bom", "the file starts with a UTF-8 byte order mark"))
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(data)) else {
            return .invalidJSON(JSONSyntaxError(line: 1, column: 1, message: "not JSON"), findings: findings)
        }
        guard let top = object as? [String: Any] else {
            return .notAnAssociationFile(reason: "the top level is not an object", findings: findings)
        }
        var document = AASADocument()
        for (key, value) in top {
            let service = Service(name: key)
            guard service.isKnown else { continue }
            document.services.append(service)
            if service == .applinks, let applinks = value as? [String: Any] {
                var details: [AppLinksDetail] = []
                for case let detail as [String: Any] in applinks["details"] as? [Any] ?? [] {
                    let ids = (detail["appIDs"] as? [String]) ?? ((detail["appID"] as? String).map { [$0] } ?? [])
                    details.append(AppLinksDetail(appIDs: ids))
                }
                document.applinks = AppLinks(details: details)
            } else if let apps = (value as? [String: Any])?["apps"] as? [String] {
                document.serviceApps[service] = apps
            }
        }
        guard !document.services.isEmpty else {
            return .notAnAssociationFile(reason: "no service key", findings: findings)
        }
        return .document(document, findings: findings)
    }
}
