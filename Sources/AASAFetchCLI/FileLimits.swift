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

/// The check of a CA file given as an option (`--cacert`, `--notify-cacert`) before anything is
/// fetched: libcurl would only find it unusable at each transfer, and every host would then fail
/// as if its certificate were at fault (and be recorded so). A run makes it when it builds its
/// options, so parsing stays free of file access.
enum CAFile {
    /// The most bytes read to check a CA file (a system bundle is about 200 KiB).
    static let limit = 16 << 20

    /// Throws a usage error (exit 64) naming `option` unless `path` is a readable file holding a
    /// PEM certificate.
    static func check(_ path: String, option: String) throws(CommandFailure) {
        let bytes: [UInt8]
        do {
            // libcurl reads `-` as a file of that name, not as standard input.
            bytes = try BoundedFile.read(path: path == "-" ? "./-" : path, limit: limit)
        } catch {
            throw usage("\(option): \(error.message(path: TerminalText.escaped(path)))")
        }
        let marker = Array("CERTIFICATE-----".utf8)
        guard bytes.count >= marker.count,
              (0...(bytes.count - marker.count)).contains(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) })
        else {
            throw usage("\(option): \(TerminalText.escaped(path)) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
    }

    private static func usage(_ message: String) -> CommandFailure {
        CommandFailure(code: "usage", message: message, status: ExitStatus.usage)
    }
}
