"""The ids a person types, resolved once for every command.

A session is named by its full id, a unique prefix of it (``sess_20261130_2141``) or
``last`` (the newest session of the home). A run, a node or an agent is named by its
full id, its id relative to the session (``brain:r1``, ``brain:r1:n2``) or a unique
prefix of either. An exact id always wins over a longer one it is a prefix of
(``brain:r1`` is the run ``brain:r1``, not ``brain:r10``). A tool call is named also by
the short id ``clew timeline`` and ``clew tail`` show (its id without the provider's tag,
``a400ce979e_0`` for ``call_a400ce979e_0``) or a unique prefix of that. A prefix that matches more
than one id is refused (:class:`~actors.errors.AmbiguousId`, exit 2), listing the
candidates.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import typer

from actors.documents.excerpts import untagged_call_id
from actors.errors import AmbiguousId, UsageError
from eventlog.errors import ClewError, UnknownSession, quoted
from eventlog.ids import qualified, relative, validate_session_id

if TYPE_CHECKING:
    from eventlog.store import EventStore

#: What names the newest session of the home.
LAST: Final = "last"
#: Candidates an ambiguity error lists before "and N more".
SHOWN: Final = 6


def pick(
    kind: str,
    typed: str,
    ids: Sequence[str],
    *,
    session_id: str | None = None,
    alias: Callable[[str], str] | None = None,
) -> str | None:
    """Return the one id of ``ids`` that ``typed`` names; None when none does.

    Args:
        kind: what the ids are (``run``, ``node``…), for the error message.
        session_id: the ids' session: ``typed`` may then be relative to it.
        alias: another spelling of each id that ``typed`` may be or start (a tool call's
            id without its tag, as the timeline shows it); one it equals wins.

    Raises:
        AmbiguousId: ``typed`` is a prefix of several ids and equal to none.
    """
    if not typed:
        return None
    known = set(ids)
    if typed in known:
        return typed
    if session_id is not None and qualified(session_id, typed) in known:
        return qualified(session_id, typed)

    if alias is not None and len(equal := [i for i in ids if alias(i) == typed]) == 1:
        return equal[0]

    def shown(ident: str) -> str:
        return ident if session_id is None else relative(session_id, ident)

    def spelt(ident: str) -> bool:
        return ident.startswith(typed) or shown(ident).startswith(typed)

    matches = [i for i in ids if spelt(i) or (alias is not None and alias(i).startswith(typed))]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        return None
    listed = ", ".join(shown(m) for m in matches[:SHOWN])
    more = f" and {len(matches) - SHOWN} more" if len(matches) > SHOWN else ""
    raise AmbiguousId(
        f"{kind} {quoted(typed)} is ambiguous: it starts {len(matches)} {kind} ids"
        f" ({listed}{more}); type more of it"
    )


def resolve_session(store: EventStore, typed: str) -> str:
    """Return the id of the session ``typed`` names: an id, a unique prefix, or ``last``.

    Raises:
        InvalidSessionId: ``typed`` holds characters no session id has.
        UnknownSession: no session matches (``DeletedSession``: it was deleted).
        AmbiguousId: several sessions start with ``typed``.
    """
    sid = validate_session_id(typed)
    if store.session_exists(sid):
        return sid
    rows = store.list_sessions()
    if sid == LAST:
        if not rows:
            raise UnknownSession("no session to call 'last': the home holds no sessions")
        return rows[-1].session_id  # oldest first: the last is the newest
    found = pick("session", sid, [r.session_id for r in rows])
    if found is None:
        # Imported here: the options import this module for SESSION's completion, and
        # ``clew --version`` need not load the store to print a number.
        from eventlog.deletions import deleted_error  # noqa: PLC0415 - see above
        from eventlog.store import DeletesSessions  # noqa: PLC0415 - see above

        gone = store.read_deletion(sid) if isinstance(store, DeletesSessions) else None
        raise deleted_error(gone) if gone else UnknownSession(f"unknown session {sid}")
    return found


def resolve_run(store: EventStore, sid: str, typed: str) -> str:
    """Return the run of session ``sid`` that ``typed`` names.

    Raises:
        UsageError: no run matches (``AmbiguousId``: several do).
    """
    return _one_of(sid, "run", typed, [r.run_id for r in store.read_runs(sid)])


def resolve_agent(store: EventStore, sid: str, typed: str) -> str:
    """Return the agent of session ``sid`` that ``typed`` names.

    Raises:
        UsageError: no agent matches (``AmbiguousId``: several do).
    """
    return _one_of(sid, "agent", typed, [a.agent_id for a in store.read_agents(sid)])


def _one_of(sid: str, kind: str, typed: str, ids: list[str]) -> str:
    """Return the one of the session's ``ids`` that ``typed`` names, or refuse."""
    found = pick(kind, typed, ids, session_id=sid)
    if found is None:
        raise UsageError(f"session {sid} has no {kind} {quoted(typed)}")
    return found


def resolve_node(store: EventStore, sid: str, typed: str) -> str:
    """Return the node of session ``sid`` that ``typed`` names; ``typed`` itself when none
    does (the command then refuses it with its own message). In a fork, a node copied
    from its parent may also be named relative to the parent (``brain:r1:n2``).

    Raises:
        AmbiguousId: several nodes start with ``typed``.
    """
    nodes = [n.node_id for n in store.read_nodes(sid)]
    # A fork's copied nodes keep their parent's ids: relative to the parent, or to its own.
    session: str | None = sid
    seen: set[str] = set()
    while session is not None and session not in seen:
        seen.add(session)
        found = pick("node", typed, nodes, session_id=session)
        if found is not None:
            return found
        parent = store.read_session(session).parent_session_id
        session = parent if parent is not None and store.session_exists(parent) else None
    return typed


def resolve_call(store: EventStore, sid: str, typed: str) -> str:
    """Return the tool call of session ``sid`` that ``typed`` names: its id, a unique
    prefix (``call_712c``), or the short id the timeline shows (``712c…``, the id without
    its tag, or a unique prefix of that); ``typed`` itself when none does (the command then
    refuses it, naming it).

    Raises:
        AmbiguousId: several tool calls start with ``typed``.
    """
    calls = dict.fromkeys(e.tool_call_id for e in store.iter_events(sid) if e.tool_call_id)
    return pick("tool call", typed, list(calls), alias=untagged_call_id) or typed


def complete_session(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of a SESSION argument: the home's session ids, newest first."""
    home = ctx.params.get("home") or os.environ.get("CLEW_HOME") or "~/.clew"
    db = Path(home).expanduser() / "sessions.sqlite"
    if not db.is_file():
        return []
    from eventlog.sqlite import SQLiteStore  # noqa: PLC0415 - only when completing

    try:
        store = SQLiteStore(db, read_only=True)
    except (ClewError, OSError):
        return []
    try:
        ids = [r.session_id for r in reversed(store.list_sessions())]
    except ClewError:
        return []
    finally:
        store.close()
    return [i for i in [LAST, *ids] if i.startswith(incomplete)]
