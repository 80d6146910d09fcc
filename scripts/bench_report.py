#!/usr/bin/env python3
"""The status page at scale: fills a store with N hosts the way recording runs leave them, times
`aasa-fetch report --html`, and loads the page in headless Chromium over the DevTools protocol
(--remote-debugging-pipe, no extra package) to time its load, first paint, a filter and a sort,
and to collect console messages. Usage: bench_report.py BINARY [N] (default 10000)."""
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time

APP = "ABCDE12345.com.example.app"
GOOD = json.dumps({"applinks": {"details": [{"appIDs": [APP, "ABCDE12345.com.example.app2"], "components": [
    {"#": "no_universal_links", "exclude": True, "comment": "Matches any URL with that fragment"},
    {"/": "/buy/*", "comment": "Matches any URL with a path that starts with /buy/."},
    {"/": "/help/website/*", "exclude": True},
    {"/": "/help/*", "?": {"articleNumber": "????"}}]}]},
    "webcredentials": {"apps": [APP]}}, indent=2)
OTHER = GOOD.replace(APP + '"', 'ZYXWV98765.com.example.other"')


def fill(binary, folder, count):
    """Creates the store with the tool (schema and migrations), then adds `count` hosts."""
    subprocess.run([binary, "--domain", "applinks:seed.bench.example", "--app-id", APP, "--connect-to", "::127.0.0.1:9",
                    "--allow-private", "--retry-delays", "", "--connect-timeout", "1", "--quiet", "--cache", folder],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = sqlite3.connect(os.path.join(folder, "aasa-fetch.sqlite"))
    db.execute("DELETE FROM hosts")
    db.execute("DELETE FROM entries")
    db.execute("DELETE FROM history")
    rng = random.Random(7)
    now = time.time()
    json_headers = json.dumps([{"name": "Content-Type", "value": "application/json"}, {"name": "ETag", "value": "\"abc\""}])
    hosts, entries, history = [], [], []
    for i in range(count):
        host = f"h{i}.bench-{i % 97}.example.com"
        kind = rng.random()
        t = now - rng.randint(0, 86400)
        # Every host's file its own (a comment naming the host), as in a real fleet.
        good = GOOD.replace("Matches any URL with that fragment", f"Matches any URL of {host} with that fragment")
        other = OTHER.replace("Matches any URL with that fragment", f"Matches any URL of {host} with that fragment")
        if kind < 0.80:
            row = (host, "ok", "HTTP 200, 512 bytes", 200, json_headers, good, good, t, 0)
        elif kind < 0.88:
            row = (host, "ok", "HTTP 200, 512 bytes", 200, json_headers, other, other, t, 0)
        elif kind < 0.95:
            loc = json.dumps([{"name": "Location", "value": f"https://www.{host}/.well-known/apple-app-site-association"}])
            row = (host, "http-redirect", f"HTTP 301 redirect to https://www.{host}/.well-known/apple-app-site-association; Apple's downloader never follows redirects",
                   301, loc, "", good if kind < 0.92 else None, t, rng.randint(1, 8))
        else:
            row = (host, "timeout", "timed out (connect 5 s, total 10 s): Connection timed out after 5001 milliseconds", None, "[]", None,
                   good if kind < 0.97 else None, t, rng.randint(1, 8))
        (name, code, reason, status, headers, body, approved, fetched, failures) = row
        hosts.append((name, "origin", 0, now - 90 * 86400, code, reason, status, f"https://{name}/.well-known/apple-app-site-association",
                      headers, body.encode() if body else None, fetched, approved.encode() if approved else None,
                      (fetched if code == "ok" else fetched - 86400) if approved else None, failures, fetched + 86400))
        entries.append((f"applinks:{name}", APP, "origin", "applinks", name, now - 90 * 86400))
        events = [("approved", {"code": "ok", "reason": "HTTP 200, 512 bytes", "httpStatus": 200})]
        if approved and rng.random() < 0.5:
            events.append(("changed", {"httpStatus": 200, "changes": [{"kind": "rules-changed", "service": "applinks",
                                                                         "description": "the rules of applinks changed"}]}))
        if code != "ok":
            events.append(("broke" if approved else "failed", {"code": code, "reason": reason, "httpStatus": status}))
        for n, (k, d) in enumerate(events):
            history.append((name, "origin", now - 80 * 86400 + n * 86400 * 20, k, json.dumps(d)))
    db.executemany("""INSERT INTO hosts (host, route, tier, added_at, last_code, last_reason, last_http_status, last_url, last_headers,
                      last_body, fetched_at, approved_body, approved_at, consecutive_failures, next_check)
                      VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""", hosts)
    db.executemany("INSERT INTO entries (entry, app_id, route, service, host, added_at) VALUES (?,?,?,?,?,?)", entries)
    db.executemany("INSERT INTO history (host, route, at, kind, detail) VALUES (?,?,?,?,?)", history)
    db.commit()
    db.close()


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe: JSON messages ended by NUL on fds 3 and 4."""

    def __init__(self, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child():  # fds 3 and 4 in the browser, whatever numbers the pipes have here
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
        self.process = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1280,900", "about:blank"],
            close_fds=False, preexec_fn=child, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        decoded = json.loads(message)
        if "method" in decoded:
            self.events.append(decoded)
        return decoded

    def wait_for(self, method, deadline=120):
        end = time.time() + deadline
        while time.time() < end:
            for event in self.events:
                if event["method"] == method:
                    self.events.remove(event)
                    return event
            self.read()
        raise RuntimeError(f"no {method} within {deadline} s")

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        self.process.wait(timeout=30)


def measure(page):
    with tempfile.TemporaryDirectory(prefix="aasa-bench-chromium-") as profile:
        tools = DevTools(profile)
        try:
            target = tools.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = tools.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                tools.send(f"{domain}.enable", session=session)
            started = time.time()
            tools.send("Page.navigate", {"url": "file://" + page}, session=session)
            tools.wait_for("Page.loadEventFired")
            wall = time.time() - started

            def evaluate(expression):
                return tools.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)["result"].get("value")
            nav = evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0].toJSON())")
            paints = evaluate("JSON.stringify(performance.getEntriesByType('paint').map(p => [p.name, p.startTime]))")
            filter_ms = evaluate("""(() => { const s = document.getElementById('state'); const t = performance.now();
                s.value = 'fails'; s.dispatchEvent(new Event('change')); document.body.getBoundingClientRect();
                return performance.now() - t; })()""")
            shown = evaluate("document.getElementById('shown').textContent")
            sort_ms = evaluate("""(() => { const s = document.getElementById('sort'); const t = performance.now();
                s.value = 'host'; s.dispatchEvent(new Event('change')); document.body.getBoundingClientRect();
                return performance.now() - t; })()""")
            open_ms = evaluate("""(() => { const row = document.querySelector('details.h:not([hidden])'); const t = performance.now();
                row.open = true; row.dispatchEvent(new Event('toggle')); document.body.getBoundingClientRect();
                return performance.now() - t; })()""")
            console = [e for e in tools.events if e["method"] in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded")]
            return {"wall": wall, "nav": json.loads(nav), "paints": json.loads(paints), "filter_ms": filter_ms, "shown": shown,
                    "sort_ms": sort_ms, "open_ms": open_ms, "console": console}
        finally:
            tools.close()


def main():
    binary = os.path.abspath(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    with tempfile.TemporaryDirectory(prefix="aasa-bench-report-") as folder:
        fill(binary, folder, count)
        page = os.path.join(folder, "status.html")
        times = []
        for _ in range(3):
            started = time.time()
            subprocess.run([binary, "report", "--html", page, "--cache", folder], check=True, stdout=subprocess.DEVNULL)
            times.append(time.time() - started)
        size = os.path.getsize(page)
        runs = [measure(page) for _ in range(3)]
        best = min(runs, key=lambda r: r["nav"]["loadEventEnd"])
        fcp = dict(best["paints"]).get("first-contentful-paint")
        print(f"hosts: {count}")
        print(f"report --html: {min(times):.2f} s (best of 3; {', '.join(f'{t:.2f}' for t in times)})")
        print(f"page: {size / 1024 / 1024:.1f} MiB ({size} bytes)")
        print(f"chromium: DOMContentLoaded {best['nav']['domContentLoadedEventEnd']:.0f} ms, load {best['nav']['loadEventEnd']:.0f} ms, "
              f"first contentful paint {fcp:.0f} ms (best of 3 loads; loads: "
              + ", ".join(f"{r['nav']['loadEventEnd']:.0f}" for r in runs) + " ms)")
        print(f"state filter 'fails': {best['filter_ms']:.0f} ms ({best['shown']} shown); sort by host: {best['sort_ms']:.0f} ms; "
              f"first row opened (the island parsed): {best['open_ms']:.0f} ms")
        print(f"console messages: {sum(len(r['console']) for r in runs)}")
        for r in runs:
            for message in r["console"]:
                print("  ", json.dumps(message)[:300])


if __name__ == "__main__":
    main()
