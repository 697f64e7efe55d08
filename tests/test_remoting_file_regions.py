"""Answers whose body stays in files (``FileRegionResponse``, a pull's records): a front process reads the ranges
from its own mappings of the files and writes them, and the client gets the bytes it gets without fronts, over
TLS too, while a file is deleted, when it was closed before the front had it, and when the client stops reading
(issue 30)."""
from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.cluster import wait_until
from support.file_regions import REGION, KnownFile, expected_body, mapped_by, region_processors
from support.tls import make_key_pair

from rocketmq_py import codec
from rocketmq_py.remoting import RemotingClient, RemotingClientConfig, RemotingServer, RemotingServerConfig
from rocketmq_py.remoting import create_request
from rocketmq_py.remoting.front_pool import FrontTransport
from rocketmq_py.remoting.tls import TlsConfig, TlsMode

MEGABYTE = 1024 * 1024


@pytest.fixture(name="files")
def files_fixture(tmp_path: Path) -> list[KnownFile]:
    return [KnownFile(tmp_path / f"file{number}", MEGABYTE, number) for number in range(3)]


async def started(files: list[KnownFile], **config: object) -> RemotingServer:
    server = RemotingServer(processors=region_processors(files),
                            config=RemotingServerConfig(**config))  # type: ignore[arg-type]
    await server.start()
    return server


@pytest.fixture(name="server")
async def server_fixture(files: list[KnownFile]) -> AsyncIterator[RemotingServer]:
    server = await started(files, worker_processes=1)
    yield server
    await server.shutdown()


async def region(client: RemotingClient, server: RemotingServer, ranges: str) -> bytes | None:
    response = await client.invoke(server.address, create_request(REGION, {"ranges": ranges}), 10_000)
    assert response.code == 0 and response.remark == "region"
    assert (response.ext_fields or {})["n"] == str(len(ranges.split(",")))
    return response.body


RANGES = "0:0:100,0:100:50,1:5:3000,2:1000:1,0:1048000:576"


@pytest.mark.parametrize("workers", [0, 1])
async def test_the_client_gets_the_ranges_bytes_with_and_without_a_front(files, workers) -> None:
    server = await started(files, worker_processes=workers)
    try:
        async with RemotingClient() as client:
            for _ in range(3):
                assert await region(client, server, RANGES) == expected_body(files, RANGES)
        if workers:
            [front] = server.front_pids
            # The front read them from its own mappings, each file passed to it once.
            assert all(mapped_by(front, file.path) for file in files)
            assert [file.opened for file in files] == [1, 1, 1]
        else:
            assert [file.opened for file in files] == [0, 0, 0]
    finally:
        await server.shutdown()


async def test_a_tls_client_gets_the_same_bytes(files, tmp_path: Path) -> None:
    pair = make_key_pair(tmp_path, "server")
    tls = TlsConfig(server_mode=TlsMode.ENFORCING, server_cert_path=pair.cert, server_key_path=pair.key)
    server = await started(files, worker_processes=1, tls=tls)
    try:
        async with RemotingClient(config=RemotingClientConfig(use_tls=True, tls=TlsConfig())) as client:
            assert await region(client, server, RANGES) == expected_body(files, RANGES)
        assert files[0].opened == 1
    finally:
        await server.shutdown()


async def test_a_deleted_file_is_read_until_the_server_closes_it_then_the_front_lets_it_go(
        server: RemotingServer, files: list[KnownFile]) -> None:
    [front] = server.front_pids
    ranges = "0:10:20000,1:0:10"
    async with RemotingClient() as client:
        assert await region(client, server, ranges) == expected_body(files, ranges)
        # Deleted on disk while the server still holds it (a reader of the store's last moments): the front reads
        # it from the mapping it holds.
        os.unlink(files[0].path)
        assert await region(client, server, ranges) == expected_body(files, ranges)
        assert mapped_by(front, files[0].path)
        # Closed by the server (the clean service's destroy): the front closes its mapping, so the disk space is
        # freed, and keeps the other file.
        files[0].close()
        await wait_until(lambda: not mapped_by(front, files[0].path), timeout=30)
        assert mapped_by(front, files[1].path)
        # A region that names the closed file goes as a copy (a pull's region holds the file's mapping for it).
        assert await region(client, server, ranges) == expected_body(files, ranges)
        assert files[0].opened == 1


async def test_a_file_closed_before_the_front_had_it_goes_as_a_copy(
        server: RemotingServer, files: list[KnownFile]) -> None:
    [front] = server.front_pids
    files[2].close()
    ranges = "2:0:5000,1:7:7"
    async with RemotingClient() as client:
        assert await region(client, server, ranges) == expected_body(files, ranges)
    assert files[2].opened == 0 and not mapped_by(front, files[2].path)


def receive_frames(sock: socket.socket, count: int) -> list[bytes]:
    stream = sock.makefile("rb")
    frames = []
    for _ in range(count):
        head = stream.read(4)
        frames.append(head + stream.read(int.from_bytes(head, "big")))
    return frames


async def test_a_client_that_does_not_read_its_region_answers_is_throttled_then_served(
        files: list[KnownFile]) -> None:
    server = await started(files, worker_processes=1, write_buffer_high_water_mark=MEGABYTE,
                           write_buffer_low_water_mark=MEGABYTE // 2)
    loop = asyncio.get_running_loop()
    # A plain blocking socket, read by nobody until the end (a StreamReader would read ahead into memory).
    sock = socket.create_connection(("127.0.0.1", server.port))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        ranges = [f"{number % 3}:0:{MEGABYTE - number}" for number in range(40)]
        requests = [create_request(REGION, {"ranges": text}) for text in ranges]
        sending = loop.run_in_executor(None, sock.sendall, b"".join(map(codec.encode_command, requests)))
        await wait_until(lambda: bool(server.connections), timeout=10)
        transport = server.connections[0]._transport
        assert isinstance(transport, FrontTransport)
        # The front's buffer for this client passes its high watermark: the server's connection stops writing
        # and reading, as for any answer.
        await wait_until(lambda: transport.client_blocked, timeout=10)
        assert server.connections[0].writing_paused and not transport.is_reading()
        frames = await loop.run_in_executor(None, receive_frames, sock, len(requests))
        await asyncio.wait_for(sending, 10)
        by_opaque = {response.opaque: response for response in map(codec.decode_frame, (f[4:] for f in frames))}
        for request, text in zip(requests, ranges):
            assert by_opaque[request.opaque].body == expected_body(files, text)
    finally:
        sock.close()
        await server.shutdown()
