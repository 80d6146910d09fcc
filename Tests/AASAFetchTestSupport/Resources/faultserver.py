#!/usr/bin/env python3
"""A scriptable TLS server for aasa-fetch transport tests (Python 3 standard library only).

Usage: faultserver.py --cert PEM --key PEM --script JSON|@FILE --log FILE [--port-file FILE] [--lifetime S]

Listens on 127.0.0.1 at a free port, prints the port on stdout (and writes it to --port-file),
and exits by itself after --lifetime seconds (default 120) or on SIGTERM.

The JSON script chooses a behaviour per request path, else per SNI host name, else "default":
  {"default": B, "hosts": {"name": B}, "paths": {"/path": B}}
A behaviour B is an object with "action":
  never-answer         accept TCP and never complete the TLS handshake (for "default" or "hosts")
                       or never answer the request (for "paths")
  stall-after-headers  send status and headers with Content-Length ("contentLength", default 1000),
                       then nothing
  reset-mid-body       send headers with Content-Length ("contentLength", default 1000), then
                       "partialBytes" (default 100) bytes, then reset the connection (SO_LINGER 0)
  respond              "status" (200), "headers" ({name: value} or [[name, value]]), "body" (text)
                       or "bodyBase64", "repeat" (repeat the body N times), "gzip" (gzip-encode
                       and send Content-Encoding: gzip; "afterGzip": text sent after the gzip
                       stream, inside the body), "chunked" (chunked encoding, no Content-Length)
  slow                 like respond, but the body is dripped "dripBytes" (default 1) at a time
                       every "dripInterval" seconds (default 0.5)
  barrier              hold the request until "count" requests with a barrier behaviour have arrived
                       (at most "wait" seconds, default 10), then respond like "respond"; when the
                       wait runs out, answer 503 "barrier not reached" instead. When every request
                       gets 200, the first was still held when the last arrived: the client really
                       had "count" transfers in flight at once
  sequence             "steps": a list of behaviours; the Nth request chosen by the same path or
                       host key gets the Nth one (the last one repeats), e.g. 500 then 200
  endless-trailers     a chunked 200 with "body", then trailer lines without end (at most
                       "trailerBytes", default 512 MiB, or until the client goes away)
  big-header           like respond, plus one header line "X-Big" of "headerBytes" bytes
  raw                  send the body bytes as they are, no HTTP framing (HTTP/0.9, garbage), close
  hold-until-file      hold the request until the file "releaseFile" exists (at most "wait"
                       seconds, default 30), then respond like "respond"
Any behaviour may have "delay": seconds to wait after reading the request, before answering.
Each request is logged to --log as one JSON object a line: path, host, userAgent, sni, headers,
method and body (a request body as announced by Content-Length, at most 1 MiB, as UTF-8 text),
and inFlight: the requests read and not yet being answered when it arrived, itself included (a
"delay" counts, a barrier's wait does not), so the largest inFlight is the most requests the
client had waiting on the server at once.
"""

import argparse
import base64
import gzip
import json
import os
import signal
import socket
import ssl
import struct
import sys
import threading
import time

HOLD_SECONDS = 60
LOG_LOCK = threading.Lock()
SNI_BY_SOCKET = {}
COUNTS = {}
COUNTS_LOCK = threading.Lock()
BARRIER = threading.Condition()
BARRIER_OPEN = [0]
IN_FLIGHT = [0]


def resolve_sequence(key, behaviour):
    """For a "sequence" behaviour, the step for this request (counted per key)."""
    if behaviour.get("action") != "sequence":
        return behaviour
    steps = behaviour.get("steps") or [{"action": "respond", "status": 500}]
    with COUNTS_LOCK:
        count = COUNTS.get(key, 0)
        COUNTS[key] = count + 1
    return steps[min(count, len(steps) - 1)]


def log(path, record):
    with LOG_LOCK:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()


def hold(seconds=HOLD_SECONDS):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.1)


def body_of(behaviour):
    if "bodyBase64" in behaviour:
        body = base64.b64decode(behaviour["bodyBase64"])
    else:
        body = behaviour.get("body", "").encode("utf-8")
    return body * int(behaviour.get("repeat", 1))


def header_lines(behaviour):
    headers = behaviour.get("headers", {})
    if isinstance(headers, dict):
        headers = list(headers.items())
    return [(str(name), str(value)) for name, value in headers]


def head(status, headers):
    reasons = {200: "OK", 301: "Moved Permanently", 302: "Found", 304: "Not Modified",
               307: "Temporary Redirect", 308: "Permanent Redirect", 403: "Forbidden",
               404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 429: "Too Many Requests",
               500: "Internal Server Error", 503: "Service Unavailable"}
    lines = ["HTTP/1.1 %d %s" % (status, reasons.get(status, "Status"))]
    lines += ["%s: %s" % (name, value) for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
        if len(data) > 65536:
            return None
    head_bytes, rest = data.split(b"\r\n\r\n", 1)
    text = head_bytes.decode("latin-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    # A request body (a webhook's POST): read as announced, at most 1 MiB.
    try:
        length = min(int(headers.get("content-length", "0")), 1 << 20)
    except ValueError:
        length = 0
    body = rest
    while len(body) < length:
        chunk = conn.recv(min(65536, length - len(body)))
        if not chunk:
            break
        body += chunk
    return {"method": parts[0] if parts else "", "path": parts[1] if len(parts) > 1 else "",
            "headers": headers, "body": body[:length].decode("utf-8", "replace")}


def reset(conn):
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    conn.close()


def wait_at_barrier(behaviour):
    """True when "count" barrier requests have arrived within "wait" seconds."""
    count = int(behaviour.get("count", 2))
    deadline = time.monotonic() + float(behaviour.get("wait", 10))
    with BARRIER:
        BARRIER_OPEN[0] += 1
        BARRIER.notify_all()
        while BARRIER_OPEN[0] < count:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            BARRIER.wait(min(left, 0.1))
        return True


def perform(conn, behaviour):
    action = behaviour.get("action", "respond")
    status = int(behaviour.get("status", 200))
    if action == "barrier" and not wait_at_barrier(behaviour):
        behaviour = {"action": "respond", "status": 503, "body": "barrier not reached"}
        status = 503
    if action == "never-answer":
        hold()
        return
    if action == "hold-until-file":
        deadline = time.monotonic() + float(behaviour.get("wait", 30))
        while not os.path.exists(behaviour.get("releaseFile", "")) and time.monotonic() < deadline:
            time.sleep(0.02)
    if action == "raw":
        conn.sendall(body_of(behaviour))
        time.sleep(0.1)
        conn.close()
        return
    if action == "endless-trailers":
        body = body_of(behaviour)
        conn.sendall(head(status, header_lines(behaviour) + [("Transfer-Encoding", "chunked"), ("Trailer", "X-T")]))
        conn.sendall(b"%x\r\n" % len(body) + body + b"\r\n0\r\n")
        line = b"X-T: " + b"t" * 1000 + b"\r\n"
        budget = int(behaviour.get("trailerBytes", 512 * 1024 * 1024))
        sent = 0
        while sent < budget:
            conn.sendall(line * 64)
            sent += len(line) * 64
        conn.sendall(b"\r\n")
        conn.close()
        return
    if action == "stall-after-headers":
        length = int(behaviour.get("contentLength", 1000))
        conn.sendall(head(status, header_lines(behaviour) + [("Content-Length", str(length))]))
        hold()
        return
    if action == "reset-mid-body":
        length = int(behaviour.get("contentLength", 1000))
        partial = int(behaviour.get("partialBytes", 100))
        conn.sendall(head(status, header_lines(behaviour) + [("Content-Length", str(length))]))
        conn.sendall(b"x" * partial)
        time.sleep(0.2)
        reset(conn)
        return
    body = body_of(behaviour)
    headers = header_lines(behaviour)
    if action == "big-header":
        headers.append(("X-Big", "b" * int(behaviour.get("headerBytes", 1024 * 1024))))
    if behaviour.get("gzip"):
        body = gzip.compress(body) + behaviour.get("afterGzip", "").encode()
        headers.append(("Content-Encoding", "gzip"))
    chunked = bool(behaviour.get("chunked"))
    if chunked:
        headers.append(("Transfer-Encoding", "chunked"))
    else:
        headers.append(("Content-Length", str(len(body))))
    headers.append(("Connection", "close"))
    conn.sendall(head(status, headers))
    if action == "slow":
        step = max(1, int(behaviour.get("dripBytes", 1)))
        interval = float(behaviour.get("dripInterval", 0.5))
        pieces = [body[i:i + step] for i in range(0, len(body), step)]
    else:
        pieces = [body[i:i + 16384] for i in range(0, len(body), 16384)]
        interval = 0
    for piece in pieces:
        if chunked:
            conn.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        else:
            conn.sendall(piece)
        if interval:
            time.sleep(interval)
    if chunked:
        conn.sendall(b"0\r\n\r\n")
    try:
        conn.unwrap()
    except (OSError, ValueError, ssl.SSLError):
        pass
    conn.close()


def serve(raw, context, script, log_path):
    default = script.get("default", {"action": "respond", "status": 404, "body": "not found"})
    hosts = script.get("hosts", {})
    paths = script.get("paths", {})
    try:
        raw.settimeout(HOLD_SECONDS)
        if default.get("action") == "never-answer" and not hosts:
            log(log_path, {"event": "connection", "path": None, "host": None, "userAgent": None,
                           "sni": None, "headers": {}})
            hold()
            raw.close()
            return
        conn = context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        conn.do_handshake()
        sni = SNI_BY_SOCKET.pop(id(conn), None)
        request = read_request(conn)
        if request is None:
            conn.close()
            return
        with COUNTS_LOCK:
            IN_FLIGHT[0] += 1
            in_flight = IN_FLIGHT[0]
        log(log_path, {"event": "request", "path": request["path"],
                       "host": request["headers"].get("host"),
                       "userAgent": request["headers"].get("user-agent"),
                       "sni": sni, "headers": request["headers"],
                       "method": request["method"], "body": request["body"], "inFlight": in_flight})
        path_only = request["path"].split("?", 1)[0]
        if request["path"] in paths:
            key = "path:" + request["path"]
        elif path_only in paths:
            key = "path:" + path_only
        elif (sni or "") in hosts:
            key = "host:" + (sni or "")
        else:
            key = "default"
        behaviour = paths.get(request["path"]) or paths.get(path_only) or hosts.get(sni or "") or default
        try:
            if behaviour.get("delay"):
                time.sleep(float(behaviour["delay"]))
        finally:
            # Before the answer starts: the client cannot have seen this one finish yet.
            with COUNTS_LOCK:
                IN_FLIGHT[0] -= 1
        perform(conn, resolve_sequence(key, behaviour))
    except (OSError, ssl.SSLError, ValueError):
        try:
            raw.close()
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--script", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port-file")
    parser.add_argument("--lifetime", type=float, default=120)
    args = parser.parse_args()
    # "@FILE": the script is in FILE (argv holds at most 128 KiB per argument).
    if args.script.startswith("@"):
        with open(args.script[1:], encoding="utf-8") as source:
            script = json.load(source)
    else:
        script = json.loads(args.script)

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    # The parent (a test runner) may have blocked SIGTERM; the mask is inherited across exec.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    timer = threading.Timer(args.lifetime, lambda: os._exit(0))
    timer.daemon = True
    timer.start()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["http/1.1"])
    hosts = script.get("hosts", {})

    def on_sni(conn, server_name, _context):
        SNI_BY_SOCKET[id(conn)] = server_name
        if hosts.get(server_name or "", {}).get("action") == "never-answer":
            log(args.log, {"event": "handshake-held", "path": None, "host": None, "userAgent": None,
                           "sni": server_name, "headers": {}})
            hold()
            return ssl.ALERT_DESCRIPTION_HANDSHAKE_FAILURE
        return None

    context.sni_callback = on_sni

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    port = listener.getsockname()[1]
    open(args.log, "a").close()
    if args.port_file:
        temporary = args.port_file + ".tmp"
        with open(temporary, "w") as handle:
            handle.write(str(port))
        os.rename(temporary, args.port_file)
    print(port, flush=True)

    # Wake up regularly: a SIGTERM delivered to another thread is only acted on by the main thread.
    listener.settimeout(0.2)
    while True:
        try:
            raw, _ = listener.accept()
        except socket.timeout:
            continue
        raw.setblocking(True)
        thread = threading.Thread(target=serve, args=(raw, context, script, args.log), daemon=True)
        thread.start()


if __name__ == "__main__":
    sys.exit(main())
