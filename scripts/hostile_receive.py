#!/usr/bin/env python3
"""Honest dd-trace-go uploads beside hostile clients, against a running `agentprof receive`.

    scripts/hostile_receive.py --url http://127.0.0.1:8126/profiling/v1/input --pid PID \
        --out OUT_DIR --seconds 30 --honest 4 --hostile 16 --kinds all

Each honest sender posts the recorded dd-trace-go upload (tests/fixtures) back to back, each
with a tag of its own; the hostile ones send, by kind:

  bomb     200 gzip parts of a few KiB, each a valid profile of 8 MiB decompressed
  liar     the same, each gzip trailer stating 1 KiB
  event    an event.json of 31 MB of `0,0,0,...`
  slow     headers claiming a 30 MB body, then 100 bytes, then nothing until closed
  lying    Content-Length of 20 MB, 1 MB sent, then the connection closed
  unknown  a profile beside a part named `passwd` that no event lists
  idle     a socket that sends nothing, reopened when closed

Prints one JSON line: honest answers by status, acknowledged uploads found stored in
OUT_DIR/uploads.jsonl, hostile answers by status, the receiver's VmHWM. Python's standard
library only.
"""

import argparse
import gzip
import http.client
import json
import os
import socket
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "shared", "fixtures", "dd-trace-go-upload")
BOUNDARY = "hostileboundary0123456789"


def multipart(parts):
    out = bytearray()
    for name, filename, data in parts:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disp}\r\nContent-Type: application/octet-stream\r\n\r\n".encode()
        out += data + b"\r\n"
    out += f"--{BOUNDARY}--\r\n".encode()
    return bytes(out)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def event(names, tags, extra=None):
    e = {"start": "2026-12-01T10:00:00Z", "end": "2026-12-01T10:01:00Z", "attachments": names,
         "tags_profiler": tags, "family": "go", "version": "4"}
    e.update(extra or {})
    return json.dumps(e, separators=(",", ":")).encode()


def honest_body(fixtures, tag):
    names = sorted(fixtures)
    parts = [(n, n, fixtures[n]) for n in names]
    parts.append(("event", "event.json", event(names, tag)))
    return multipart(parts)


def inflating_part(lie):
    # A profile whose string table holds one string of 8 MiB: string_table is field 6.
    s = b"x" * (8 << 20)
    raw = b"\x32\x00" + b"\x32" + varint(len(s)) + s
    gz = bytearray(gzip.compress(raw, 9))
    if lie:
        gz[-4:] = (1024).to_bytes(4, "little")
    return bytes(gz)


def hostile_bodies():
    bodies = {}
    for kind, lie in (("bomb", False), ("liar", True)):
        part = inflating_part(lie)
        names = [f"p{i}.pprof" for i in range(200)]
        parts = [(n, n, part) for n in names]
        parts.append(("event", "event.json", event(names, "service:hostile")))
        bodies[kind] = multipart(parts)
    cpu = open(os.path.join(FIXTURES, "cpu.pprof"), "rb").read()
    bodies["event"] = multipart([("cpu.pprof", "cpu.pprof", cpu), ("event", "event.json",
                                 event(["cpu.pprof"], "service:hostile", {"endpoint_counts": [0] * 15_500_000}))])
    bodies["unknown"] = multipart([("cpu.pprof", "cpu.pprof", cpu), ("file", "passwd", b"root:x:0:0\n" * 100),
                                   ("event", "event.json", event(["cpu.pprof"], "service:hostile-unknown"))])
    return bodies


def post(host, port, path, body, timeout=60, source=None):
    c = http.client.HTTPConnection(host, port, timeout=timeout,
                                   source_address=(source, 0) if source else None)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
        r = c.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException) as e:
        return type(e).__name__
    finally:
        c.close()


def raw_hostile(kind, host, port, path, stop, source=None):
    """slow, lying and idle: raw sockets."""
    while not stop.is_set():
        try:
            s = socket.create_connection((host, port), timeout=5,
                                         source_address=(source, 0) if source else None)
        except OSError:
            time.sleep(0.05)
            continue
        try:
            if kind == "idle":
                s.settimeout(None)
                s.recv(1)  # until the server closes it
            else:
                length = 30_000_000 if kind == "slow" else 20_000_000
                s.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: multipart/form-data; "
                          f"boundary={BOUNDARY}\r\nContent-Length: {length}\r\n\r\n".encode())
                # The body begins as an upload does (a body that does not is refused at once).
                opening = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"cpu.pprof\"; "
                           f"filename=\"cpu.pprof\"\r\n\r\n").encode()
                if kind == "slow":
                    s.sendall(opening + b"\0" * 20)
                    s.settimeout(None)
                    s.recv(1)
                else:
                    s.sendall(opening + b"\0" * (1 << 20))
        except OSError:
            pass
        finally:
            s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--honest", type=int, default=4)
    ap.add_argument("--hostile", type=int, default=16)
    ap.add_argument("--kinds", default="all")
    ap.add_argument("--idle-sockets", type=int, default=0, help="this many idle sockets held open besides")
    ap.add_argument("--hostile-from", default=None,
                    help="the hostile clients' source address (127.0.0.N: another peer than the honest ones)")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    host, port, path = u.hostname, u.port, u.path
    kinds = ["bomb", "liar", "event", "slow", "lying", "unknown", "idle"] if a.kinds == "all" else a.kinds.split(",")
    fixtures = {n: open(os.path.join(FIXTURES, n), "rb").read() for n in os.listdir(FIXTURES)}
    bodies = hostile_bodies()
    stop = threading.Event()
    lock = threading.Lock()
    honest, hostile, tags = {}, {}, []

    def honest_sender(i):
        n = 0
        while not stop.is_set():
            tag = f"service:honest,run:{i}-{n}"
            code = post(host, port, path, honest_body(fixtures, tag))
            with lock:
                honest[code] = honest.get(code, 0) + 1
                if code == 202:
                    tags.append(f"{i}-{n}")
            n += 1

    def hostile_sender(kind):
        while not stop.is_set():
            if kind in bodies:
                code = post(host, port, path, bodies[kind], source=a.hostile_from)
                with lock:
                    hostile[f"{kind}:{code}"] = hostile.get(f"{kind}:{code}", 0) + 1
            else:
                raw_hostile(kind, host, port, path, stop, a.hostile_from)

    held = []
    for _ in range(a.idle_sockets):
        try:
            held.append(socket.create_connection(
                (host, port), timeout=5, source_address=(a.hostile_from, 0) if a.hostile_from else None))
        except OSError:
            break
    threads = [threading.Thread(target=hostile_sender, args=(kinds[i % len(kinds)],), daemon=True)
               for i in range(a.hostile)]
    threads += [threading.Thread(target=honest_sender, args=(i,), daemon=True) for i in range(a.honest)]
    for t in threads:
        t.start()
    time.sleep(a.seconds)
    stop.set()
    for t in threads[a.hostile:]:
        t.join(timeout=90)
    # Every acknowledged upload stored: wait (at most 60 s) for its line.
    want = set(tags)
    deadline = time.time() + 60
    stored = set()
    while time.time() < deadline:
        stored = set()
        try:
            with open(os.path.join(a.out, "uploads.jsonl")) as f:
                for line in f:
                    for t in json.loads(line).get("tags", []):
                        if t.startswith("run:"):
                            stored.add(t[4:])
        except OSError:
            pass
        if want <= stored:
            break
        time.sleep(0.2)
    hwm = 0
    with open(f"/proc/{a.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    sent = sum(honest.values())
    print(json.dumps({
        "seconds": a.seconds, "honest_senders": a.honest, "hostile_senders": a.hostile, "kinds": kinds,
        "hostile_from": a.hostile_from or "the honest senders' address",
        "idle_sockets": len(held), "honest": honest, "honest_sent": sent,
        "acknowledged_share": round(honest.get(202, 0) / sent, 4) if sent else None,
        "acknowledged_stored": len(want & stored), "acknowledged": len(want),
        "hostile": hostile, "vm_hwm_mib": hwm // 1024,
    }))


if __name__ == "__main__":
    main()
