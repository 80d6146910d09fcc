#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that holds every chunk it forwards, in both directions, for a fixed
delay: a network's latency on loopback, where `tc netem` is not available.

    delay_proxy.py LISTEN_PORT UPSTREAM_PORT DELAY_MS [SPREAD_MS [DEAD_EVERY [DEAD_FROM]]]

Prints "ready" on stdout once it listens. Each chunk, the end of a stream (a half-close) and a
close leave DELAY_MS after they arrived, in order, so a round trip through it costs twice the
delay. With SPREAD_MS each connection gets its own delay, drawn uniformly from DELAY_MS ± SPREAD_MS
(at least 0; the same seed every run), as hosts on a real network sit at different distances: the
events of concurrent connections then arrive spread out instead of together. With DEAD_EVERY K,
every K-th connection it accepts (from the DEAD_FROM-th on, 1 by default) is dead: it is never
forwarded and nothing comes back, as from a host that accepts connections and never answers, until
the client gives up. No flow control: meant for small bodies, as in the benchmarks. It runs until
it is terminated. Used by bench_crawl.py and bench_memory.py --delay-ms.
"""
import asyncio
import random
import sys


class Dead(asyncio.Protocol):
    """A connection that swallows what it receives and never answers."""

    def data_received(self, data):
        pass

    def eof_received(self):
        return True  # stay open until the client closes


class Side(asyncio.Protocol):
    """One connection of a pair; what it receives goes to `peer`'s transport `delay` seconds later."""

    def __init__(self, delay, peer=None):
        self.delay = delay
        self.peer = peer
        self.transport = None
        self.pending = []  # (due, kind, data) that arrived before the upstream connection was made

    def connection_made(self, transport):
        self.transport = transport

    def forward(self, kind, data=b""):
        loop = asyncio.get_running_loop()
        due = loop.time() + self.delay
        if self.peer is None or self.peer.transport is None:
            self.pending.append((due, kind, data))
        else:
            loop.call_at(due, self.peer.act, kind, data)

    def act(self, kind, data):
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if kind == "data":
            transport.write(data)
        elif kind == "eof":
            if transport.can_write_eof():
                transport.write_eof()
        else:
            transport.close()

    def data_received(self, data):
        self.forward("data", data)

    def eof_received(self):
        self.forward("eof")
        return True  # keep the other direction open until the peer ends it too

    def connection_lost(self, exc):
        self.forward("close")


async def main():
    listen, upstream, base = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000
    spread = float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else 0.0
    dead_every = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    dead_from = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    accepted = 0
    draw = random.Random(13)
    loop = asyncio.get_running_loop()
    connecting = set()

    def client_side():
        nonlocal accepted
        accepted += 1
        if dead_every > 0 and accepted >= dead_from and accepted % dead_every == 0:
            return Dead()
        delay = max(0.0, base + draw.uniform(-spread, spread)) if spread > 0 else base
        client = Side(delay)

        async def connect():
            try:
                _, server = await loop.create_connection(lambda: Side(delay, client), "127.0.0.1", upstream)
            except OSError:
                if client.transport:
                    client.transport.close()
                return
            client.peer = server
            for due, kind, data in client.pending:
                loop.call_at(due, server.act, kind, data)
            client.pending = []

        task = loop.create_task(connect())
        connecting.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(connecting.discard)
        return client

    server = await loop.create_server(client_side, "127.0.0.1", listen, backlog=4096)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
