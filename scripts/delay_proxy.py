#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that holds every chunk it forwards, in both directions, for a fixed
delay: a network's latency on loopback, where `tc netem` is not available.

    delay_proxy.py LISTEN_PORT UPSTREAM_PORT DELAY_MS

Prints "ready" on stdout once it listens. Each chunk leaves DELAY_MS after it arrived, in order,
so a round trip through it costs twice the delay. It runs until it is terminated. Used by
bench_memory.py --delay-ms.
"""
import asyncio
import sys


async def pump(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                break
            writer.write(data)
            await writer.drain()
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            pass

    sender = asyncio.create_task(send())
    try:
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time() + delay, data or None))
            if not data:
                break
        await sender
    except (OSError, asyncio.IncompleteReadError):
        sender.cancel()
    finally:
        writer.close()


async def main():
    listen, upstream, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000

    async def accept(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay),
                             return_exceptions=True)

    server = await asyncio.start_server(accept, "127.0.0.1", listen, backlog=4096)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
