"""The langgraph extra is optional: importing ``actors`` (or the CLI) never imports it."""

from __future__ import annotations

import subprocess
import sys

from _processes import child_env


def test_importing_actors_and_the_cli_does_not_import_langgraph() -> None:
    code = (
        "import sys, actors, actors.cli, actors.langgraph\n"
        "roots = ('langgraph', 'langchain_core')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in roots)\n"
        "assert not loaded, loaded\n"
        "assert actors.langgraph.session_id_for('a b').startswith('lgh_')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True
    )
    assert 0 == done.returncode, done.stderr


def test_thread_ids_map_to_distinct_valid_session_ids() -> None:
    from actors.langgraph import session_id_for  # noqa: PLC0415 - the function under test
    from eventlog.ids import validate_session_id  # noqa: PLC0415

    uuid = "0b6f3c1e-9a43-4c59-9d0c-5e1f7d2a8b34"
    ids = [uuid, uuid.upper(), "plain_1", "with-dash", "x" * 300, "", "é"]
    sids = [session_id_for(t) for t in ids]

    assert "lgu_0b6f3c1e9a434c599d0c5e1f7d2a8b34" == sids[0]
    assert "lgt_plain_1" == sids[2]
    assert len(set(sids)) == len(sids)
    assert sids == [validate_session_id(s) for s in sids]
