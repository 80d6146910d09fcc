import AASAFetchCore
import Foundation

extension CommandFailure {
    /// The failure for a file that ``BoundedFile`` refused: `file-too-large` (raise the limit with
    /// `--max-size`) or `file-unreadable`.
    init(fileError: BoundedFileError, path: String) {
        switch fileError {
        case .tooLarge:
            self.init(code: "file-too-large", message: "\(fileError.message(path: path)) (--max-size raises it)")
        case .unreadable:
            self.init(code: "file-unreadable", message: fileError.message(path: path))
        }
    }
}
