"""The front door (issue 30): ``Session`` carries out every per-session verb; ``Runtime``'s
per-session methods are aliases of them, with their docstring and signature, that read
nothing before the verb does (so each raises what the verb raises).
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from _runtime_helpers import route, rule, scripted

from actors.runtime.runtime import Runtime, _PerSession
from actors.runtime.session import Session
from eventlog.errors import DeletedSession, InvalidSessionId, UnknownSession

MODEL = scripted(route(), rule("lead", {"text": "Done."}))

ALIASES = {name: a for name, a in vars(Runtime).items() if isinstance(a, _PerSession)}


def test_each_alias_is_a_session_verb_with_its_docstring_and_the_id_first(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        for name in ALIASES:
            verb = getattr(Session, "delete" if name == "delete_session" else name)
            alias = getattr(rt, name)
            params = list(inspect.signature(alias).parameters)
            assert verb.__doc__ == alias.__doc__, name
            assert ["session_id", *list(inspect.signature(verb).parameters)[1:]] == params


def test_an_alias_does_what_the_verb_of_that_session_does(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        outcome = rt.run(session.id, "Hello.", model=MODEL)

        assert "completed" == outcome.status
        assert [outcome.run_id] == rt.main_runs(session.id) == session.main_runs()
        assert session.session_dir() == rt.session_dir(session.id)
        assert rt.replay(session.id).identical and session.verify().ok
        assert rt.fork(session.id).id != session.id


def test_an_alias_raises_what_its_verb_raises_for_a_bad_or_deleted_id(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        rt.delete_session(session.id)

        with pytest.raises(DeletedSession):
            rt.delete_session(session.id)
        with pytest.raises(InvalidSessionId):
            rt.cancel("not an id!")
        with pytest.raises(UnknownSession):
            rt.pending("sess_nope")
        with pytest.raises(UnknownSession):
            rt.session("sess_nope")
