#!/usr/bin/env python3
"""Crawl benchmark: aasa-fetch against `curl --parallel` over the same N hosts, same concurrency.

Starts nginx on 127.0.0.1 with a wildcard certificate from a throwaway test CA, generates N host
names (h1.bench.test …) that all reach it through --connect-to (no DNS), and runs, for every N and
C, both tools over the same URLs. Prints hosts per second, CPU seconds per host and peak RSS of
each, and the ratios (aasa-fetch / curl for speed, curl / aasa-fetch for memory).

Every aasa-fetch run records into a fresh SQLite store in the benchmark's temporary folder (a first
crawl; the default configuration otherwise). Also prints the CPU time nginx spent per host during each run ("nginx ms/host"): with nginx far
from a full core, the client is what limits the rate. With --repeat K every measurement is taken
K times (the tools alternate) and the median run is printed.

aasa-fetch runs once per --threads row (by default its default, one curl loop per core, and
--threads 1); each row shows the CPU time per host of every curl loop thread (busiest first) and
of all other threads, sampled from /proc/PID/task/*/stat every 20 ms while it runs. The first line
gives the start-up peak RSS of `aasa-fetch --version` and `curl --version`.

With --delay-ms D both tools reach nginx through delay_proxy.py, which holds every chunk D ms each
way: the regime of a real crawl, where a host's time is mostly waiting and C transfers stay in
flight. The proxy is one Python thread with CPU of its own, so in that mode memory and CPU per
host say more than hosts/s. --delay-spread-ms S gives each connection its own delay within D ± S,
so that concurrent connections' events arrive spread out, as from hosts at different distances.

curl 7.x clamps --parallel-max to 300: its rows above C = 300 run 300 transfers at once, and the
script prints a note saying so.

Usage: scripts/bench-crawl [--sizes 2000,20000] [--concurrency 16,64,256,1024] [--threads default,1] [--repeat K]
                           [--binary PATH] [--extra ARG]... [--legacy] [--delay-ms D [--delay-spread-ms S]]
"""
import argparse
import shlex
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

APP = "ABCDE12345.com.example.app"
BODY = ('{"applinks":{"details":[{"appIDs":["%s"],"components":[{"/":"/buy/*"},{"/":"/help/*","?":{"articleNumber":"????"}}]}]},'
        '"webcredentials":{"apps":["%s"]}}' % (APP, APP))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def make_site(work, body=BODY, run_command=None, legacy=False):
    """A test CA, a wildcard certificate for *.bench.test and a root folder serving `body` as the
    association file, in the folder `work` (shared with scripts/bench_memory.py). With `legacy`,
    the file is served only at the legacy root path: `.well-known` answers 404."""
    run_command = run_command or run
    run_command(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                 "-subj", "/CN=bench CA", "-keyout", f"{work}/ca.key", "-out", f"{work}/ca.pem"])
    run_command(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=bench.test",
                 "-keyout", f"{work}/site.key", "-out", f"{work}/site.csr"])
    with open(f"{work}/ext.cnf", "w") as f:
        f.write("subjectAltName=DNS:*.bench.test,DNS:bench.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    run_command(["openssl", "x509", "-req", "-in", f"{work}/site.csr", "-CA", f"{work}/ca.pem", "-CAkey", f"{work}/ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", f"{work}/ext.cnf", "-out", f"{work}/site.pem"])
    os.makedirs(f"{work}/root/.well-known")
    with open(f"{work}/root/apple-app-site-association" if legacy else f"{work}/root/.well-known/apple-app-site-association", "w") as f:
        f.write(body)


def nginx_cpu_seconds():
    """CPU seconds used so far by every nginx process (master and workers), from /proc."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)
            if not fields[0].endswith("(nginx"):
                continue
            rest = fields[1].split()
            total += int(rest[11]) + int(rest[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


# Runs one command and reports its rusage, from a fresh, small interpreter: Linux carries a process's
# peak RSS across exec, so a tool started straight from this script (which grows while it reads
# big JSON reports) would report this script's peak RSS whenever that is the larger.
RUNNER = r"""
import json, os, sys, time
cmd, out_path = json.loads(sys.argv[1]), sys.argv[2]
out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
null = os.open(os.devnull, os.O_WRONLY)
tick = os.sysconf("SC_CLK_TCK")
start = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(out, 1)
    os.dup2(null, 2)
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
# CPU per thread: /proc/PID/task/*/stat sampled every 20 ms while the tool runs (the last sample
# of each thread is kept, so a thread that exits keeps what it had used 20 ms before).
threads = {}
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    head, rest = f.read().rsplit(")", 1)
                fields = rest.split()
                threads[tid] = (head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / tick)
            except (OSError, IndexError, ValueError):
                pass
    except OSError:
        pass
    time.sleep(0.02)
wall = time.monotonic() - start
print(json.dumps([wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status), list(threads.values())]))
"""


def describe_status(status):
    """An exit status as os.waitstatus_to_exitcode gives it, in words."""
    if status < 0:
        try:
            return f"was killed by signal {-status} ({signal.Signals(-status).name})"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


def checked(runs, run, what):
    """Adds a run's figures to runs unless the tool failed: a crash or a run error (aasa-fetch's
    exit status 1 only says that some domains do not associate) is reported on stderr and never
    counted as a fast run."""
    if run[3] not in (0, 1):
        sys.stderr.write(f"warning: one {what} run {describe_status(run[3])}; its figures are left out\n")
        return
    runs.append(run)


def measure(cmd, stdout_path):
    """Runs cmd; returns (wall seconds, cpu seconds, peak RSS KiB, exit status, nginx cpu seconds,
    [(thread name, cpu seconds)])."""
    import json
    server_before = nginx_cpu_seconds()
    report = subprocess.run([sys.executable, "-I", "-S", "-c", RUNNER, json.dumps(cmd), stdout_path],
                            check=True, capture_output=True, text=True).stdout
    server = nginx_cpu_seconds() - server_before
    wall, cpu, rss, status, threads = json.loads(report)
    return wall, cpu, rss, status, server, threads


def thread_summary(threads, n):
    """CPU ms/host of the curl loop threads (each, busiest first) and of every other thread."""
    loops = sorted((cpu for name, cpu in threads if name.startswith("aasa-curl-")), reverse=True)
    other = sum(cpu for name, cpu in threads if not name.startswith("aasa-curl-"))
    per_loop = "+".join(f"{1000 * cpu / n:.2f}" for cpu in loops) or "-"
    return f"loops {per_loop}, other {1000 * other / n:.2f}"


def startup_rss(binary, curl):
    """Peak RSS in MiB of `aasa-fetch --version` and `curl --version` (the fixed part), median of 3."""
    result = []
    for cmd in ([binary, "--version"], [curl, "--version"]):
        runs = [measure(cmd, os.devnull)[2] for _ in range(3)]
        result.append(sorted(runs)[1] / 1024)
    return result


def median_run(runs):
    """The run with the median wall time."""
    if not runs:
        sys.exit("error: every run of a row failed (see the warnings above)")
    return sorted(runs, key=lambda r: r[0])[len(runs) // 2]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_delay_proxy(upstream, delay_ms, spread_ms=0, dead_every=0, dead_from=1):
    """Starts delay_proxy.py on a free loopback port in front of `upstream` (every `dead_every`-th
    connection from the `dead_from`-th on dead, when given); returns (process, port)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "delay_proxy.py"),
                             str(port), str(upstream), str(delay_ms), str(spread_ms), str(dead_every), str(dead_from)],
                            stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        sys.exit("delay_proxy.py did not start")
    return proc, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,20000")
    ap.add_argument("--concurrency", default="16,64,256,1024")
    ap.add_argument("--threads", default="default,1",
                    help="aasa-fetch rows: 'default' (one loop per core) and/or --threads values, e.g. default,1,4")
    ap.add_argument("--binary", default=".build/release/aasa-fetch")
    ap.add_argument("--extra", action="append", default=[], help="extra aasa-fetch argument")
    ap.add_argument("--wrap", default="", help="a command prefix for aasa-fetch, e.g. 'perf record -e cpu-clock -g -o perf.data --'")
    ap.add_argument("--output", default="json", choices=["json", "human"], help="aasa-fetch output mode")
    ap.add_argument("--cdn", action="store_true", help="also run aasa-fetch through a local fake CDN (--route cdn, one HTTP/2 connection)")
    ap.add_argument("--cdn-only", action="store_true", help="with --cdn: run only the CDN route")
    ap.add_argument("--compare", default="", help="with --cdn-only: a second aasa-fetch binary, run in turn with --binary (A/B)")
    ap.add_argument("--skip-curl", action="store_true", help="run aasa-fetch only (profiling)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement; the median run is printed")
    ap.add_argument("--legacy", action="store_true",
                    help="serve the file only at the legacy root path: every host answers 404 at .well-known and "
                         "takes a second request (curl is given both URLs of every host)")
    ap.add_argument("--delay-ms", type=float, default=0,
                    help="reach nginx through scripts/delay_proxy.py, which holds every chunk this long each way: "
                         "a network's latency on loopback (both tools; the proxy's own CPU is one Python thread)")
    ap.add_argument("--delay-spread-ms", type=float, default=0,
                    help="with --delay-ms D: each connection's delay is drawn from D ± this (same seed every run)")
    args = ap.parse_args()
    if args.legacy and args.cdn:
        sys.exit("--legacy: the CDN reads only .well-known")
    sizes = [int(x) for x in args.sizes.split(",")]
    levels = [int(x) for x in args.concurrency.split(",")]
    thread_rows = [x.strip() for x in args.threads.split(",") if x.strip()]
    curl = os.environ.get("BENCH_CURL") or shutil.which("curl")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not curl or not os.path.exists(nginx):
        sys.exit("bench-crawl needs curl and nginx (scripts/install-deps)")

    work = tempfile.mkdtemp(prefix="aasa-bench-")
    nginx_proc = None
    proxy_proc = None
    try:
        make_site(work, legacy=args.legacy)
        port = free_port()
        os.makedirs(f"{work}/logs")
        user = "user root;" if os.getuid() == 0 else ""
        with open(f"{work}/nginx.conf", "w") as f:
            f.write(f"""{user}
daemon off; worker_processes 1; error_log {work}/logs/error.log warn; pid {work}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
  access_log off; default_type application/json;
  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy; fastcgi_temp_path {work}/fcgi;
  uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl backlog=4096; server_name _;
    ssl_certificate {work}/site.pem; ssl_certificate_key {work}/site.key;
    ssl_session_cache shared:SSL:10m;
    root {work}/root;
  }}
  server {{
    listen 127.0.0.1:{port} ssl http2; server_name cdn.bench.test;
    ssl_certificate {work}/site.pem; ssl_certificate_key {work}/site.key;
    http2_max_concurrent_streams 512; keepalive_requests 1000000;
    root {work}/root; default_type application/json;
    location /a/v1/ {{ rewrite ^ /.well-known/apple-app-site-association break; add_header Apple-Origin-Format json; }}
  }}
}}
""")
        nginx_proc = subprocess.Popen([nginx, "-p", work, "-c", f"{work}/nginx.conf"], stderr=subprocess.DEVNULL)
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)

        nginx_port = port
        if args.delay_ms > 0:
            # Both tools reach nginx through the delay proxy (--connect-to names the proxy's port).
            proxy_proc, port = start_delay_proxy(nginx_port, args.delay_ms, args.delay_spread_ms)
            spread = f" ± {args.delay_spread_ms:g} ms per connection" if args.delay_spread_ms > 0 else ""
            print(f"every chunk held {args.delay_ms:g} ms{spread} each way by delay_proxy.py on 127.0.0.1:{port}")
        curl_version = subprocess.run([curl, '--version'], capture_output=True, text=True).stdout.split()[1]
        print(f"nginx on 127.0.0.1:{nginx_port} (1 worker), {os.cpu_count()} cores; file {len(BODY)} bytes; "
              f"curl {curl_version}")
        if curl_version.startswith("7.") and any(c > 300 for c in levels):
            # curl's tool clamps --parallel-max to 300 (its docs then: "300 is the largest supported
            # value"; its progress meter shows "Live 300" in a C = 1,024 run through delay_proxy.py).
            print(f"note: curl {curl_version} runs at most 300 transfers at once, so its rows above C = 300 are C = 300")
        ours_start, curl_start = startup_rss(args.binary, curl)
        print(f"start-up peak RSS: aasa-fetch --version {ours_start:.1f} MiB, curl --version {curl_start:.1f} MiB")
        header = (f"{'N':>6} {'C':>4} | {'tool':<12} {'hosts/s':>9} {'cpu ms/host':>11} {'peak RSS MiB':>12} {'ok':>6} "
                  f"{'nginx ms/host':>13} | {'speed x':>7} {'mem x':>6} | cpu ms/host by thread")
        print(header)
        print("-" * len(header))
        for n in sizes:
            hosts = [f"h{i}.bench.test" for i in range(1, n + 1)]
            domains = f"{work}/domains-{n}.txt"
            with open(domains, "w") as f:
                f.write("\n".join(hosts) + "\n")
            curl_config = f"{work}/curl-{n}.cfg"
            with open(curl_config, "w") as f:
                for h in hosts:
                    f.write(f'url = "https://{h}/.well-known/apple-app-site-association"\noutput = "/dev/null"\n')
                    if args.legacy:
                        f.write(f'url = "https://{h}/apple-app-site-association"\noutput = "/dev/null"\n')
            for c in levels:
                base_cmd = shlex.split(args.wrap) + [args.binary, "--domains", domains, "--app-id", APP, "--cacert", f"{work}/ca.pem",
                            "--connect-to", f"::127.0.0.1:{port}", "--allow-private", "--concurrency", str(c),
                            "--retry-delays", "", "--quiet"] + (["--json"] if args.output == "json" else []) + args.extra
                variants = [(("aasa-fetch" if t == "default" else f"ours -t{t}"),
                             base_cmd + ([] if t == "default" else ["--threads", t])) for t in thread_rows]
                curl_cmd = [curl, "--parallel", "--parallel-max", str(c), "--http1.1", "-s", "-A", "AASA-Bot/1.0.0",
                            "--cacert", f"{work}/ca.pem", "--connect-to", f"::127.0.0.1:{port}",
                            "-w", "%{http_code}\\n", "-K", curl_config]
                def fresh_store():
                    # Every aasa-fetch run records into a new store of its own (a first crawl),
                    # never into the repository's cache/.
                    shutil.rmtree(f"{work}/store", ignore_errors=True)
                    os.environ["AASA_FETCH_CACHE"] = f"{work}/store"

                ours_runs = {label: [] for label, _ in variants}
                ok_ours = {}
                curl_runs = []
                for _ in range(max(1, args.repeat)) if not (args.cdn and args.cdn_only) else []:
                    for label, cmd in variants:
                        fresh_store()
                        checked(ours_runs[label], measure(cmd, f"{work}/ours.json"), label)
                        ok_ours[label] = count_ok(f"{work}/ours.json") if args.output == "json" else count_human(f"{work}/ours.json")
                    if not args.skip_curl:
                        checked(curl_runs, measure(curl_cmd, f"{work}/curl.out"), "curl")
                if args.cdn:
                    cdn_cmd = variants[0][1] + ["--route", "cdn", "--cdn-base", "https://cdn.bench.test/a/v1/"]
                    cdn_runs = []
                    other = [args.compare if part == args.binary else part for part in cdn_cmd]
                    other_runs = []
                    for _ in range(max(1, args.repeat)):
                        fresh_store()
                        checked(cdn_runs, measure(cdn_cmd, f"{work}/cdn.json"), "CDN")
                        if args.compare and args.cdn_only:
                            fresh_store()
                            checked(other_runs, measure(other, f"{work}/cdn.json"), "CDN compare")
                    if other_runs:
                        b = median_run(other_runs)
                        a = median_run(cdn_runs)
                        print(f"{n:>6} {c:>4} | {'CDN compare':<12} {n / b[0]:>9.0f} {1000 * b[1] / n:>11.3f} {b[2] / 1024:>12.1f} "
                              f"| {'':>6} {'':>13} | B/A {a[0] / b[0]:.3f}x hosts/s, CPU {b[1] / a[1]:.3f}x")
                    cdn = median_run(cdn_runs)
                    if os.environ.get("BENCH_DEBUG"):
                        shutil.copy(f"{work}/cdn.json", "/tmp/cdn-debug.json")
                    ok_cdn = count_ok(f"{work}/cdn.json") if args.output == "json" else count_human(f"{work}/cdn.json")
                    origin = median_run(ours_runs[variants[0][0]]) if ours_runs[variants[0][0]] else None
                    ratio = f"CDN/origin {origin[0] / cdn[0]:.2f}x" if origin else f"{'':>16}"
                    print(f"{n:>6} {c:>4} | {'via CDN':<12} {n / cdn[0]:>9.0f} {1000 * cdn[1] / n:>11.3f} {cdn[2] / 1024:>12.1f} {ok_cdn:>6} "
                          f"{1000 * cdn[4] / n:>13.3f} | {ratio} | {thread_summary(cdn[5], n)}")
                    if args.cdn_only:
                        continue
                theirs = None if args.skip_curl else median_run(curl_runs)
                for label, _ in variants:
                    ours = median_run(ours_runs[label])
                    ratios = ""
                    if theirs:
                        ratios = f"{(n / ours[0]) / (n / theirs[0]):>7.2f} {theirs[2] / ours[2]:>6.2f}"
                    print(f"{n:>6} {c:>4} | {label:<12} {n / ours[0]:>9.0f} {1000 * ours[1] / n:>11.3f} {ours[2] / 1024:>12.1f} {ok_ours[label]:>6} "
                          f"{1000 * ours[4] / n:>13.3f} | {ratios:>14} | {thread_summary(ours[5], n)}")
                if theirs:
                    ok_curl = sum(1 for line in open(f"{work}/curl.out") if line.strip() == "200")
                    print(f"{'':>6} {'':>4} | {'curl':<12} {n / theirs[0]:>9.0f} {1000 * theirs[1] / n:>11.3f} {theirs[2] / 1024:>12.1f} {ok_curl:>6} "
                          f"{1000 * theirs[4] / n:>13.3f} | {'':>14} |")
                sys.stdout.flush()
    finally:
        if proxy_proc:
            proxy_proc.terminate()
            proxy_proc.wait(5)
        if nginx_proc:
            nginx_proc.terminate()
            try:
                nginx_proc.wait(5)
            except subprocess.TimeoutExpired:
                nginx_proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def count_human(path):
    with open(path, errors="replace") as f:
        return sum(1 for line in f if line.startswith("✔ "))


def count_ok(path):
    import json
    try:
        with open(path) as f:
            report = json.load(f)
        return sum(1 for d in report.get("domains", []) if d.get("code") == "ok")
    except Exception:
        return -1


if __name__ == "__main__":
    main()
