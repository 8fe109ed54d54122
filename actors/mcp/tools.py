"""An MCP server's tools as clew tools, over one client session on a background loop.

:class:`McpTools` owns a daemon thread running an asyncio loop. One task on it opens the
transport (a child process over stdio, or streamable HTTP), initializes the SDK's
``ClientSession``, lists the tools once, then waits to be closed — the transport is
entered and left by that same task, as anyio requires. A tool call is a coroutine sent to
the loop; the tool's thread (see ``actors.models.tools.invoke``) waits for its result.

A call's outcome is the tool's output (its text content joined; an image or other
non-text content beside the text kept as JSON blocks after it, which the artifact rule
stores as artifacts with a reference when large), so the runtime records it in
``tool_call_finished`` like any tool's; a replay uses the recorded outcome and the
recorded spec, and never starts the server. A tool whose ``execution.taskSupport`` is
``required`` answers only task-augmented calls, which clew does not make: it is not
offered (:attr:`McpTools.not_offered` says so).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any, overload

import pydantic
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mcp_types

from actors.errors import McpToolFailed, McpUnavailable
from actors.mcp.servers import StdioServer, server_name
from actors.models.protocol import ToolSpec
from actors.models.tools import ToolOutput
from eventlog.blocks import JsonBlock, TextBlock

try:  # mcp 2.x
    from mcp.client.streamable_http import streamable_http_client as _http_client
except ImportError:  # pragma: no cover - mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client as _http_client

#: Seconds ``close()`` waits for the session and its transport (the child) to end.
CLOSE_WAIT_S = 10.0


class McpArguments(pydantic.BaseModel):
    """An MCP tool's arguments: passed on as given; the server checks them (its schema is
    the tool's spec, which the model sees)."""

    model_config = pydantic.ConfigDict(extra="allow")


def _field(obj: Any, snake: str, camel: str) -> Any:
    """``obj.snake`` (mcp 2.x) or ``obj.camel`` (mcp 1.x), else None. An mcp 2.x object's
    camel alias is never read: fastmcp, once imported, makes reading it warn."""
    if hasattr(obj, snake):
        return getattr(obj, snake)
    return getattr(obj, camel, None)


def _leaf(e: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


def _one_line(e: BaseException) -> str:
    """``Type: message`` of the innermost cause, on one line."""
    cause = _leaf(e)
    text = " ".join(str(cause).split())
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


def is_idempotent(listed: Any) -> bool:
    """True iff the server annotates the tool ``readOnlyHint`` or ``idempotentHint``."""
    notes = getattr(listed, "annotations", None)
    if notes is None:
        return False
    read_only = _field(notes, "read_only_hint", "readOnlyHint")
    idempotent = _field(notes, "idempotent_hint", "idempotentHint")
    return read_only is True or idempotent is True


def needs_tasks(listed: Any) -> bool:
    """True iff the server says the tool must be called as a task (``taskSupport``
    ``required``): a plain call of it always fails."""
    execution = getattr(listed, "execution", None)
    return execution is not None and _field(execution, "task_support", "taskSupport") == (
        "required"
    )


def output_of(name: str, result: Any) -> ToolOutput:
    """The clew output of an MCP ``CallToolResult``: its text content joined by newlines
    (followed by its other content blocks as JSON blocks, if any: an image beside the
    text is kept); without text, its structured content, else its content blocks as JSON.

    Raises:
        McpToolFailed: the result is ``isError`` (the message is its text).
    """
    content = list(getattr(result, "content", None) or [])
    text = "\n".join(c.text for c in content if getattr(c, "type", None) == "text")
    if _field(result, "is_error", "isError") is True:
        raise McpToolFailed(text or f"the MCP tool {name!r} reported an error")
    others = [
        c.model_dump(mode="json", by_alias=True, exclude_none=True)
        for c in content
        if getattr(c, "type", None) != "text"
    ]
    if text and others:
        return [TextBlock(text=text), *(JsonBlock(data=c) for c in others)]
    if text or not content:
        structured = _field(result, "structured_content", "structuredContent")
        return structured if not text and isinstance(structured, dict) else text
    return others


class McpTool:
    """One tool of an MCP server, called through its :class:`McpTools` session."""

    args_model: type[pydantic.BaseModel] = McpArguments

    def __init__(self, owner: McpTools, listed: Any, prefix: str, timeout_s: float | None):
        self.remote_name: str = listed.name
        self.name = prefix + listed.name
        self.description: str = listed.description or ""
        schema = _field(listed, "input_schema", "inputSchema")
        parameters = dict(schema) if schema else {"type": "object", "properties": {}}
        self.spec = ToolSpec(name=self.name, description=self.description, parameters=parameters)
        self.idempotent = is_idempotent(listed)
        self.timeout_s = timeout_s
        self._owner = owner

    def call(self, args: pydantic.BaseModel) -> ToolOutput:
        """Call the tool on the server with ``args`` as given."""
        return self._owner.call(self.remote_name, args.model_dump(mode="json"))

    def __repr__(self) -> str:
        return f"McpTool({self.name!r}, idempotent={self.idempotent})"


class McpTools(Sequence[McpTool]):
    """An MCP server's tools (a sequence of :class:`McpTool`) and the connection they share.

    Built by :func:`actors.mcp.mcp_tools`; close it with :meth:`close` or ``with``.
    """

    def __init__(
        self,
        server: StdioServer | str,
        *,
        start_timeout_s: float = 30.0,
        call_timeout_s: float | None = 120.0,
        prefix: str = "",
    ) -> None:
        self.server = server
        self.name = server_name(server)
        self.call_timeout_s = call_timeout_s
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        #: Set once the session task has left its transport (the child has ended).
        self._ended = threading.Event()
        #: Why calls are refused once the session is over.
        self._gone = "closed (the tool set was closed)"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="clew-mcp", daemon=True)
        self._thread.start()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            listed = ready.result(timeout=start_timeout_s)
        except concurrent.futures.TimeoutError:
            self._main.cancel()  # still connecting: no stop to wait for
            self.close()
            raise McpUnavailable(
                f"{self.name} did not start and list its tools within {start_timeout_s:g} s"
            ) from None
        except BaseException:
            self.close()
            raise
        self._tools = [
            McpTool(self, t, prefix, call_timeout_s) for t in listed if not needs_tasks(t)
        ]
        #: The server's tools not offered to a model, with why (by their clew names).
        self.not_offered: dict[str, str] = {
            prefix + t.name: "its execution.taskSupport is 'required' (task-augmented calls only)"
            for t in listed
            if needs_tasks(t)
        }

    async def _serve(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        """Open the session, list the tools into ``ready``, then hold it open until closed."""
        self._stop = asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                await session.initialize()
                listed = await _list_all(session)
                self._session = session
                ready.set_result(listed)
                await self._stop.wait()
        except (Exception, asyncio.CancelledError) as e:
            if not ready.done():
                ready.set_exception(McpUnavailable(f"{self.name} is unavailable: {_one_line(e)}"))
            elif not isinstance(e, asyncio.CancelledError):
                self._gone = f"lost (the connection ended: {_one_line(e)})"
        finally:
            self._session = None
            self._ended.set()

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        server = self.server
        if isinstance(server, StdioServer):
            params = StdioServerParameters(
                command=server.command,
                args=list(server.args),
                env=dict(server.env) if server.env is not None else None,
                cwd=server.cwd,
            )
            return stdio_client(params)  # type: ignore[no-any-return]
        return _http_client(server)  # type: ignore[no-any-return]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call the server's tool ``name`` and return its output (see :func:`output_of`).

        Raises:
            McpToolFailed: the server answered ``isError``, did not answer within
                ``call_timeout_s``, the connection broke, or the tool set is closed.
        """
        session = self._session
        if session is None or self._loop.is_closed():
            raise McpToolFailed(f"{self.name} is {self._gone}")
        future = asyncio.run_coroutine_threadsafe(session.call_tool(name, arguments), self._loop)
        try:
            result = future.result(timeout=self.call_timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpToolFailed(
                f"{self.name} did not answer {name!r} within {self.call_timeout_s:g} s"
            ) from None
        except Exception as e:
            raise McpToolFailed(f"{self.name} failed {name!r}: {_one_line(e)}") from e
        return output_of(name, result)

    def close(self) -> None:
        """End the session (a stdio server's process ends with it) and the loop's thread."""
        if self._loop.is_closed():
            return
        stop = self._stop
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        if not self._ended.wait(CLOSE_WAIT_S):
            self._main.cancel()
            self._ended.wait(CLOSE_WAIT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_WAIT_S)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> McpTools:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @overload
    def __getitem__(self, index: int) -> McpTool: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[McpTool]: ...
    def __getitem__(self, index: int | slice) -> McpTool | Sequence[McpTool]:
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[McpTool]:
        return iter(self._tools)

    def names(self) -> list[str]:
        """The clew names of the tools, in the server's order."""
        return [t.name for t in self._tools]


async def _list_all(session: ClientSession) -> list[Any]:
    """Every tool the server lists, following its pagination cursor."""
    page = await session.list_tools()
    tools = list(page.tools)
    cursor = _field(page, "next_cursor", "nextCursor")
    while cursor:
        page = await session.list_tools(params=mcp_types.PaginatedRequestParams(cursor=cursor))
        tools.extend(page.tools)
        cursor = _field(page, "next_cursor", "nextCursor")
    return tools
