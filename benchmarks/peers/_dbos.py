"""DBOS side: durable workflows and steps on a SQLite system database.

DBOS owns its SQLAlchemy engine, so ``synchronous`` is SQLite's default: FULL here (run.py
checks the build's default). The harness puts the file in WAL mode before DBOS opens it
(the journal mode is stored in the file), as every other side runs in WAL. DBOS is a process
singleton, so each case destroys the previous instance and launches a new one on its own
database file.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from _common import Point, Unavailable, disk_bytes, reply_text, settle, turn_at, user_text

NAME = "DBOS"

try:
    from dbos import DBOS
except ImportError as e:  # pragma: no cover - the optional extra is not installed
    raise Unavailable(f"dbos: {e}") from e

logging.getLogger("dbos").setLevel(logging.WARNING)


def config(path: Path) -> Any:
    return {
        "name": "peers",
        "system_database_url": f"sqlite:///{path}",
        "log_level": "WARNING",
        "run_admin_server": False,
    }


_current: list[Path] = []


def launch(folder: Path) -> None:
    """Destroy the running DBOS (if any) and launch one on ``folder/dbos.sqlite``."""
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "dbos.sqlite")
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.close()
    if _current:
        DBOS.destroy(destroy_registry=False)
        _current.clear()
    DBOS(config=config(folder / "dbos.sqlite"))
    DBOS.launch()
    _current.append(folder)


def shutdown() -> None:
    if _current:
        DBOS.destroy(destroy_registry=False)
        _current.clear()


@DBOS.step()
def record(i: int, text: str) -> str:
    """One durable step: its output (the message) is recorded."""
    return text


@DBOS.workflow()
def steps(first: int, count: int) -> int:
    for i in range(first, first + count):
        record(i, user_text(i))
    return count


@DBOS.step()
def model_reply(i: int) -> str:
    return reply_text(i)


@DBOS.workflow()
def chat_turn(i: int, text: str) -> str:
    return model_reply(i)


@DBOS.step()
def model_turn(turn: int, tool_turns: int) -> dict[str, Any]:
    if turn < tool_turns:
        return {"tool_calls": [{"name": "echo", "args": {"text": "x" * 200}, "id": f"c{turn}"}]}
    return {"text": "done"}


@DBOS.step()
def echo(text: str) -> str:
    return text


@DBOS.workflow()
def agent(tool_turns: int) -> str:
    turn = 0
    while True:
        reply = model_turn(turn, tool_turns)
        if "text" in reply:
            return str(reply["text"])
        for call in reply["tool_calls"]:
            echo(call["args"]["text"])
        turn += 1


@DBOS.workflow()
def many(n: int, payload: str) -> int:
    for i in range(n):
        record(i, payload)
    return n


class DbosSteps:
    """Case 1: one durable step = one DBOS step (its output row), run in workflows of
    ``batch`` steps (the workflow's own rows are amortised over them)."""

    def __init__(self, folder: Path, batch: int) -> None:
        launch(folder)
        self.batch = batch
        self.pending: list[int] = []

    def step(self, i: int) -> None:
        self.pending.append(i)
        if len(self.pending) == self.batch:
            steps(self.pending[0], self.batch)
            self.pending.clear()

    def close(self) -> None:
        if self.pending:
            steps(self.pending[0], len(self.pending))
        shutdown()


def conversation(folder: Path, checkpoints: tuple[int, ...]) -> list[Point]:
    """Case 2: one workflow per turn (the user message its input, the reply a step)."""
    launch(folder)
    out: list[Point] = []
    turns: list[float] = []
    cpu: list[float] = []
    elapsed = 0.0
    for t in range(max(checkpoints) // 2):
        t0 = time.perf_counter()
        c0 = time.process_time()
        chat_turn(t, user_text(t))
        turns.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        elapsed += turns[-1]
        if 2 * (t + 1) in checkpoints:
            settle(folder)
            out.append((2 * (t + 1), elapsed, disk_bytes(folder), turn_at(turns), turn_at(cpu)))
    shutdown()
    return out


def write_events(folder: Path, n: int, payload: str) -> str:
    """Case 3 setup: one workflow of ``n`` steps."""
    launch(folder)
    handle = DBOS.start_workflow(many, n, payload)
    handle.get_result()
    wfid = str(handle.get_workflow_id())
    shutdown()
    return wfid


def reader(folder: Path, wfid: str) -> tuple[Any, Any]:
    """Case 3: (read, close): ``read`` reads back every step of the workflow
    (``DBOS.list_workflow_steps``) of a DBOS launched once."""
    launch(folder)
    return (lambda: len(DBOS.list_workflow_steps(wfid))), shutdown


def agent_run(folder: Path, tool_turns: int) -> float:
    """Case 4: one workflow whose model step asks for the tool ``tool_turns`` times."""
    launch(folder)
    t0 = time.perf_counter()
    agent(tool_turns)
    seconds = time.perf_counter() - t0
    shutdown()
    return seconds


READY_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[2])
import _dbos
from dbos import DBOS
DBOS(config=_dbos.config(__import__("pathlib").Path(sys.argv[1])))
DBOS.launch()  # recovers this executor's pending workflows
print("ready", len(DBOS.list_workflows()))
DBOS.destroy()
"""


def ready_argv(folder: Path) -> list[str]:
    """Case 5: start, launch DBOS on the conversation's database (recovery included)."""
    here = str(Path(__file__).parent)
    return [sys.executable, "-c", READY_SCRIPT, str(folder / "dbos.sqlite"), here]
