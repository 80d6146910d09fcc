import Foundation

/// Runs a program with its standard error (and, when `sharedWithStdout`, its standard output) on a
/// pseudo-terminal, through python3's `pty` module, to test what a person at a terminal sees.
public enum PseudoTerminal {
    /// What a program left on the terminal and, when standard output was not the terminal, in its pipe.
    public struct Output: Sendable {
        /// The exit status.
        public var status: Int32
        /// The bytes written to the terminal, as text (`\r\n` the terminal driver makes of `\n` turned back into `\n`).
        public var terminal: String
        /// Standard output when it was a file rather than the terminal (empty otherwise).
        public var standardOutput: String
    }

    private static let script = #"""
import base64, json, os, pty, subprocess, sys
shared = sys.argv[1] == "shared"
out_path = sys.argv[2]
args = sys.argv[3:]
master, slave = pty.openpty()
with open(out_path, "wb") as out:
    child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave if shared else out, stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    status = child.wait()
print(json.dumps({"status": status, "terminal": base64.b64encode(b"".join(chunks)).decode()}))
"""#

    /// Runs `executable` with `arguments`; `environment` is added to this process's (set `TERM`
    /// there). Standard input is `/dev/null`.
    public static func run(
        _ executable: String, _ arguments: [String], sharedWithStdout: Bool, environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) throws -> Output {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-pty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let scriptURL = scratch.appendingPathComponent("run-on-terminal.py")
        let stdoutURL = scratch.appendingPathComponent("stdout")
        try Data(script.utf8).write(to: scriptURL)
        let result = try ChildProcess.run(
            "/usr/bin/python3", [scriptURL.path, sharedWithStdout ? "shared" : "split", stdoutURL.path, executable] + arguments,
            environment: environment, timeout: timeout)
        guard result.status == 0,
              let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
              let status = object["status"] as? Int, let encoded = object["terminal"] as? String,
              let bytes = Data(base64Encoded: encoded)
        else {
            throw TestSupportError("the pty runner failed (\(result.status)): \(result.standardError)")
        }
        let terminal = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        let standardOutput = (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? ""
        return Output(status: Int32(truncatingIfNeeded: status), terminal: terminal, standardOutput: standardOutput)
    }

    /// The lines a terminal shows at the end: in each line, what follows the last "carriage return,
    /// erase line" (`\r\e[K`) sequence, the text before it having been erased.
    public static func visibleLines(_ terminal: String) -> [String] {
        terminal.components(separatedBy: "\n").map { line in
            line.components(separatedBy: "\r\u{1B}[K").last ?? line
        }
    }
}
