import AASAFetchCore
import Foundation

/// Decodes benchmark inputs with the tool's own decoder.
enum BenchModel {
    static func document(json: String) throws -> AASADocument {
        try AASADecoder.decodeDocument(Array(json.utf8))
    }

    static func document(data: Data) throws -> AASADocument {
        try AASADecoder.decodeDocument([UInt8](data))
    }
}
