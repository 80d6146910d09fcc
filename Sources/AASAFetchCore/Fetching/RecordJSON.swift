/// The direct JSON of the records written once per host or entry of a run (``DirectJSONWritable``):
/// the same keys, in the same order, as their `Encodable` conformances (`DirectJSONTests`).
/// Kept apart from `Output/DirectJSON.swift`, which the fuzz targets build without these types.

extension DomainReport: DirectJSONWritable {
    func writeJSON(to out: inout DirectJSON) throws {
        out.beginObject()
        out.key("host"); out.string(host)
        out.key("entries"); out.strings(entries)
        out.key("route"); out.string(route.rawValue)
        out.key("tier"); out.int(tier)
        out.key("startOrder"); out.int(startOrder)
        out.key("associated"); out.bool(associated)
        out.key("code"); out.string(code)
        out.key("reason"); out.string(reason)
        out.key("httpStatus"); out.int(httpStatus)
        out.key("url"); out.string(url)
        out.key("redirectLocation"); out.string(redirectLocation)
        out.key("contentType"); out.string(contentType)
        out.key("bytes"); out.int(bytes)
        out.key("appIDs"); out.stringLists(appIDs)
        out.key("customRoot"); out.bool(reliesOnExtraCA)
        out.key("findings"); try out.values(findings)
        out.key("attempts"); try out.values(attempts)
        out.key("cdn"); try out.value(cdn)
        out.endObject()
    }
}

extension FetchAttempt: DirectJSONWritable {
    func writeJSON(to out: inout DirectJSON) {
        out.beginObject()
        out.key("url"); out.string(url)
        out.key("httpStatus"); out.int(httpStatus)
        out.key("code"); out.string(code)
        out.key("remoteAddress"); out.string(remoteAddress)
        out.key("milliseconds"); out.int(milliseconds)
        out.endObject()
    }
}

extension CDNRecord: DirectJSONWritable {
    func writeJSON(to out: inout DirectJSON) throws {
        out.beginObject()
        out.key("url"); out.string(url)
        out.key("code"); out.string(code)
        out.key("associated"); out.bool(associated)
        out.key("reason"); out.string(reason)
        out.key("httpStatus"); out.int(httpStatus)
        out.key("appIDs"); out.stringLists(appIDs)
        out.key("headers"); try out.value(headers)
        // Only `--route both` has changes: the generic path is good enough for them.
        out.key("changes"); try out.encoded(changes)
        out.key("findings"); try out.values(findings)
        out.key("attempts"); try out.values(attempts)
        out.endObject()
    }
}

extension CDNHeaders: DirectJSONWritable {
    func writeJSON(to out: inout DirectJSON) {
        out.beginObject()
        out.key("httpStatus"); out.int(httpStatus)
        out.key("httpVersion"); out.string(httpVersion)
        out.key("failureReason"); out.string(failureReason)
        out.key("swcError"); out.string(swcError)
        out.key("failureText"); out.string(failureText)
        out.key("originStatus"); out.int(originStatus)
        out.key("failureDetails"); out.stringMap(failureDetails)
        out.key("failureDetailsRaw"); out.string(failureDetailsRaw)
        out.key("from"); out.string(from)
        out.key("tryDirect"); out.bool(tryDirect)
        out.key("originFormat"); out.string(originFormat)
        out.key("age"); out.int(age)
        out.key("cacheControl"); out.string(cacheControl)
        out.key("maxAge"); out.int(maxAge)
        out.endObject()
    }
}

extension EntryVerdict: DirectJSONWritable {
    func writeJSON(to out: inout DirectJSON) throws {
        out.beginObject()
        out.key("index"); out.int(entry.index)
        out.key("entry"); out.string(entry.raw)
        out.key("normalized"); out.string(entry.normalized)
        out.key("service"); out.string(entry.service?.name)
        out.key("domain"); out.string(entry.domain)
        out.key("host"); out.string(entry.host)
        out.key("wildcard"); out.bool(entry.isWildcard)
        out.key("mode"); out.string(entry.mode?.rawValue)
        out.key("associated"); out.bool(associated)
        out.key("code"); out.string(code)
        out.key("findings"); try out.values(findings)
        out.endObject()
    }
}
