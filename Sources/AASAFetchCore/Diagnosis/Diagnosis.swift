/// How one step of a diagnosis went.
public enum StepStatus: String, Sendable, Codable, Hashable {
    /// The step is fine.
    case passed
    /// The step works but something may behave differently on a device.
    case warned
    /// The step fails: the domain does not associate, and the walk stops here.
    case failed
    /// The step does not apply (route, mode) or was not reached.
    case skipped
}

/// One step of the OS's path to an association, as `diagnose` walked it.
///
/// Step identifiers, in walk order: `entitlement`, `host`, `dns`, `tcp`, `tls`, `http`, `json`,
/// `structure`, `association`, `cdn`, then `user-agent` (an extra check, run whenever an HTTP answer
/// was reached).
public struct DiagnosisStep: Sendable, Hashable, Encodable {
    /// The step identifier (stable).
    public var step: String
    /// A title for people.
    public var title: String
    /// How it went.
    public var status: StepStatus
    /// `ok`, or the step's code (a failure code when failed, a warning code when warned).
    public var code: String
    /// One line on what the step found.
    public var summary: String
    /// What the step saw, one fact a line (addresses, certificates, headers…).
    public var details: [String]
    /// Findings of the step (entry findings, lint findings, download findings).
    public var findings: [Finding]
    /// What to change, for a failed or warned step.
    public var fix: String?

    /// Creates a step.
    public init(step: String, title: String, status: StepStatus, code: String = "ok", summary: String,
                details: [String] = [], findings: [Finding] = [], fix: String? = nil) {
        self.step = step
        self.title = title
        self.status = status
        self.code = code
        self.summary = summary
        self.details = details
        self.findings = findings
        self.fix = fix
    }
}

/// The answer the origin gave one user agent in the user-agent check.
public struct UserAgentProbe: Sendable, Hashable, Encodable {
    /// `aasa-bot`, `device` or `browser`.
    public var label: String
    /// The `User-Agent` sent.
    public var userAgent: String
    /// The HTTP status, when a response arrived.
    public var httpStatus: Int?
    /// `ok` for a response, or the transfer's failure code.
    public var code: String

    /// `HTTP 403` or the failure code: what is compared between agents.
    public var outcome: String { httpStatus.map { "HTTP \($0)" } ?? code }
}

/// The diagnosis of one entitlement entry.
///
/// JSON shape (every key present, `null` when not applicable): `entry`, `normalized`, `service`,
/// `domain`, `host` (the host really fetched), `mode`, `developerMode`, `route` (`origin`, `cdn`
/// or `both`; `origin` for `?mode=` entries whatever was asked), `url`, `appIDs`, `associated`,
/// `code` (`ok` or the failed step's code), `failedStep`, `steps` (``DiagnosisStep``),
/// `userAgents` (``UserAgentProbe``, empty when not run), `cdn` (``CDNRecord`` with `--route cdn|both`).
public struct Diagnosis: Sendable, Encodable {
    /// The entry as written.
    public var entry: String?
    /// The entry as it should be written.
    public var normalized: String?
    /// The service.
    public var service: Service?
    /// The domain (with `*.` for a wildcard).
    public var domain: String?
    /// The host whose file serves the entry.
    public var host: String?
    /// The alternate mode.
    public var mode: AlternateMode?
    /// Whether the entry is judged by developer-mode rules (direct fetch, any valid certificate).
    public var developerMode: Bool
    /// The route the device takes for this entry.
    public var route: RouteChoice
    /// The URL of the answer the verdict rests on.
    public var url: String?
    /// The app IDs checked.
    public var appIDs: [String]
    /// `true` associates, `false` does not, `nil` could not be judged (no app ID).
    public var associated: Bool?
    /// `ok` or the failed step's code.
    public var code: String
    /// The step that failed, when one did.
    public var failedStep: String?
    /// Every step walked, in order.
    public var steps: [DiagnosisStep]
    /// The user-agent check, when it ran.
    public var userAgents: [UserAgentProbe]
    /// The CDN's answer, with `--route cdn|both`.
    public var cdn: CDNRecord?
}

/// What `diagnose --json` prints: one diagnosis per entry.
public struct DiagnosisReport: Sendable, Encodable {
    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// The app IDs checked.
    public var appIDs: [String]
    /// Where they came from.
    public var appIDSource: AppIDSource
    /// The route asked for.
    public var route: RouteChoice
    /// One diagnosis per entry, in the order `fetch` starts their downloads (priority tier, then entry order).
    public var diagnoses: [Diagnosis]
    /// Findings about the inputs as a whole.
    public var findings: [Finding]

    /// Creates a report.
    public init(appIDs: [String], appIDSource: AppIDSource, route: RouteChoice, diagnoses: [Diagnosis], findings: [Finding]) {
        self.appIDs = appIDs
        self.appIDSource = appIDSource
        self.route = route
        self.diagnoses = diagnoses
        self.findings = findings
    }

    /// Whether no diagnosis has a failed step (exit status 0).
    public var succeeded: Bool { diagnoses.allSatisfy { $0.failedStep == nil } }
}
