// Benchmark-only JSON → model helper, a copy of the test builder (Tests/AASAFetchCoreTests/
// ModelFromJSON.swift); the real decoder (`AASADecoder`) replaces it at merge time.
import AASAFetchCore
import Foundation

enum BenchModel {
    /// Builds a document from JSON text.
    static func document(json: String) throws -> AASADocument {
        try document(data: Data(json.utf8))
    }

    /// Builds a document from JSON bytes.
    static func document(data: Data) throws -> AASADocument {
        let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        return document(object: object)
    }

    /// Builds a document from a `JSONSerialization` object.
    static func document(object: Any) -> AASADocument {
        guard let root = object as? [String: Any] else { return AASADocument() }
        var document = AASADocument()
        for (key, value) in root.sorted(by: { $0.key < $1.key }) {
            let service = Service(name: key)
            document.services.append(service)
            if service == .applinks {
                document.applinks = (value as? [String: Any]).map(applinks)
            } else if let apps = (value as? [String: Any])?["apps"] as? [Any] {
                document.serviceApps[service] = apps.compactMap { $0 as? String }
            }
        }
        return document
    }

    private static func applinks(_ object: [String: Any]) -> AppLinks {
        var result = AppLinks()
        if let array = object["details"] as? [Any] {
            result.details = array.enumerated().compactMap { index, value in
                (value as? [String: Any]).map { detail($0, fallbackAppIDs: [], location: "/applinks/details/\(index)") }
            }
        } else if let dictionary = object["details"] as? [String: Any] {
            result.detailsIsDictionary = true
            result.details = dictionary.keys.sorted().compactMap { key in
                (dictionary[key] as? [String: Any]).map { detail($0, fallbackAppIDs: [key], location: "/applinks/details/\(key)") }
            }
        }
        result.defaults = defaults(object["defaults"])
        if let variables = object["substitutionVariables"] as? [String: Any] {
            for (name, values) in variables {
                if let values = values as? [Any] { result.substitutionVariables[name] = values.compactMap { $0 as? String } }
            }
        }
        result.legacyApps = (object["apps"] as? [Any])?.compactMap { $0 as? String }
        return result
    }

    private static func detail(_ object: [String: Any], fallbackAppIDs: [String], location: String) -> AppLinksDetail {
        let appIDs: [String]
        if let many = object["appIDs"] {
            appIDs = (many as? [Any])?.compactMap { $0 as? String } ?? []
        } else if let one = object["appID"] as? String {
            appIDs = [one]
        } else {
            appIDs = fallbackAppIDs
        }
        let components = (object["components"] as? [Any]).map { array in
            array.enumerated().compactMap { index, value in
                (value as? [String: Any]).map { component($0, location: "\(location)/components/\(index)") }
            }
        }
        let paths = (object["paths"] as? [Any])?.compactMap { $0 as? String }
        return AppLinksDetail(
            appIDs: appIDs, components: components, paths: paths, defaults: defaults(object["defaults"]), location: location
        )
    }

    private static func defaults(_ value: Any?) -> ComponentDefaults? {
        guard let object = value as? [String: Any] else { return nil }
        return ComponentDefaults(caseSensitive: bool(object["caseSensitive"]), percentEncoded: bool(object["percentEncoded"]))
    }

    private static func bool(_ value: Any?) -> Bool? {
        value as? Bool
    }

    private static func component(_ object: [String: Any], location: String) -> ComponentRule {
        var query: QueryPattern?
        if let string = object["?"] as? String {
            query = .string(string)
        } else if let dictionary = object["?"] as? [String: Any] {
            var items: [QueryItemPattern] = []
            var ignored = false
            for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) {
                if let pattern = value as? String {
                    items.append(QueryItemPattern(name: name, pattern: pattern))
                } else {
                    ignored = true
                }
            }
            query = ignored ? .ignored : .items(items)
        }
        return ComponentRule(
            path: object["/"] as? String,
            query: query,
            fragment: object["#"] as? String,
            exclude: bool(object["exclude"]) ?? false,
            comment: object["comment"] as? String,
            options: ComponentDefaults(caseSensitive: bool(object["caseSensitive"]), percentEncoded: bool(object["percentEncoded"])),
            location: location
        )
    }
}
