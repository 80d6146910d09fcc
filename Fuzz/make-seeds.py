#!/usr/bin/env python3
"""Writes the generated seed files of Fuzz/corpus/ (run from anywhere; needs python3 and openssl).

The seeds are small valid (and a few nearly valid) inputs of each fuzz target, so that the fuzzer
starts inside each format instead of guessing its magic numbers. The real-world files of
testdata/corpus/ are seeds too; scripts/fuzz reads them from there. Re-running this script
rewrites every generated file (the CMS signatures change: they use a throwaway key).
"""
import json
import os
import plistlib
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
import io

ROOT = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(ROOT, "corpus")
REPO = os.path.dirname(ROOT)

APP_ID = "ABCDE12345.com.example.demo"
TEAM = "ABCDE12345"


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(folder, name), "wb") as handle:
        handle.write(data)


def entitlements(domains=None):
    return {
        "application-identifier": APP_ID,
        "com.apple.developer.team-identifier": TEAM,
        "com.apple.developer.associated-domains": domains
        or ["applinks:example.com", "applinks:*.example.com?mode=developer", "webcredentials:example.com"],
        "get-task-allow": False,
        "keychain-access-groups": [TEAM + ".*"],
    }


# --- DER (Apple's entitlements encoding) -------------------------------------------------------

def tlv(tag, value):
    n = len(value)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + value


def der_value(value):
    if isinstance(value, bool):
        return tlv(0x01, b"\xff" if value else b"\x00")
    if isinstance(value, int):
        return tlv(0x02, value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True))
    if isinstance(value, str):
        return tlv(0x0C, value.encode())
    if isinstance(value, list):
        return tlv(0x30, b"".join(der_value(v) for v in value))
    if isinstance(value, dict):
        return tlv(0xB0, b"".join(tlv(0x30, tlv(0x0C, k.encode()) + der_value(value[k])) for k in sorted(value)))
    raise TypeError(value)


def der_entitlements(dictionary):
    return tlv(0x70, tlv(0x02, b"\x01") + der_value(dictionary))


# --- Code signature and Mach-O ----------------------------------------------------------------

def be32(v):
    return struct.pack(">I", v)


def blob(magic, payload):
    return be32(magic) + be32(8 + len(payload)) + payload


def super_blob(xml=None, der=None):
    blobs = [(0, blob(0xFADE0C02, b"\xab" * 40))]
    if xml is not None:
        blobs.append((5, blob(0xFADE7171, xml)))
    if der is not None:
        blobs.append((7, blob(0xFADE7172, der)))
    offset = 12 + len(blobs) * 8
    index, body = b"", b""
    for kind, data in blobs:
        index += be32(kind) + be32(offset)
        body += data
        offset += len(data)
    return be32(0xFADE0CC0) + be32(offset) + be32(len(blobs)) + index + body


def macho(signature, cpu=0x0100000C, is64=True, big=False):
    u32 = (lambda v: struct.pack(">I", v)) if big else (lambda v: struct.pack("<I", v))
    header_size = 32 if is64 else 28
    commands = u32(0x1B) + u32(24) + b"\x11" * 16  # LC_UUID
    count = 1
    code = b"\xc3" * 32
    commands_size = len(commands) + (16 if signature is not None else 0)
    data_offset = (header_size + commands_size + len(code) + 15) & ~15
    if signature is not None:
        commands += u32(0x1D) + u32(16) + u32(data_offset) + u32(len(signature))
        count += 1
    header = u32(0xFEEDFACF if is64 else 0xFEEDFACE) + u32(cpu) + u32(0) + u32(2) + u32(count) + u32(len(commands)) + u32(0x00200085)
    if is64:
        header += u32(0)
    out = header + commands + code
    if signature is not None:
        out += b"\x00" * (data_offset - len(out)) + signature
    return out


def universal(slices, wide=False):
    header = be32(0xCAFEBABF if wide else 0xCAFEBABE) + be32(len(slices))
    offset = (8 + len(slices) * (32 if wide else 20) + 15) & ~15
    start = offset
    body = b""
    for cpu, data in slices:
        aligned = (offset + 15) & ~15
        body += b"\x00" * (aligned - offset)
        offset = aligned
        if wide:
            header += be32(cpu) + be32(0) + struct.pack(">QQ", offset, len(data)) + be32(4) + be32(0)
        else:
            header += be32(cpu) + be32(0) + be32(offset) + be32(len(data)) + be32(4)
        body += data
        offset += len(data)
    return header + b"\x00" * (start - len(header)) + body


def xml_plist(dictionary):
    return plistlib.dumps(dictionary, fmt=plistlib.FMT_XML)


# --- CMS --------------------------------------------------------------------------------------

def cms_sign(content, stream=False):
    with tempfile.TemporaryDirectory() as folder:
        key, cert = os.path.join(folder, "key.pem"), os.path.join(folder, "cert.pem")
        source, output = os.path.join(folder, "in"), os.path.join(folder, "out")
        with open(source, "wb") as handle:
            handle.write(content)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "1", "-subj", "/CN=Fuzz Seed Signer", "-keyout", key, "-out", cert], **quiet)
        command = ["openssl", "cms", "-sign", "-in", source, "-signer", cert, "-inkey", key, "-binary", "-nodetach",
                   "-noattr", "-outform", "DER", "-out", output]
        if stream:
            command.append("-stream")  # BER: indefinite lengths, the content as a constructed OCTET STRING
        subprocess.run(command, **quiet)
        with open(output, "rb") as handle:
            return handle.read()


SIGNED_DATA_OID = bytes([0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02])
DATA_OID = bytes([0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01])


def cms_by_hand(content, segments=3):
    """A minimal SignedData without signers, in BER: indefinite lengths and the content split into
    a constructed OCTET STRING of `segments` pieces (the shapes the unwrapper must read)."""
    step = max(1, len(content) // segments)
    pieces = b"".join(tlv(0x04, content[i:i + step]) for i in range(0, len(content), step))
    econtent = b"\xa0\x80" + b"\x24\x80" + pieces + b"\x00\x00" + b"\x00\x00"
    encap = b"\x30\x80" + DATA_OID + econtent + b"\x00\x00"
    signed = tlv(0x30, tlv(0x02, b"\x01") + tlv(0x31, b"") + encap + tlv(0x31, b""))
    return b"\x30\x80" + SIGNED_DATA_OID + b"\xa0\x80" + signed + b"\x00\x00" + b"\x00\x00"


# --- Zip --------------------------------------------------------------------------------------

def zip_bytes(entries, method):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = method
            archive.writestr(info, data)
    return buffer.getvalue()


def info_plist(executable="Demo"):
    return xml_plist({"CFBundleExecutable": executable, "CFBundleIdentifier": "com.example.demo", "CFBundleName": "Demo"})


def profile_plist(ents):
    import datetime
    return xml_plist({
        "AppIDName": "Demo",
        "ApplicationIdentifierPrefix": [TEAM],
        "CreationDate": datetime.datetime(2024, 1, 1),
        "Entitlements": ents,
        "ExpirationDate": datetime.datetime(2030, 1, 1),
        "Name": "Demo Distribution",
        "TeamIdentifier": [TEAM],
        "TeamName": "Example Ltd",
        "UUID": "0F5C0D3A-5B7E-4C1D-9E2F-123456789ABC",
        "Version": 1,
    })


def portal_entitlements(domains="*"):
    return {
        "application-identifier": APP_ID,
        "com.apple.developer.team-identifier": TEAM,
        "com.apple.developer.associated-domains": domains,
        "get-task-allow": False,
    }


# --- Targets ----------------------------------------------------------------------------------

def seeds_aasa():
    # The conformance cases' files: the three longest of each feature, without duplicates.
    cases = json.load(open(os.path.join(REPO, "testdata", "conformance", "cases.json")))
    by_feature = {}
    for case in cases["matching"]:
        text = json.dumps(case["aasa"], separators=(",", ":"), ensure_ascii=False)
        by_feature.setdefault(case["feature"], set()).add(text)
    for feature in sorted(by_feature):
        for number, text in enumerate(sorted(by_feature[feature], key=lambda t: (-len(t), t))[:3]):
            write("aasa", "conformance-%s-%d.json" % (feature, number), text)
    write("aasa", "legacy-paths.json", json.dumps({"applinks": {"apps": [], "details": [
        {"appID": APP_ID, "paths": ["/a/*", "NOT /a/b", "*"]}]}}))
    write("aasa", "legacy-dictionary.json", json.dumps({"applinks": {"apps": [], "details": {APP_ID: {"paths": ["*"]}}}}))
    write("aasa", "variables-defaults.json", json.dumps({"applinks": {
        "defaults": {"caseSensitive": False, "percentEncoded": False},
        "substitutionVariables": {"food": ["burrito", "taco"], "v": ["$(lang)_$(region)"]},
        "details": [{"appIDs": [APP_ID], "defaults": {"caseSensitive": True},
                     "components": [{"/": "/$(lang)/$(food)/*", "?": {"q": "?*", "": "x"}, "#": "n*", "exclude": False,
                                     "comment": "c", "caseSensitive": False, "percentEncoded": True}]}]}}))
    write("aasa", "services.json", json.dumps({"webcredentials": {"apps": [APP_ID]}, "appclips": {"apps": [APP_ID + ".Clip"]},
                                               "activitycontinuation": {"apps": [APP_ID]}, "authsrv": {"apps": []}}))
    write("aasa", "bom.json", b"\xef\xbb\xbf" + json.dumps({"applinks": {"details": []}}).encode())


def seeds_cms():
    small = open(os.path.join(REPO, "testdata", "corpus", "aasa", sorted(os.listdir(os.path.join(REPO, "testdata", "corpus", "aasa")))[0]), "rb").read()
    doc = json.dumps({"applinks": {"details": [{"appIDs": [APP_ID], "components": [{"/": "/buy/*"}]}]}}).encode()
    write("cms", "signed-der.p7m", cms_sign(doc))
    write("cms", "signed-ber-stream.p7m", cms_sign(small, stream=True))
    write("cms", "unsigned-ber-segments.p7m", cms_by_hand(doc))


def seeds_plist():
    for name, ents in [("basic", entitlements()), ("variables", entitlements(["applinks:$(APP_DOMAIN)", "webcredentials:${APP_DOMAIN}"]))]:
        write("plist", name + ".xml", xml_plist(ents))
        write("plist", name + ".bplist", plistlib.dumps(ents, fmt=plistlib.FMT_BINARY))
    # Objects shared between containers (plistlib writes one object for equal values).
    shared = ["applinks:example.com"]
    write("plist", "shared.bplist", plistlib.dumps({"com.apple.developer.associated-domains": shared, "x": [shared, [shared, shared]]},
                                                   fmt=plistlib.FMT_BINARY))
    write("plist", "types.bplist", plistlib.dumps({"com.apple.developer.associated-domains": ["applinks:a.example", 1, True, 1.5, b"\x00"],
                                                   "d": {"k": "v"}}, fmt=plistlib.FMT_BINARY))


def seeds_macho():
    ents = entitlements()
    signature = super_blob(xml=xml_plist(ents), der=der_entitlements(ents))
    thin = macho(signature)
    write("macho", "thin-arm64.macho", thin)
    write("macho", "thin32-be.macho", macho(super_blob(der=der_entitlements(ents)), cpu=12, is64=False, big=True))
    write("macho", "universal.macho", universal([(0x0100000C, thin), (0x01000007, macho(super_blob(xml=xml_plist(ents))))]))
    write("macho", "universal64.macho", universal([(0x0100000C, thin)], wide=True))
    write("macho", "unsigned.macho", macho(None))
    write("macho", "superblob.bin", signature)
    write("macho", "der.bin", der_entitlements(ents))


def seeds_zip():
    ents = entitlements()
    executable = macho(super_blob(xml=xml_plist(ents), der=der_entitlements(ents)))
    profile = cms_sign(profile_plist(portal_entitlements()))
    entries = [("Payload/Demo.app/Info.plist", info_plist()), ("Payload/Demo.app/Demo", executable),
               ("Payload/Demo.app/embedded.mobileprovision", profile)]
    write("zip", "stored.ipa", zip_bytes(entries[:2], zipfile.ZIP_STORED))
    write("zip", "deflated.ipa", zip_bytes(entries, zipfile.ZIP_DEFLATED))


def seeds_profile():
    write("profile", "any-domain.mobileprovision", cms_sign(profile_plist(portal_entitlements())))
    write("profile", "list.mobileprovision", cms_sign(profile_plist(portal_entitlements(["applinks:example.com", "*"]))))
    write("profile", "ber.mobileprovision", cms_by_hand(profile_plist(portal_entitlements("applinks:example.com")), segments=4))


def seeds_entry():
    write("entry", "forms.txt", "\n".join([
        "applinks:example.com", "applinks:*.example.com", "applinks:www.example.com?mode=developer",
        "applinks:example.com?mode=managed", "applinks:example.com?mode=developer+managed", "webcredentials:example.com",
        "activitycontinuation:example.com", "appclips:example.com", "authsrv:example.com", "applinks:$(APP_DOMAIN)",
        "applinks:${HOST}", "applinks:$(UNSET)", " applinks:Example.COM. ", "applinks:bücher.example", "applinks:xn--bcher-kva.example",
        "applinks:example.com:443", "applinks:[::1]", "applinks:192.0.2.1", "applinks:https://example.com/", "example.com",
        "applinks:", "unknown:example.com", "applinks:*.*.example.com", "applinks:exa mple.com", "\u0000", "applinks:example.com",
    ]) + "\n")


def seeds_lines():
    write("lines", "list.txt", "# hosts\nexample.com\napplinks:www.example.com # comment\n\n  webcredentials:example.com  \n")
    write("lines", "separators.txt", "a.example\r\nb.example\rc.example\x0bd.example\x0ce.example\u0085f.example\u2028g.example\u2029h.example")
    write("lines", "bom.txt", b"\xef\xbb\xbfexample.com\nb\xc3\xbccher.example\n")
    write("lines", "invalid-utf8.txt", b"example.com\nbad\xff\xfe.example\n")


def main():
    if shutil.which("openssl") is None:
        sys.exit("make-seeds.py needs openssl")
    seeds_aasa()
    seeds_cms()
    seeds_plist()
    seeds_macho()
    seeds_zip()
    seeds_profile()
    seeds_entry()
    seeds_lines()


if __name__ == "__main__":
    main()
