"""Hidden checks for asyncio-kv-server: a server on 127.0.0.1, port 0, in the project's process.

The judge never runs the project's code in its own process: ``in_project`` starts the
server on an event loop of the project's process, and the clients connect from here.
"""

import asyncio
import contextlib

import kvserver
from cadillac_judge import in_project

LIMIT_S = 3.0


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    async def ask(self, line):
        self.writer.write(line.encode() + b"\n")
        await self.writer.drain()
        return await self.reply()

    async def reply(self):
        data = await asyncio.wait_for(self.reader.readline(), LIMIT_S)
        return data.decode().rstrip("\r\n")

    async def close(self):
        self.writer.close()
        with contextlib.suppress(Exception):  # closing is cleanup, not a check
            await asyncio.wait_for(self.writer.wait_closed(), LIMIT_S)


def _scenario(body, clients=1):
    """Start a fresh server, connect clients, run body(*clients), close everything."""

    server = in_project("asyncio_server", kvserver.start_server, "127.0.0.1", 0)
    port = server.port

    async def main():
        opened = []
        try:
            for _ in range(clients):
                connect = asyncio.open_connection("127.0.0.1", port)
                opened.append(Client(*await asyncio.wait_for(connect, LIMIT_S)))
            await asyncio.wait_for(body(*opened), 4 * LIMIT_S)
        finally:
            for client in opened:
                await client.close()

    try:
        asyncio.run(main())
    finally:
        with contextlib.suppress(Exception):
            server.close()


def test_start_server_returns_a_listening_server():
    async def body(client):
        assert await client.ask("GET missing") == "NIL"

    _scenario(body)


def test_set_get_with_spaces_and_case_insensitive_commands():
    async def body(client):
        assert await client.ask("SET greeting hello big world") == "OK"
        assert await client.ask("get greeting") == "VALUE hello big world"
        assert await client.ask("Set greeting bye") == "OK"
        assert await client.ask("GET greeting") == "VALUE bye"

    _scenario(body)


def test_del_and_keys():
    async def body(client):
        assert await client.ask("KEYS") == "KEYS"
        for key in ("pear", "apple", "fig"):
            assert await client.ask(f"SET {key} 1") == "OK"
        assert await client.ask("KEYS") == "KEYS apple fig pear"
        assert await client.ask("DEL fig") == "DELETED"
        assert await client.ask("DEL fig") == "NIL"
        assert await client.ask("KEYS") == "KEYS apple pear"

    _scenario(body)


def test_incr():
    async def body(client):
        assert await client.ask("INCR hits") == "1"
        assert await client.ask("INCR hits") == "2"
        assert await client.ask("GET hits") == "VALUE 2"
        assert await client.ask("SET name bob") == "OK"
        assert await client.ask("INCR name") == "ERR not an integer"
        assert await client.ask("SET neg -5") == "OK"
        assert await client.ask("INCR neg") == "-4"

    _scenario(body)


def test_errors_keep_the_connection_open():
    async def body(client):
        assert (await client.ask("FLY away")).startswith("ERR ")
        assert (await client.ask("GET")).startswith("ERR ")
        assert (await client.ask("SET onlykey")).startswith("ERR ")
        assert (await client.ask("")).startswith("ERR ")
        assert await client.ask("SET ok yes") == "OK"

    _scenario(body)


def test_pipelined_requests_are_answered_in_order():
    async def body(client):
        client.writer.write(b"SET a 1\nINCR a\nGET a\nGET b\n")
        await client.writer.drain()
        replies = [await client.reply() for _ in range(4)]
        assert replies == ["OK", "2", "VALUE 2", "NIL"]

    _scenario(body)


def test_clients_share_one_store_and_quit_closes():
    async def body(first, second):
        assert await first.ask("SET shared value") == "OK"
        assert await second.ask("GET shared") == "VALUE value"
        assert await first.ask("QUIT") == "BYE"
        rest = await asyncio.wait_for(first.reader.read(), LIMIT_S)
        assert rest == b""
        assert await second.ask("DEL shared") == "DELETED"

    _scenario(body, clients=2)


def test_each_server_has_its_own_store():
    async def fill(client):
        assert await client.ask("SET only here") == "OK"

    async def check(client):
        assert await client.ask("GET only") == "NIL"

    _scenario(fill)
    _scenario(check)
