#!/usr/bin/env python3
"""Memory benchmark: peak RSS of one `aasa-fetch --domains` run against concurrency (and route).

Starts nginx on 127.0.0.1 with a wildcard certificate from a throwaway test CA, writes N host names
(h1.bench.test …) that all reach it through --connect-to (no DNS), runs aasa-fetch once per
concurrency level (fresh SQLite store, JSON to a file) and prints peak RSS (the kernel's VmHWM, as
`wait4` reports it), CPU ms per host, hosts/s and the result codes. Peak RSS should be flat in C
apart from what each running transfer costs (TLS state and buffers). With --route both the same
hosts go through the origin and a local fake CDN (HTTP/2). A benchmark, not a test: it asserts nothing.

With --compare B2 the binary B2 runs in turn with --binary (rows A and B), --repeat K times per
level. With --delay-ms D every connection goes through delay_proxy.py, which holds each chunk D ms
each way: a network's latency, where most of a host's time is waiting; --delay-spread-ms S draws
each connection's delay from D ± S instead; --dead-every K makes every K-th connection the proxy
accepts a dead one (never answered: the host fails when --connect-timeout runs out), as in a real
crawl where some hosts accept and never answer; with --dead-from N, only from the N-th connection
on (dead hosts that begin while the crawl ramps up).

Usage: scripts/bench-memory [--hosts 4000] [--concurrency 64,1024] [--binary PATH] [--route origin|cdn|both] [--wrap CMD]
                            [--compare PATH] [--repeat K] [--delay-ms D [--delay-spread-ms S] [--dead-every K [--dead-from N]]]
"""
import argparse
import collections
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_crawl import RUNNER, describe_status, make_site, start_delay_proxy  # noqa: E402

APP = "ABCDE12345.com.example.app"
BODY = '{"applinks":{"details":[{"appIDs":["%s"],"components":[{"/":"/buy/*"}]}]}}' % APP


def quiet(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process):
    process.terminate()
    process.wait(5)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=4000)
    ap.add_argument("--concurrency", default="64,1024")
    ap.add_argument("--binary", default=".build/release/aasa-fetch")
    ap.add_argument("--route", default="origin", choices=["origin", "cdn", "both"])
    ap.add_argument("--wrap", default="", help="a command prefix, e.g. 'perf stat -e task-clock -o FILE --'")
    ap.add_argument("--extra", action="append", default=[], help="extra aasa-fetch argument")
    ap.add_argument("--delay-ms", type=float, default=0,
                    help="put delay_proxy.py in front of nginx: every chunk waits this long each way")
    ap.add_argument("--delay-spread-ms", type=float, default=0,
                    help="with --delay-ms D: each connection's delay is drawn from D ± this (same seed every run)")
    ap.add_argument("--dead-every", type=int, default=0,
                    help="with --delay-ms D: every K-th connection the proxy accepts is never answered")
    ap.add_argument("--dead-from", type=int, default=1,
                    help="with --dead-every K: only from the N-th connection the proxy accepts on")
    ap.add_argument("--compare", default="", help="a second aasa-fetch binary, run in turn with --binary (A/B)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per binary and C")
    args = ap.parse_args()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    work = tempfile.mkdtemp(prefix="aasa-bench-memory-")
    server = None
    proxy = None
    try:
        make_site(work, BODY, quiet)
        os.makedirs(f"{work}/logs")
        port = free_port()
        user = "user root;" if os.getuid() == 0 else ""
        with open(f"{work}/nginx.conf", "w") as f:
            f.write(f"""{user}
daemon off; worker_processes 1; error_log {work}/logs/error.log warn; pid {work}/nginx.pid;
events {{ worker_connections 8192; }}
http {{
  access_log off; default_type application/json;
  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy; fastcgi_temp_path {work}/fcgi;
  uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl backlog=4096; server_name _;
    ssl_certificate {work}/site.pem; ssl_certificate_key {work}/site.key;
    root {work}/root;
  }}
  server {{
    listen 127.0.0.1:{port} ssl http2; server_name cdn.bench.test;
    ssl_certificate {work}/site.pem; ssl_certificate_key {work}/site.key;
    http2_max_concurrent_streams 512; keepalive_requests 1000000;
    root {work}/root;
    location /a/v1/ {{ rewrite ^ /.well-known/apple-app-site-association break; add_header Apple-Origin-Format json; }}
  }}
}}
""")
        server = subprocess.Popen([nginx, "-p", work, "-c", f"{work}/nginx.conf"], stderr=subprocess.DEVNULL)
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        domains = f"{work}/domains.txt"
        with open(domains, "w") as f:
            for i in range(1, args.hosts + 1):
                f.write(f"h{i}.bench.test\n")
        binaries = [args.binary] + ([args.compare] if args.compare else [])
        spread = f" ± {args.delay_spread_ms:g}" if args.delay_spread_ms > 0 else ""
        dead = (f", every {args.dead_every}-th connection from the {args.dead_from}-th on dead" if args.dead_every > 0
                else "")
        delay = f", {args.delay_ms:g}{spread} ms each way through delay_proxy.py{dead}" if args.delay_ms > 0 else ""
        print(f"{args.hosts} hosts, route {args.route}{delay}, binaries {', '.join(binaries)}")
        print(f"{'C':>5} {'binary':>6} | {'peak RSS MiB':>12} {'CPU ms/host':>11} {'hosts/s':>8} | codes")
        failed = 0
        runs = [(c, label, b) for c in [int(x) for x in args.concurrency.split(",")] for _ in range(max(1, args.repeat))
                for label, b in zip("AB", binaries)]
        for c, label, binary in runs:
            shutil.rmtree(f"{work}/store", ignore_errors=True)
            target = port
            if args.delay_ms > 0:
                # A proxy of its own for every run: the same delays drawn in the same order, and
                # the connections counted from the first (--dead-every, --dead-from).
                if proxy:
                    stop(proxy)
                proxy, target = start_delay_proxy(port, args.delay_ms, args.delay_spread_ms, args.dead_every, args.dead_from)
            cmd = shlex.split(args.wrap) + [binary, "--domains", domains, "--app-id", APP, "--cacert", f"{work}/ca.pem",
                   "--connect-to", f"::127.0.0.1:{target}", "--allow-private", "--concurrency", str(c), "--retry-delays", "",
                   "--quiet", "--json", "--route", args.route, "--cdn-base", "https://cdn.bench.test/a/v1/"] + args.extra
            env = dict(os.environ, AASA_FETCH_CACHE=f"{work}/store")
            # Through a fresh, small interpreter (bench_crawl's RUNNER): Linux carries a process's peak
            # RSS across exec, so a tool forked from this script would report this script's peak
            # whenever that is larger (it read 118 MiB for a 1,000,000-host run whose tool peaked at 48).
            report_line = subprocess.run([sys.executable, "-I", "-S", "-c", RUNNER, json.dumps(cmd), f"{work}/out.json"],
                                         check=True, capture_output=True, text=True, env=env).stdout
            wall, cpu, maxrss, status, _ = json.loads(report_line)
            try:
                report = json.load(open(f"{work}/out.json"))
                codes = collections.Counter(d.get("code") for d in report.get("domains", []))
            except ValueError:
                codes = collections.Counter(["(no JSON)"])
            if status not in (0, 1):
                # A crash or a run error: said in the row, never read as a fast, small run.
                codes[describe_status(status).removeprefix("was ")] += 1
                sys.stderr.write(f"warning: run {label} at C = {c} {describe_status(status)}\n")
                failed += 1
            print(f"{c:>5} {label:>6} | {maxrss / 1024:>12.1f} {1000 * cpu / args.hosts:>11.3f} {args.hosts / wall:>8.0f} | "
                  + ", ".join(f"{k} {v}" for k, v in codes.most_common()))
            sys.stdout.flush()
        if failed:
            # The figures printed stand, but a crash or a run error fails the command (scripts/sanitize).
            sys.exit(f"bench_memory.py: {failed} of {len(runs)} runs crashed or failed")
    finally:
        if proxy:
            stop(proxy)
        if server:
            server.terminate()
            server.wait(5)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
