/// The text a store keeps a response's headers in (`last_headers`): a JSON array of
/// `{"name": …, "value": …}` objects, the shape Foundation's `JSONEncoder` wrote before, so stores
/// in the field read alike. Written and read without Foundation's coders (they ran once per host,
/// on the path of every recorded result): strings are quoted by ``ReportJSONWriter/quoted(_:)``
/// and the text is read back by the project's ``JSONParser``.
public enum StoredHeaders {
    /// The headers as stored text.
    public static func encode(_ headers: [HTTPHeader]) -> String {
        var text = "["
        for (index, header) in headers.enumerated() {
            if index > 0 { text += "," }
            text += "{\"name\":" + ReportJSONWriter.quoted(header.name) + ",\"value\":" + ReportJSONWriter.quoted(header.value) + "}"
        }
        return text + "]"
    }

    /// Headers read back from stored text (this encoding or `JSONEncoder`'s); text that is not such
    /// an array gives none, as before.
    public static func decode(_ text: String?) -> [HTTPHeader] {
        guard let text, let document = try? JSONParser.parse(Array(text.utf8)), let items = document.root.arrayValue else { return [] }
        var headers: [HTTPHeader] = []
        headers.reserveCapacity(items.count)
        for item in items {
            guard let name = item.member("name")?.value.stringValue, let value = item.member("value")?.value.stringValue else { return [] }
            headers.append(HTTPHeader(name: name, value: value))
        }
        return headers
    }
}
