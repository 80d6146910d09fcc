#!/usr/bin/env python3
"""Validates aasa-fetch's JSON documents against the JSON Schemas in docs/schema.

Usage: validate_json.py SCHEMA_DIR [REQUESTS] (standard input without REQUESTS)

Each line of the requests is {"schema": NAME, "document": TEXT}: the document exactly as the
tool printed it, checked against SCHEMA_DIR/NAME.schema.json (draft 2020-12, format checking on;
every schema may refer to common.schema.json). The text must also start with the key
"schemaVersion". One line is written per request: "ok" or the reasons it failed. Exit status 0
when every document is valid, 1 otherwise, 2 on a usage error.
"""

import datetime
import json
import os
import re
import sys

from jsonschema import Draft202012Validator, FormatChecker

try:
    from referencing import Registry, Resource
except ImportError:  # jsonschema before 4.18 (Debian 12's python3-jsonschema)
    Registry = None

DATE_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")
FIRST_KEY = re.compile(r'^\s*\{\s*"schemaVersion"\s*:')

checker = FormatChecker()


@checker.checks("date-time", raises=ValueError)
def is_date_time(value):
    """ISO 8601 in UTC with whole seconds, and a real date (checked without optional packages)."""
    if not isinstance(value, str):
        return True
    if not DATE_TIME.match(value):
        raise ValueError(f"{value!r} is not YYYY-MM-DDTHH:MM:SSZ")
    datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    return True


def make_validator(schema, schemas, registry):
    if registry is not None:
        return Draft202012Validator(schema, registry=registry, format_checker=checker)
    from jsonschema import RefResolver

    store = {each["$id"]: each for each in schemas.values()}
    resolver = RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
    return Draft202012Validator(schema, resolver=resolver, format_checker=checker)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    folder = sys.argv[1]
    registry = Registry() if Registry else None
    schemas = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".schema.json"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            schema = json.load(handle)
        Draft202012Validator.check_schema(schema)
        if registry is not None:
            registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
        schemas[name[: -len(".schema.json")]] = schema
    failures = 0
    requests = open(sys.argv[2], encoding="utf-8") if len(sys.argv) == 3 else sys.stdin
    for number, line in enumerate(requests, 1):
        if not line.strip():
            continue
        request = json.loads(line)
        name, text = request["schema"], request["document"]
        problems = []
        if name not in schemas:
            problems.append(f"no schema {name}")
        else:
            try:
                document = json.loads(text)
            except ValueError as error:
                problems.append(f"not JSON: {error}")
            else:
                if not FIRST_KEY.match(text):
                    problems.append('the first key is not "schemaVersion"')
                validator = make_validator(schemas[name], schemas, registry)
                for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
                    path = "/".join(str(part) for part in error.absolute_path)
                    problems.append(f"/{path}: {error.message}")
        if problems:
            failures += 1
            print(f"{name} #{number}: " + " | ".join(problems[:8]))
        else:
            print("ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
