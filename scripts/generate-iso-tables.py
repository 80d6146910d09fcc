#!/usr/bin/env python3
"""Generate Sources/AASAFetchCore/Matching/ISOTables.swift from Debian's iso-codes JSON.

The tables back the predefined substitution variables `$(region)` and `$(lang)`, which Apple
defines as the contents of Foundation's `Locale.isoRegionCodes` and `Locale.isoLanguageCodes`.
They are generated once and committed; nothing reads Foundation's Locale at run time.

Source: the `iso-codes` Debian package (`apt-get install -y iso-codes`):
  /usr/share/iso-codes/json/iso_3166-1.json  -> every `alpha_2` (ISO 3166-1 alpha-2 regions)
  /usr/share/iso-codes/json/iso_639-2.json   -> every `alpha_2` (the ISO 639-1 two-letter languages)

Usage: python3 scripts/generate-iso-tables.py [ISO_CODES_JSON_DIR] > Sources/AASAFetchCore/Matching/ISOTables.swift
"""
import json
import os
import subprocess
import sys

def package_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "iso-codes"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"

def swift_array(codes, indent="        "):
    lines, line = [], indent
    for code in codes:
        item = f'"{code}", '
        if len(line) + len(item) > 100:
            lines.append(line.rstrip())
            line = indent
        line += item
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)

def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/iso-codes/json"
    with open(os.path.join(folder, "iso_3166-1.json"), encoding="utf-8") as f:
        regions = sorted({e["alpha_2"] for e in json.load(f)["3166-1"] if "alpha_2" in e})
    with open(os.path.join(folder, "iso_639-2.json"), encoding="utf-8") as f:
        langs = sorted({e["alpha_2"] for e in json.load(f)["639-2"] if "alpha_2" in e})
    version = package_version()
    print(f"""// GENERATED FILE — do not edit; run scripts/generate-iso-tables.py instead.
//
// Source: Debian package iso-codes {version}
//   iso_3166-1.json: {len(regions)} ISO 3166-1 alpha-2 region codes
//   iso_639-2.json:  {len(langs)} ISO 639-1 two-letter language codes (the entries with `alpha_2`)

/// The lists behind the predefined substitution variables `$(region)` and `$(lang)`.
///
/// Apple defines them as Foundation's `Locale.isoRegionCodes` and `Locale.isoLanguageCodes`;
/// these tables are the ISO two-letter codes from Debian's iso-codes package, generated once.
public enum ISOTables {{
    /// Where the tables come from.
    public static let source = "Debian iso-codes {version}"

    /// ISO 3166-1 alpha-2 region codes, upper case, sorted (`GB`, not `UK`).
    public static let regionCodes: [String] = [
{swift_array(regions)}
    ]

    /// ISO 639-1 two-letter language codes, lower case, sorted.
    public static let languageCodes: [String] = [
{swift_array(langs)}
    ]
}}""")

if __name__ == "__main__":
    main()
