#!/usr/bin/env python3
"""Checks aasa-fetch's CI formats.

Usage: check_ci_formats.py sarif|junit REQUESTS

Each line of REQUESTS is {"document": TEXT}. One JSON line is written per request:
- sarif: {"problems": [...]} -- TEXT validated against sarif-schema-2.1.0.json (next to this
  script; OASIS's SARIF 2.1.0 schema, draft-07, format checking on);
- junit: {"problems": [...], "suites": [...]} -- TEXT parsed by xml.etree as JUnit XML
  (<testsuites><testsuite name tests failures errors skipped time><testcase classname name time>
  with <failure message type>, <error message type>, <skipped message>, <system-out>); the counts
  of each suite are checked against its cases.
"""

import json
import os
import sys
import xml.etree.ElementTree as ET

from jsonschema import Draft7Validator, FormatChecker


def check_sarif(text, validator):
    try:
        document = json.loads(text)
    except ValueError as error:
        return {"problems": [f"not JSON: {error}"]}
    problems = []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(part) for part in error.absolute_path)
        problems.append(f"/{path}: {error.message}")
    return {"problems": problems[:8]}


def check_junit(text):
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as error:
        return {"problems": [f"not XML: {error}"], "suites": []}
    problems = []
    if root.tag != "testsuites":
        problems.append(f"root is <{root.tag}>")
    suites = []
    for suite in root:
        if suite.tag != "testsuite":
            problems.append(f"<{suite.tag}> under <testsuites>")
            continue
        for attribute in ("name", "tests", "failures", "errors", "skipped", "time"):
            if attribute not in suite.attrib:
                problems.append(f"testsuite without {attribute}")
        cases = []
        for case in suite:
            if case.tag != "testcase":
                problems.append(f"<{case.tag}> under <testsuite>")
                continue
            for attribute in ("classname", "name", "time"):
                if attribute not in case.attrib:
                    problems.append(f"testcase without {attribute}")
            record = {"classname": case.get("classname"), "name": case.get("name"), "time": case.get("time")}
            for kind in ("failure", "error"):
                element = case.find(kind)
                record[kind] = None if element is None else {
                    "message": element.get("message"), "type": element.get("type"), "text": element.text or ""}
            skipped = case.find("skipped")
            record["skipped"] = None if skipped is None else skipped.get("message")
            out = case.find("system-out")
            record["systemOut"] = None if out is None else (out.text or "")
            cases.append(record)
        counts = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c["failure"]),
            "errors": sum(1 for c in cases if c["error"]),
            "skipped": sum(1 for c in cases if c["skipped"] is not None),
        }
        for key, value in counts.items():
            if suite.get(key) != str(value):
                problems.append(f"suite {suite.get('name')!r}: {key}={suite.get(key)} but {value} cases")
        try:
            float(suite.get("time", "x"))
        except ValueError:
            problems.append(f"suite {suite.get('name')!r}: time is not a number")
        suites.append({"name": suite.get("name"), "cases": cases, **counts})
    return {"problems": problems, "suites": suites}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("sarif", "junit"):
        print(__doc__, file=sys.stderr)
        return 2
    validator = None
    if sys.argv[1] == "sarif":
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sarif-schema-2.1.0.json"), encoding="utf-8") as handle:
            schema = json.load(handle)
        Draft7Validator.check_schema(schema)
        validator = Draft7Validator(schema, format_checker=FormatChecker())
    with open(sys.argv[2], encoding="utf-8") as requests:
        for line in requests:
            if not line.strip():
                continue
            text = json.loads(line)["document"]
            answer = check_sarif(text, validator) if validator else check_junit(text)
            print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
