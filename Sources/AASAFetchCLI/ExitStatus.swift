import ArgumentParser

/// The process exit codes of every command (README "Exit codes").
public enum ExitStatus {
    /// Every domain associates, or the command's question was answered.
    public static let success = ExitCode(0)
    /// At least one domain fails to associate, a lint found errors, or a refresh found a broken association.
    public static let failure = ExitCode(1)
    /// The command could not run: unreadable input, store error.
    public static let cannotRun = ExitCode(2)
    /// Usage error (bad flags or values), as ArgumentParser's `ValidationError`.
    public static let usage = ExitCode(64)
}

/// An error that stops a command: thrown to the entry point, which reports it in one place
/// (``Console/report(_:details:)``: `aasa-fetch: CODE: message` on standard error, and the JSON
/// error document with `--json`) and exits with its status.
public struct CommandFailure: Error, CustomStringConvertible {
    /// A stable code (e.g. `entitlements-unreadable`).
    public var code: String
    /// What happened, for people.
    public var message: String
    /// The exit status: 2 (could not run) unless said otherwise.
    public var status: ExitCode

    /// Creates a failure.
    public init(code: String, message: String, status: ExitCode = ExitStatus.cannotRun) {
        self.code = code
        self.message = message
        self.status = status
    }

    public var description: String { "\(code): \(message)" }
}
