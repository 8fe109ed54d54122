"""clew as a LangGraph checkpointer (the ``langgraph`` extra): ``ClewSaver``.

``from actors.langgraph import ClewSaver`` imports LangGraph; importing ``actors`` (or
this package alone) does not. Modules: ``saver`` (the ``BaseCheckpointSaver``),
``threads`` (a thread as a clew session), ``thread_log`` (the fold of a thread's events),
``listing`` (what ``list`` and the removals select), ``linear`` (storing the increment
of a growing list). See docs/langgraph.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.langgraph.threads import session_id_for

if TYPE_CHECKING:
    from actors.langgraph.saver import ClewSaver

__all__ = ["ClewSaver", "session_id_for"]


def __getattr__(name: str) -> Any:
    if name == "ClewSaver":
        from actors.langgraph.saver import ClewSaver  # noqa: PLC0415 - LangGraph on demand

        return ClewSaver
    raise AttributeError(f"module 'actors.langgraph' has no attribute {name!r}")
