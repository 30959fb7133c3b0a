"""What the tests' TLS peers (apns_peer.py, fcm_peer.py) share: serving an ASGI app with Hypercorn on a free loopback
port, announced on stdout as `port N`, until the test process that started the peer is gone."""

import asyncio
import os
import socket

from hypercorn.asyncio import serve
from hypercorn.config import Config


def listening_socket():
    """A socket listening on a free loopback port, and the port (a peer that names its own URL needs it first)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock, sock.getsockname()[1]


def serve_until_orphaned(app, sock, certificate, key, alpn=None):
    port = sock.getsockname()[1]
    config = Config()
    config.certfile, config.keyfile = certificate, key
    if alpn is not None:
        config.alpn_protocols = alpn
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.errorlog = None
    print(f"port {port}", flush=True)
    parent = os.getppid()

    async def main():
        # A test process that dies never stops its peer: the peer stops when it is orphaned.
        server = asyncio.ensure_future(serve(app, config))
        while not server.done() and os.getppid() == parent:
            await asyncio.sleep(0.5)
        server.cancel()

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        pass
