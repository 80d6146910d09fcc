import AASAFetchCore
import Foundation

/// Decodes benchmark inputs with the tool's own decoder.
enum BenchModel {
    struct NotADocument: Error, CustomStringConvertible {
        var description: String
    }

    static func document(json: String) throws -> AASADocument {
        try document(data: Data(json.utf8))
    }

    static func document(data: Data) throws -> AASADocument {
        switch AASADecoder.decode([UInt8](data)) {
        case .document(let document, _):
            return document
        case .invalidJSON(let error, _):
            throw NotADocument(description: "invalid JSON: \(error)")
        case .notAnAssociationFile(let reason, _):
            throw NotADocument(description: "not an association file: \(reason)")
        }
    }
}
