"""The listening socket `dory serve` binds: connections accepted on it send small answers at once."""

from __future__ import annotations

import asyncio
import socket

from dory.surfaces.http.server import bind


def test_accepted_connections_have_nagle_off() -> None:
    """Found by the load benchmark: with Nagle's algorithm on, a keep-alive client waited ~40 ms
    (the delayed ACK) for most answers. asyncio turns it off only on sockets that say they are TCP."""

    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            own = writer.get_extra_info("socket")
            accepted.set_result(own.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(connected, sock=bind("127.0.0.1", 0))
        host, port = server.sockets[0].getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        try:
            return await accepted
        finally:
            writer.close()
            server.close()
            await server.wait_closed()

    assert asyncio.run(accept_one()) != 0
