import AASAFetchCore
import Foundation

/// Decodes test files through the real decoder (`AASADecoder`), so every matcher test also
/// exercises the decode path the tool uses.
enum ModelFromJSON {
    static func document(json: String) throws -> AASADocument {
        try AASADecoder.decodeDocument(Array(json.utf8))
    }

    static func document(data: Data) throws -> AASADocument {
        try AASADecoder.decodeDocument([UInt8](data))
    }
}
