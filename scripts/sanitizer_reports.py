#!/usr/bin/env python3
"""Reads the sanitizer reports of scripts/sanitize and fails when one names a defect.

    python3 scripts/sanitizer_reports.py address|thread FOLDER [BINARY]

AddressSanitizer: every report is a defect (an out-of-bounds access, a use after free, a failed
allocation). ThreadSanitizer: a race is a defect unless both accesses were made inside the body
of a `Mutex.withLock` (Swift's Synchronization.Mutex waits on a futex, which ThreadSanitizer does not
see, so it reports every state a mutex guards as raced). Such a body is a closure that takes the
guarded state `inout` and throws a typed error (its mangled name ends in `zYuYTXEfU_`, in
`zYuKYTXEfU_` when the error is `any Error`, or in `tz_tYTXEfU_` for a tuple; `MUTEX_BODY`); an
access made while such a body is on the stack was made holding the lock.

A process that could not start the runtime's symbolizer (under a limit on threads or descriptors)
writes frames as `<null> <null> (aasa-fetch+0xOFFSET)`; with BINARY, those of it are named here with
llvm-symbolizer, so such a report is judged like the others.
"""
import collections
import glob
import os
import re
import shutil
import subprocess
import sys

SEPARATOR = "=================="
# A closure (`fU_`, `fU0_`, …) given its argument `inout` (`z`, `zYu` for `inout sending`) that throws a
# typed error (`YT`; `KYT` when that error is `any Error`) and does not escape (`XE`): the shape of
# `Mutex.withLock`'s body; `TA` is a partial application of it.
MUTEX_BODY = r"z(Yu)?(_t)?K?YTXEfU\d*_(TA)?$"


UNNAMED = re.compile(r"<null> <null> \((\S+)\+0x([0-9a-f]+)\)")


def symbolizer():
    found = shutil.which("llvm-symbolizer")
    if not found and shutil.which("swift"):
        beside = os.path.join(os.path.dirname(os.path.realpath(shutil.which("swift"))), "llvm-symbolizer")
        found = beside if os.access(beside, os.X_OK) else None
    return found


def name_frames(text, binary):
    """Names the unnamed frames of `binary` in a report (their linkage names), in one symbolizer call."""
    module = os.path.basename(binary)
    offsets = sorted({m.group(2) for m in UNNAMED.finditer(text) if m.group(1) == module})
    tool = symbolizer()
    if not offsets or not tool:
        return text
    answer = subprocess.run([tool, "--no-demangle", "--no-inlines", f"--obj={binary}"],
                            input="".join(f"0x{o}\n" for o in offsets), capture_output=True, text=True).stdout
    names = dict(zip(offsets, [block.splitlines()[0] for block in answer.strip().split("\n\n")]))
    return UNNAMED.sub(lambda m: f"{names.get(m.group(2), '<null>')} ({m.group(1)}+0x{m.group(2)})"
                       if m.group(1) == module else m.group(0), text)


def reports(folder, binary=None):
    for path in sorted(glob.glob(os.path.join(folder, "report.*"))):
        with open(path, errors="replace") as f:
            text = f.read()
        if binary:
            text = name_frames(text, binary)
        for block in text.split(SEPARATOR):
            if "ERROR: AddressSanitizer" in block or "WARNING: ThreadSanitizer" in block:
                yield path, block.strip()


def access_stacks(block):
    """The stacks of the two accesses of a ThreadSanitizer race, each a list of function names."""
    stacks = []
    for paragraph in re.split(r"\n\s*\n", block):
        lines = [line.strip() for line in paragraph.strip().splitlines() if not line.startswith("WARNING:")]
        first = lines[0] if lines else ""
        if re.search(r"\b(access|read|write)\b.* by (thread T\d+|main thread)", first, re.IGNORECASE) \
                and not first.startswith(("Location", "Mutex", "Thread")):
            stacks.append(re.findall(r"#\d+ (\S+)", paragraph))
    return stacks


def inside_mutex(stack):
    return any(re.search(MUTEX_BODY, name) for name in stack)


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ("address", "thread"):
        sys.exit(__doc__.strip().splitlines()[2].strip())
    kind, folder = sys.argv[1], sys.argv[2]
    binary = sys.argv[3] if len(sys.argv) == 4 else None
    defects = collections.Counter()
    examples = {}
    guarded = 0
    for path, block in reports(folder, binary):
        if kind == "thread" and "WARNING: ThreadSanitizer" in block:
            stacks = access_stacks(block)
            if len(stacks) >= 2 and all(inside_mutex(s) for s in stacks[:2]):
                guarded += 1
                continue
            key = " / ".join(s[0] if s else "?" for s in stacks[:2]) or block.splitlines()[0]
        else:
            head = block.splitlines()[0]
            frame = re.search(r"#\d+ 0x[0-9a-f]+ in (\S+)(?: (\S+))?", block)
            key = re.sub(r"==\d+==", "", head) + (f" in {' '.join(g for g in frame.groups() if g)}" if frame else "")
        defects[key] += 1
        examples.setdefault(key, (path, block))
    if kind == "thread":
        print(f"sanitizer reports: {guarded} races between accesses that hold the same Mutex (not defects)")
    if not defects:
        print(f"sanitizer reports: no {kind} sanitizer defect")
        return
    print(f"sanitizer reports: {sum(defects.values())} defects of {len(defects)} kinds")
    for key, count in defects.most_common():
        path, block = examples[key]
        print(f"\n{count}x {key}\n  first in {path}:")
        lines = [re.sub(r" \(BuildId: [0-9a-f]+\)", "", line) for line in block.splitlines()]
        print("\n".join("    " + line for line in lines[:60]))
    sys.exit(1)


if __name__ == "__main__":
    main()
