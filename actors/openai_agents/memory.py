"""Conversation memory for the Agents SDK kept in clew's store, and a run's recorded use of it.

:class:`ClewSession` implements the SDK's ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``) on a clew session of its own: each item is
a node of that session's tree (its JSON in a block, on the active path), ``pop_item`` moves
the active node back to the parent (the popped node stays in the tree, as any branch
does), ``clear_session`` back to the tree's root. So the memory is durable, verifiable
(``clew verify``), readable in ``clew show``/``ui``, and forkable like any session.

:class:`RecordedMemory` is what a durable run hands the SDK instead of its memory (a
``ClewSession`` or any other ``Session``): each operation is a recorded step of the run
(a tool call named ``memory.<operation>``), so a resume or a replay reads the history the
run read and adds nothing twice — an ``add_items`` left in doubt by a crash is done again
under the same key, which a ``ClewSession`` does once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

from agents.items import TResponseInputItem
from agents.memory import Session as SdkSession

from actors.models.tool_policy import tool_context
from actors.models.tools import InDoubtPolicy
from actors.openai_agents.messages import jsonable
from actors.openai_agents.tools import Seam
from eventlog.blocks import JsonBlock, TextBlock
from eventlog.events import (
    ActiveNodeSwitched,
    Node,
    NodeAppended,
    ToolCallFinished,
    ToolCallStarted,
)
from eventlog.ids import derived_id
from eventlog.records import AppendRequest

if TYPE_CHECKING:
    from actors.runtime.session import Session

#: The node metadata key that marks a memory item (its value: the write's key).
ITEM: Final = "openai_agents_item"
_ROOT: Final = "openai_agents_memory"
_ROLES: Final = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "function_call_output": "tool",
}


class ClewSession:
    """The SDK's ``Session`` protocol on a clew session's node tree (see the module
    docstring). ``session``: a clew session kept for this memory (not a run's own)."""

    session_settings = None

    def __init__(self, session: Session) -> None:
        self._session = session
        self.session_id = session.id

    # --- the SDK's protocol -------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the history (the latest ``limit`` items), oldest first."""
        items = await asyncio.to_thread(self._items)
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the history (once per key, inside a durable run)."""
        try:
            key = tool_context().idempotency_key
        except RuntimeError:  # outside a durable run: every call adds
            key = ""
        await asyncio.to_thread(self._add, [jsonable(i) for i in items], key)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the latest item from the history and return it (None: it is empty)."""
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        """Empty the history (its nodes stay in the tree, off the active path)."""
        await asyncio.to_thread(self._clear)

    # --- on the store ---------------------------------------------------------------------

    def _path(self) -> list[Any]:
        store = self._session._engine.store  # noqa: SLF001 - the session's own store
        if store.read_session(self.session_id).active_node_id is None:
            return []
        return store.read_active_path(self.session_id)

    def _items(self) -> list[TResponseInputItem]:
        return [_item_of(row) for row in self._path() if ITEM in row.metadata]

    def _write(self, events: list[Any]) -> None:
        engine = self._session._engine  # noqa: SLF001 - the session's own engine
        engine.own(self.session_id)
        try:
            for event in events:
                engine.writer.append(
                    AppendRequest(
                        session_id=self.session_id, event=event, created_at=engine.clock.now()
                    )
                )
        finally:
            engine.release(self.session_id)

    def _add(self, items: list[Any], key: str) -> None:
        engine = self._session._engine  # noqa: SLF001 - the session's own engine
        store = engine.store
        nodes = store.read_nodes(self.session_id)
        if key and any(n.metadata.get(ITEM) == key for n in nodes):
            return  # done before, under this key (a resume doing an in-doubt write again)
        row = store.read_session(self.session_id)
        parent, n = row.active_node_id, len(nodes)
        events: list[Any] = []
        if parent is None:
            n += 1
            parent = derived_id(self.session_id, "m", n)
            root = Node(
                node_id=parent,
                parent_id=None,
                agent_id=row.root_agent_id,
                role="system",
                node_type="system_note",
                content=[TextBlock(text="Agents SDK session memory")],
                metadata={_ROOT: True},
            )
            events.append(NodeAppended(node=root, activate=True))
        for item in items:
            n += 1
            node = Node(
                node_id=derived_id(self.session_id, "m", n),
                parent_id=parent,
                agent_id=row.root_agent_id,
                role=_role(item),  # type: ignore[arg-type]
                content=[JsonBlock(data=item, summary=str(item.get("type", "message")))],
                metadata={ITEM: key or True},
            )
            events.append(NodeAppended(node=node, activate=True))
            parent = node.node_id
        self._write(events)

    def _pop(self) -> TResponseInputItem | None:
        path = self._path()
        if not path or ITEM not in path[-1].metadata or path[-1].parent_id is None:
            return None
        last = path[-1]
        self._write([ActiveNodeSwitched(from_node_id=last.node_id, to_node_id=last.parent_id)])
        return _item_of(last)

    def _clear(self) -> None:
        path = self._path()
        if path and ITEM in path[-1].metadata:
            self._write(
                [ActiveNodeSwitched(from_node_id=path[-1].node_id, to_node_id=path[0].node_id)]
            )


def _role(item: dict[str, Any]) -> str:
    return _ROLES.get(str(item.get("role") or item.get("type")), "assistant")


def _item_of(row: Any) -> Any:
    block = row.content[0]
    assert isinstance(block, JsonBlock)
    return block.data


class RecordedMemory:
    """A run's memory whose every operation is a recorded step (see the module docstring)."""

    def __init__(self, memory: SdkSession, seam: Seam) -> None:
        self._memory = memory
        self._seam = seam
        self.session_id = memory.session_id
        self.session_settings = getattr(memory, "session_settings", None)
        #: Whether writes are keyed (done once per key): a ClewSession's are.
        self._keyed = isinstance(memory, ClewSession)

    async def _op(
        self,
        name: str,
        run: Any,
        arguments: dict[str, Any],
        idempotent: bool,
        in_doubt: InDoubtPolicy = "skip",
    ) -> Any:
        started = ToolCallStarted(
            tool_call_id=self._seam.next_id("memory"),
            tool_name=f"memory.{name}",
            arguments=arguments,
            idempotent=idempotent,
        )
        outcome = await self._seam.call(started, run, in_doubt, self._seam.bridge.role)
        if isinstance(outcome, ToolCallFinished) and outcome.content:
            block = outcome.content[0]
            return block.data if isinstance(block, JsonBlock) else None
        return None

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        async def run() -> Any:
            return await self._memory.get_items(limit)

        items = await self._op("get_items", run, {"limit": limit}, idempotent=True)
        return list(items or [])

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        async def run() -> None:
            await self._memory.add_items(items)

        # Not keyed (another Session): a write left in doubt is done again, maybe twice,
        # rather than lost.
        await self._op("add_items", run, {"count": len(items)}, idempotent=self._keyed,
                       in_doubt="retry")  # fmt: skip

    async def pop_item(self) -> TResponseInputItem | None:
        async def run() -> Any:
            return await self._memory.pop_item()

        item: Any = await self._op("pop_item", run, {}, idempotent=False)
        return item

    async def clear_session(self) -> None:
        async def run() -> None:
            await self._memory.clear_session()

        await self._op("clear_session", run, {}, idempotent=True)
