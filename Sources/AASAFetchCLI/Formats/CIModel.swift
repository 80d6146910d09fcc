import AASAFetchCore

/// Where a CI finding points: an input file of the run (with a line and column when known), and
/// the remote file the finding is about (a host's association file), for formats that can name it.
struct CILocation: Sendable, Hashable {
    /// A local file: the entitlements file, the `--domains` list, the linted file.
    var file: String?
    /// The 1-based line in `file`.
    var line: Int?
    /// The 1-based column (Unicode scalars) in `file`.
    var column: Int?
    /// The URL the finding is about when no local file is known (SARIF's artifact then).
    var url: String?
}

/// One finding as the CI formats report it: a GitHub annotation, a SARIF result, a part of a
/// JUnit failure.
struct CIProblem: Sendable, Hashable {
    var code: String
    var severity: Severity
    var message: String
    var fix: String?
    var location: CILocation

    init(code: String, severity: Severity, message: String, fix: String?, location: CILocation) {
        self.code = code
        self.severity = severity
        self.message = message
        self.fix = fix
        self.location = location
    }

    /// A finding at `location` (its own line and column are used when `location` has none and
    /// `ownPosition` says they are positions in that file).
    init(_ finding: Finding, at location: CILocation, ownPosition: Bool = false) {
        var location = location
        if ownPosition, location.line == nil {
            location.line = finding.line
            location.column = finding.column
        }
        self.init(code: finding.code, severity: finding.severity, message: finding.message, fix: finding.fix, location: location)
    }

    /// The message with its fix: `message; fix: …`.
    var messageWithFix: String {
        fix.map { "\(message) (fix: \($0))" } ?? message
    }
}

/// One thing a command checked (a JUnit test case): an entry of `fetch`, a file of `lint`, an
/// entry of `diagnose`.
struct CICase: Sendable {
    enum Outcome: Sendable, Hashable {
        /// Checked and fine (warnings may come with it).
        case passed
        /// Checked and wrong: the problems say why (the first error first).
        case failed(code: String)
        /// Could not be checked (an unreadable file).
        case error(code: String)
        /// Not judged (no app ID).
        case skipped(String)
    }

    /// The group (JUnit's `classname`): the host, `lint`, `diagnose`.
    var suite: String
    /// The name: the entry as written, the file's path.
    var name: String
    var outcome: Outcome
    /// Seconds spent on it, when known.
    var time: Double?
    /// Everything found about it, most serious first.
    var problems: [CIProblem]
}

/// The counts of a group of cases, known before its cases are written (JUnit needs them first).
struct CICounts: Sendable, Hashable {
    var tests = 0
    var failures = 0
    var errors = 0
    var skipped = 0
    var time = 0.0

    init(tests: Int = 0, failures: Int = 0, errors: Int = 0, skipped: Int = 0, time: Double = 0) {
        self.tests = tests
        self.failures = failures
        self.errors = errors
        self.skipped = skipped
        self.time = time
    }

    init(_ cases: [CICase]) {
        for item in cases { add(item) }
    }

    mutating func add(_ item: CICase) {
        tests += 1
        time += item.time ?? 0
        switch item.outcome {
        case .passed: break
        case .failed: failures += 1
        case .error: errors += 1
        case .skipped: skipped += 1
        }
    }
}

/// A CI format's writer: the one place each of `github`, `sarif` and `junit` is written, for
/// `fetch`, `lint` and `diagnose` alike. Commands hand it cases in groups and the problems that
/// belong to no case, in order, as they have them (a streamed `fetch` one host at a time), so
/// nothing grows with the number of hosts. Everything goes to `write` (standard output) as it is.
protocol CIWriter {
    /// Starts the document (`command` is `fetch`, `lint` or `diagnose`).
    mutating func begin(command: String)
    /// Problems about the inputs as a whole (no case of their own).
    mutating func loose(_ problems: [CIProblem])
    /// Opens a group of `counts.tests` cases (JUnit's `<testsuite>`).
    mutating func openSuite(_ name: String, counts: CICounts)
    /// One case of the open group.
    mutating func testCase(_ item: CICase)
    /// Closes the group.
    mutating func closeSuite()
    /// Ends the document; `summary` is the command's closing tally.
    mutating func finish(summary: String)
}

extension CIWriter {
    /// A whole group at once.
    mutating func suite(_ name: String, _ cases: [CICase]) {
        guard !cases.isEmpty else { return }
        openSuite(name, counts: CICounts(cases))
        for item in cases { testCase(item) }
        closeSuite()
    }
}

/// The writer of a CI format.
enum CIWriters {
    /// The writer of `format` (a CI format) that writes to `write`.
    static func writer(for format: OutputFormat, write: @escaping (String) -> Void) -> any CIWriter {
        switch format {
        case .sarif: SARIFWriter(write: write)
        case .junit: JUnitWriter(write: write)
        default: GitHubWriter(write: write)
        }
    }

    /// The writer of `format` to standard output: marks the document as begun, so a later failure
    /// is reported on standard error only.
    static func standardOutput(_ format: OutputFormat, console: Console) -> any CIWriter {
        writer(for: format) { text in
            console.beginDocument()
            console.outJSONFragment(text)
        }
    }
}
