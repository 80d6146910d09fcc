import AASAFetchCore

/// Small helpers shared by the matcher tests.
enum MatcherFixture {
    static let app = "HOGE123456.com.example.app"

    /// `{"applinks":{"details":[{"appIDs":[app],"components":[...]}]}}`.
    static func components(_ componentsJSON: String, extraApplinks: String = "") -> String {
        """
        {"applinks":{\(extraApplinks)"details":[{"appIDs":["\(app)"],"components":\(componentsJSON)}]}}
        """
    }

    static func compiled(_ json: String) throws -> CompiledAssociation {
        CompiledAssociation(document: try ModelFromJSON.document(json: json))
    }

    static func decide(_ json: String, _ url: String, app: String = app) throws -> MatchDecision {
        try compiled(json).decide(url: url, appID: app).decision
    }
}

/// A seeded SplitMix64 generator, so property tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    mutating func string(from alphabet: [Character], maxLength: Int) -> String {
        let length = Int.random(in: 0...maxLength, using: &self)
        return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &self)] })
    }
}
