/// The text a store keeps a response's headers in (`last_headers`): a JSON array of
/// `{"name": …, "value": …}` objects, the shape Foundation's `JSONEncoder` wrote before, so stores
/// in the field read alike. Written and read without Foundation's coders (they ran once per host,
/// on the path of every recorded result): strings are quoted by ``ReportJSONWriter/quoted(_:)``
/// and the text is read back by the project's ``JSONParser``.
public enum StoredHeaders {
    /// The headers as stored text.
    public static func encode(_ headers: [HTTPHeader]) -> String {
        // Written as bytes in one buffer (this runs for every recorded result).
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(64 * headers.count + 2)
        for (index, header) in headers.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: #"{"name":"#.utf8)
            JSONByteSink.appendQuoted(header.name, to: &bytes)
            bytes.append(contentsOf: #","value":"#.utf8)
            JSONByteSink.appendQuoted(header.value, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
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
