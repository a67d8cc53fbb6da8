"""The real node's only Service route: the ``kubernetes`` Service's ClusterIP to the API server on loopback.

Pods find the API server at ``KUBERNETES_SERVICE_HOST`` (the ``default/kubernetes`` Service's ClusterIP,
10.96.0.1) port 443, which nothing here routes. The sandbox puts that one address on its own bridge and
runs this relay on it: TCP to 10.96.0.1:443 becomes TCP to 127.0.0.1:<API server port>. Every other
address of the Service CIDR is unreachable on this machine (a route the real node adds), so a dial to any
other ClusterIP fails at once instead of leaving.

Usage: ``python -m sundial_sandbox.serviceproxy LISTEN_HOST:PORT TARGET_HOST:PORT``
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        writer.close()


async def _relay(target: tuple[str, int], client_reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
    try:
        upstream_reader, upstream = await asyncio.open_connection(*target)
    except OSError:
        client.close()
        return
    await asyncio.gather(_pipe(client_reader, upstream), _pipe(upstream_reader, client))


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


async def _serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    server = await asyncio.start_server(lambda r, w: _relay(target, r, w), *listen)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    asyncio.run(_serve(_address(argv[0]), _address(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
