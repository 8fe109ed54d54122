"""Helpers of the async tests: a real HTTP/1.1 model server on loopback (``asyncio``
streams), async models that talk to it with ``httpx.AsyncClient``, and a ticker that
shows an event loop stays free.

The server answers each ``POST /complete`` with what a :class:`ScriptedModel` replies to
the posted ``ModelRequest`` (JSON), and ``POST /stream`` with the same reply as chunked
NDJSON: one ``{"text": piece}`` line per word, then ``{"response": …}``. A role listed in
``hang`` is never answered (until the client goes away); ``before_reply`` is awaited
before every answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpx
import msgspec

from actors import ScriptedModel
from actors.models.protocol import ModelRequest, ModelResponse, StreamItem
from eventlog.blocks import TextBlock


class ModelServer:
    """A loopback HTTP server answering model requests with ``script``."""

    def __init__(
        self,
        script: ScriptedModel,
        *,
        hang: frozenset[str] = frozenset(),
        before_reply: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.script = script
        self.hang = hang
        self.before_reply = before_reply
        self.url = ""
        #: Requests answered, by path.
        self.answered: dict[str, int] = {}
        #: Set once a request of a ``hang`` role arrived.
        self.hanging = threading.Event()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> ModelServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for handler in self._handlers:  # keep-alive connections wait for a next request
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def __aenter__(self) -> ModelServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._handlers.add(me)
        try:
            await self._answer(reader, writer)
        except asyncio.CancelledError:
            return  # the server is closing: end quietly (a cancelled handler is logged)
        finally:
            self._handlers.discard(me)
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer the requests of one connection, one after another (keep-alive)."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode().split("\r\n")
            path = lines[0].split(" ")[1]
            headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
            length = int({k.lower(): v for k, v in headers.items()}["content-length"])
            request = msgspec.json.decode(await reader.readexactly(length), type=ModelRequest)
            if request.role in self.hang:
                self.hanging.set()
                await reader.read()  # until the client goes away
                return
            if self.before_reply is not None:
                await self.before_reply()
            response = self.script.complete(request)
            self.answered[path] = self.answered.get(path, 0) + 1
            if path == "/stream":
                await _send_stream(writer, response)
            else:
                await _send(writer, msgspec.json.encode(response))


async def _send(writer: asyncio.StreamWriter, body: bytes) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()


async def _send_stream(writer: asyncio.StreamWriter, response: ModelResponse) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    text = "".join(b.text for b in response.content if isinstance(b, TextBlock))
    lines = [json.dumps({"text": piece}).encode() for piece in re.findall(r"\S+\s*", text)]
    lines.append(msgspec.json.encode({"response": response}))
    for line in lines:
        chunk = line + b"\n"
        writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        await writer.drain()
        await asyncio.sleep(0)  # a piece at a time
    writer.write(b"0\r\n\r\n")
    await writer.drain()


@contextlib.contextmanager
def server_thread(script: ScriptedModel) -> Iterator[ModelServer]:
    """Run a :class:`ModelServer` on an event loop of its own thread (for sync tests)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(ModelServer(script).start(), loop).result(30)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


class HttpModel:
    """An async model: posts each request to a :class:`ModelServer` with
    ``httpx.AsyncClient`` (``client`` if given, else one per call).

    ``threads``: the name of every thread a call ran on; ``loops``: the id of every loop;
    ``cancelled`` is set when a call was cancelled on its loop.
    """

    def __init__(self, url: str, name: str = "scripted", client: httpx.AsyncClient | None = None):
        self.url = url
        self.name = name
        self.client = client
        self.threads: set[str] = set()
        self.loops: set[int] = set()
        self.cancelled = threading.Event()

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        self.threads.add(threading.current_thread().name)
        self.loops.add(id(asyncio.get_running_loop()))
        if self.client is not None:
            yield self.client
            return
        # Plain HTTP on loopback: no TLS context to build (loading the CA bundle costs
        # ~0.2 s a client), no proxy from the environment.
        async with httpx.AsyncClient(timeout=None, verify=False, trust_env=False) as client:
            yield client

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        try:
            async with self._client() as client:
                reply = await client.post(f"{self.url}/complete", content=_body(request))
                reply.raise_for_status()
                return msgspec.json.decode(reply.content, type=ModelResponse)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


class HttpStreamingModel(HttpModel):
    """An :class:`HttpModel` that can also stream (``astream`` over ``POST /stream``)."""

    async def astream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        try:
            async with (
                self._client() as client,
                client.stream("POST", f"{self.url}/stream", content=_body(request)) as reply,
            ):
                async for line in reply.aiter_lines():
                    if not line:
                        continue
                    item = json.loads(line)
                    if "text" in item:
                        yield item["text"]
                    else:
                        yield msgspec.convert(item["response"], ModelResponse)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def _body(request: ModelRequest) -> bytes:
    return msgspec.json.encode(request)


class Ticker:
    """A coroutine that counts while the loop is free (``run`` it as a task)."""

    def __init__(self) -> None:
        self.count = 0

    async def run(self) -> None:
        while True:
            self.count += 1
            await asyncio.sleep(0.001)

    async def more(self, n: int) -> None:
        """Return once the ticker ticked ``n`` more times."""
        target = self.count + n
        while self.count < target:
            await asyncio.sleep(0.001)
