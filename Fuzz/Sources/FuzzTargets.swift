// libFuzzer targets for every parser of outside input. One binary holds them all; the target is
// chosen by the environment variable AASA_FUZZ_TARGET (scripts/fuzz sets it). Built with
// `-sanitize=fuzzer,address -parse-as-library`: libFuzzer supplies `main`.
//
// A target must never crash, hang or exhaust memory on any input; an input that does is a finding.
// Two targets also check an invariant and stop with a message when it breaks:
//   aasa   explaining a URL never changes its decision;
//   lines  the streaming line reader gives the lines of the whole-file read.
import AASAFetchCore
import Foundation

/// The fuzz targets.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// JSON parser, AASA decoder, linter, pattern compiler and matcher on what decodes.
    case aasa
    /// CMS `SignedData` unwrapping (a signed association file), then the decoder on its content.
    case cms
    /// Entitlements property lists (XML and binary), then the entry parser on their domains.
    case plist
    /// Mach-O (thin and universal), code signature superblob, XML and DER entitlements blobs.
    case macho
    /// Zip archives (`.ipa`): central directory, stored and DEFLATE entries, the app inside.
    case zip
    /// Provisioning profiles: CMS, property list, entitlements, and their comparison.
    case profile
    /// Entitlement entries (`service:host?mode=…`, `$(VARIABLES)`), one a line, and the matcher's reading of them.
    case entry
    /// The `--domains` line reader over a file, against the whole-file read.
    case lines
}

/// The target this process runs (read once).
let selectedTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["AASA_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: " ")
        FileHandle.standardError.write(Data("aasa-fuzzer: set AASA_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(64)
    }
    return target
}()

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    _ = selectedTarget
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    switch selectedTarget {
    case .aasa: fuzzAASA(bytes)
    case .cms: fuzzCMS(bytes)
    case .plist: fuzzPlist(bytes)
    case .macho: fuzzMachO(bytes)
    case .zip: fuzzZip(bytes)
    case .profile: fuzzProfile(bytes)
    case .entry: fuzzEntries(bytes)
    case .lines: fuzzLines(bytes)
    }
    return 0
}

/// Stops the process with a message libFuzzer reports as a crash (the input is saved).
func invariantBroken(_ message: String) -> Never {
    fatalError("fuzz invariant broken: " + message)
}

// MARK: - Association files

let appID = "ABCDE12345.com.example.app"

func fuzzAASA(_ bytes: [UInt8]) {
    _ = AASALinter.lint(bytes)
    decodeAndMatch(bytes)
}

/// Decodes a file as the fetcher does; on success compiles it and matches URLs built from its own
/// patterns (so that rules are reached), checking that explaining agrees with deciding.
func decodeAndMatch(_ bytes: [UInt8]) {
    let result = AASADecoder.decode(bytes)
    for finding in result.findings { _ = finding.message.count }
    guard let document = result.document else { return }
    let compiled = CompiledAssociation(document: document)
    var paths = ["/", "/a/b?c=d#e", "/%C3%A9?x=1&x=2#f"]
    for detail in document.applinks?.details.prefix(4) ?? [] {
        for rule in detail.components?.prefix(4) ?? [] {
            var url = rule.path.map(urlText) ?? "/"
            switch rule.query {
            case .string(let query): url += "?" + urlText(query)
            case .items(let items): url += "?" + items.prefix(4).map { urlText($0.name) + "=" + urlText($0.pattern) }.joined(separator: "&")
            case .ignored, nil: break
            }
            if let fragment = rule.fragment { url += "#" + urlText(fragment) }
            paths.append(url)
        }
        paths += (detail.paths ?? []).prefix(4).map { urlText($0.hasPrefix("NOT ") ? String($0.dropFirst(4)) : $0) }
    }
    let appIDs = Array(document.appIDs(for: .applinks).prefix(1)) + [appID]
    let matcher = URLMatcher(entitlementDomains: ["example.com", "*.example.com"], files: ["example.com": compiled])
    // Explaining costs far more than deciding: every URL is decided, the first few explained.
    for (number, path) in paths.prefix(10).enumerated() {
        let url = "https://example.com" + (path.hasPrefix("/") ? path : "/" + path)
        for id in appIDs {
            let decided = compiled.decide(url: url, appID: id).decision
            _ = matcher.decide(url: url.replacingOccurrences(of: "//example.com", with: "//a.example.com"), appID: id)
            guard number < 4 else { continue }
            let explained = compiled.explain(url: url, appID: id).decision
            if decided != explained {
                invariantBroken("\(url) for \(id): decide says \(decided), explain says \(explained)")
            }
        }
    }
    let url = "https://a.example.com" + (paths.last.map { $0.hasPrefix("/") ? $0 : "/" + $0 } ?? "/")
    if matcher.decide(url: url, appID: appIDs[0]).decision != matcher.explain(url: url, appID: appIDs[0]).decision {
        invariantBroken("matcher: \(url) for \(appIDs[0]): decide and explain differ")
    }
    _ = AASADiff.changes(from: document, to: AASADocument())
}

/// A URL text that a pattern could match: wildcards and variables become letters.
func urlText(_ pattern: String) -> String {
    var text = ""
    var inVariable = false
    var previous: Character = " "
    for character in pattern.prefix(200) {
        if inVariable {
            if character == ")" { inVariable = false; text += "en" }
        } else if previous == "$" && character == "(" {
            text.removeLast()
            inVariable = true
        } else {
            text.append(character == "*" || character == "?" ? "x" : character)
        }
        previous = character
    }
    return text
}

// MARK: - CMS

func fuzzCMS(_ bytes: [UInt8]) {
    guard let content = CMSUnwrapper.content(of: bytes) else { return }
    decodeAndMatch(content)
}

// MARK: - Entitlements

func fuzzPlist(_ bytes: [UInt8]) {
    do {
        let file = try EntitlementsFile.parse(Data(bytes))
        _ = EntryParser(definitions: ["APP_DOMAIN": "example.com"]).parse(file.associatedDomains)
    } catch {
        _ = error.description.count
    }
}

func fuzzEntries(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    // A line holding only NUL stands for a non-string array element.
    let strings: [String?] = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0 == "\u{0}" ? nil : String($0) }
    let parser = EntryParser(definitions: ["APP_DOMAIN": "example.com", "HOST": "$(APP_DOMAIN)", "EMPTY": "", "BAD": "a:b/c"])
    let entries = parser.parse(strings)
    for entry in entries { _ = (entry.normalized, entry.errorCode, entry.isFetchable) }
    let domains = strings.compactMap { $0 }
    let matcher = URLMatcher(entitlementDomains: domains, files: [:])
    for domain in domains.prefix(4) {
        _ = matcher.decide(url: "https://\(domain)/", appID: appID)
    }
}

// MARK: - Apps

/// Small caps, so a hostile size field is refused quickly instead of allocating.
let limits = AppInspector.Limits(fileBytes: 8 << 20, executableBytes: 8 << 20, smallFileBytes: 1 << 20)
let now = Date(timeIntervalSince1970: 1_800_000_000)

func fuzzMachO(_ bytes: [UInt8]) {
    if MachOFile.hasMagic(bytes) {
        inspect(bytes, path: "fuzz")
        return
    }
    // Not a Mach-O: read the bytes as a bare signature superblob, then as DER entitlements.
    if let signature = try? CodeSignature.parse(bytes) {
        if let der = signature.derEntitlements { _ = try? DEREntitlements.decode(der) }
        return
    }
    _ = try? DEREntitlements.decode(bytes)
}

func fuzzZip(_ bytes: [UInt8]) {
    if let archive = try? ZipArchive(bytes: bytes) {
        for entry in archive.entries.prefix(16) {
            _ = try? archive.contents(of: entry, limit: 1 << 20)
        }
    }
    inspect(bytes, path: "fuzz.ipa")
}

func fuzzProfile(_ bytes: [UInt8]) {
    inspect(bytes, path: "fuzz.mobileprovision")
}

func inspect(_ bytes: [UInt8], path: String) {
    do {
        let inspection = try AppInspector.inspect(bytes: bytes, path: path, limits: limits, now: now)
        for finding in inspection.findings { _ = finding.message.count }
        _ = (inspection.appID, inspection.teamID, inspection.profile?.associatedDomains)
        if let file = try? inspection.entitlementsFile() {
            _ = EntryParser().parse(file.associatedDomains)
        }
    } catch {
        _ = error.description.count
    }
}

// MARK: - The --domains line reader

/// One scratch file per process, overwritten for each input and removed at exit.
let scratchPath: String = {
    let path = NSTemporaryDirectory() + "/aasa-fuzz-lines-\(getpid())"
    atexit { unlink(scratchPath) }
    return path
}()

func fuzzLines(_ bytes: [UInt8]) {
    // A plain write (FileManager's atomic one costs more than the rest of the target).
    let descriptor = open(scratchPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
    guard descriptor >= 0, written == bytes.count else {
        invariantBroken("cannot write \(scratchPath)")
    }
    // The whole-file read that the streaming reader stands in for.
    let whole = (try? String(contentsOfFile: scratchPath, encoding: .utf8))?.split(whereSeparator: \.isNewline).map(String.init)
    // A small buffer joins lines across reads; the default one reads the input in one go.
    for bufferSize in [1 + bytes.count % 7, 64 * 1024] {
        var reader: LineReader
        do {
            reader = try LineReader(path: scratchPath, bufferSize: bufferSize)
        } catch {
            invariantBroken("cannot open \(scratchPath): \(error)")
        }
        defer { reader.close() }
        var lines: [String] = []
        do {
            while let line = try reader.next() { lines.append(line) }
        } catch {
            // A refusal (invalid UTF-8, a line over a limit) is an answer; only what is read is compared.
            continue
        }
        guard let whole else {
            invariantBroken("buffer \(bufferSize): the line reader read \(lines.count) lines from a file the whole-file read refuses")
        }
        if lines != whole {
            invariantBroken("buffer \(bufferSize): the line reader read \(lines.debugDescription), the whole-file read \(whole.debugDescription)")
        }
    }
}
