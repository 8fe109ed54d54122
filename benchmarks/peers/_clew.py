"""clew's side of the peer benchmark: the same workloads through the real runtime and store."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import apsw
import pydantic
import pykka
from _common import ASKS_PER_TURN, Point, disk_bytes, reply_text, settle, turn_at, user_text

from actors import RunSettings, Runtime, ScriptedModel, tool
from eventlog.blocks import TextBlock
from eventlog.events import Node, NodeAppended, RunStarted, SessionCreated
from eventlog.ids import brain_agent_id, main_run_id
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.store import EventStore
from eventlog.writer import Writer

SID = "peers"
NAME = "clew"


class ClewSteps:
    """Case 1: one durable step = one node row + its ``node_appended`` event, one commit."""

    def __init__(self, folder: Path, store: EventStore | None = None) -> None:
        """A fresh SQLite home in ``folder`` (``durability="full"``), or ``store``."""
        if store is None:
            folder.mkdir(parents=True, exist_ok=True)
            store = SQLiteStore(folder / "sessions.sqlite", durability="full")
        self.writer = Writer(store)
        self.tip: str | None = None
        self.t = 0
        self._append(SessionCreated(session_id=SID, cwd="/", root_agent_id="main"))

    def _append(self, event: Any) -> None:
        self.t += 1
        at = f"2026-06-12T15:00:{self.t:08d}Z"
        self._commit(AppendRequest(session_id=SID, event=event, created_at=at))

    def _commit(self, request: AppendRequest) -> None:
        self.writer.append(request)

    def step(self, i: int) -> None:
        node = Node(
            node_id=f"n{i}",
            parent_id=self.tip,
            agent_id="main",
            role="user" if i % 2 else "assistant",
            content=[TextBlock(text=user_text(i))],
        )
        self._append(NodeAppended(node=node, activate=True))
        self.tip = node.node_id

    def close(self) -> None:
        self.writer.stop()


class SqliteFloor:
    """Case 1's floor: one INSERT of the text and a COMMIT on the caller's thread (apsw,
    WAL, ``synchronous=FULL``): what any step that makes one commit durable pays."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.conn = apsw.Connection(str(folder / "floor.sqlite"))
        self.conn.execute("PRAGMA journal_mode=WAL").fetchall()
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("CREATE TABLE steps (seq INTEGER PRIMARY KEY, text TEXT NOT NULL)")

    def step(self, i: int) -> None:
        with self.conn:
            self.conn.execute("INSERT INTO steps VALUES (?, ?)", (i, user_text(i)))

    def close(self) -> None:
        self.conn.close()


def eventlog_messages(folder: Path, checkpoints: tuple[int, ...]) -> list[Point]:
    """Case 2's floor: the conversation's messages alone through clew's eventlog (a
    ``node_appended`` each, :class:`ClewSteps`): no run, model call, usage or status
    events. Returns a :data:`~_common.Point` at each checkpoint (a turn: two messages)."""
    steps = ClewSteps(folder)
    out: list[Point] = []
    turns: list[float] = []
    cpu: list[float] = []
    elapsed = 0.0
    try:
        for i in range(max(checkpoints)):
            t0, c0 = time.perf_counter(), time.process_time()
            steps.step(i)
            took, used = time.perf_counter() - t0, time.process_time() - c0
            elapsed += took
            if i % 2:  # a turn is two messages
                turns[-1] += took
                cpu[-1] += used
            else:
                turns.append(took)
                cpu.append(used)
            if i + 1 in checkpoints:
                steps.writer.flush()
                settle(folder, apsw_files=True)
                out.append((i + 1, elapsed, disk_bytes(folder), turn_at(turns), turn_at(cpu)))
    finally:
        steps.close()
    return out


# --- case 2 and 4: a real Runtime session -----------------------------------------------------

_PLAN_ALONE = {"primary_role": "lead", "workers": []}
_PLAN_WORKER = {"primary_role": "lead", "workers": [{"id": "w1", "role": "clerk", "goal": "go"}]}


class EchoArgs(pydantic.BaseModel):
    text: str


@tool(EchoArgs, idempotent=True)
def echo(args: EchoArgs) -> str:
    """Return the text (a zero-cost tool)."""
    return args.text


def conversation_model(turns: int) -> ScriptedModel:
    """Router: no workers; lead: the i-th reply when the request holds i earlier answers."""
    return ScriptedModel(
        {
            "rules": [
                {"role": "router", "replies": [{"json": _PLAN_ALONE}]},
                {"role": "lead", "replies": [{"text": reply_text(i)} for i in range(turns)]},
            ]
        }
    )


def open_runtime(folder: Path, durability: str = "full", max_turns: int = 8) -> Runtime:
    folder.mkdir(parents=True, exist_ok=True)
    return Runtime(
        folder / "home",
        folder / "project",
        durability=durability,  # type: ignore[arg-type]
        settings=RunSettings(max_turns=max_turns),
    )


def conversation(folder: Path, checkpoints: tuple[int, ...]) -> list[Point]:
    """Case 2: ``session.run`` per turn (a user message and the lead's reply: 2 messages).

    Returns a :data:`~_common.Point` at each checkpoint.
    """
    model = conversation_model(max(checkpoints) // 2)
    out: list[Point] = []
    turns: list[float] = []
    cpu: list[float] = []
    elapsed = 0.0
    with open_runtime(folder) as rt:
        session = rt.new_session()
        for t in range(max(checkpoints) // 2):
            t0 = time.perf_counter()
            c0 = time.process_time()
            outcome = session.run(user_text(t), model=model, tools=[])
            turns.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            elapsed += turns[-1]
            assert outcome.status == "completed", outcome
            if 2 * (t + 1) in checkpoints:
                rt.writer.flush()
                settle(folder / "home", apsw_files=True)
                out.append(
                    (
                        2 * (t + 1),
                        elapsed,
                        disk_bytes(folder / "home"),
                        turn_at(turns),
                        turn_at(cpu),
                    )
                )
        (folder / "session_id").write_text(session.id)
    return out


def interrupt(folder: Path) -> str:
    """Leave the conversation's session with a started, unfinished main run (case 5)."""
    sid = (folder / "session_id").read_text()
    with open_runtime(folder) as rt:
        brain = brain_agent_id(sid)
        run_id = main_run_id(sid, len(rt.main_runs(sid)) + 1)
        rt.writer.append(
            AppendRequest(
                session_id=sid,
                event=RunStarted(run_id=run_id, agent_id=brain, metadata={"prompt": "again"}),
                created_at=rt.clock.now(),
                agent_id=brain,
                run_id=run_id,
            )
        )
    return sid


def worker_run(
    folder: Path,
    durability: str,
    tool_turns: int,
    *,
    group_commits: bool = True,
    commits: list[int] | None = None,
) -> float:
    """Case 4: one main run whose one worker calls the tool ``tool_turns`` times; seconds.

    ``group_commits=False``: one commit per event (clew before issue 17's group commits).
    ``commits``: gets the number of commits of the run appended.
    """
    look = {"tool_calls": [{"name": "echo", "arguments": {"text": "x" * 200}}]}
    model = ScriptedModel(
        {
            "rules": [
                {"role": "router", "replies": [{"json": _PLAN_WORKER}]},
                {"role": "clerk", "replies": [look] * tool_turns + [{"json": {"summary": "ok"}}]},
                {"role": "lead", "replies": [{"text": "done"}]},
            ]
        }
    )
    with open_runtime(folder, durability, max_turns=tool_turns + 2) as rt:
        rt._engine.group_commits = group_commits
        session = rt.new_session()
        counted = [0]
        unsubscribe = rt.writer.subscribe(lambda _batch: counted.__setitem__(0, counted[0] + 1))
        t0 = time.perf_counter()
        outcome = session.run("go", model=model, tools=[echo])
        seconds = time.perf_counter() - t0
        unsubscribe()
        assert outcome.status == "completed", outcome
    if commits is not None:
        commits.append(counted[0])
    return seconds


class _Nop(pykka.ThreadingActor):
    def on_receive(self, message: Any) -> Any:
        return message


def pykka_turns(turns: int) -> float:
    """The floor of case 4: a bare pykka loop asking an actor ``ASKS_PER_TURN`` times a turn."""
    ref = _Nop.start()
    try:
        t0 = time.perf_counter()
        for i in range(turns * ASKS_PER_TURN):
            ref.ask(i)
        return time.perf_counter() - t0
    finally:
        ref.stop()


# --- case 5: start a process, get ready to resume ---------------------------------------------

READY_SCRIPT = """
import sys
from actors import Runtime
home, project, sid = sys.argv[1:4]
with Runtime(home, project) as rt:
    plan = rt.resume_ready(sid)
print("ready", plan.events)
"""


def ready_argv(folder: Path, sid: str) -> list[str]:
    """The child process of case 5: open the home, find the interrupted run, read it."""
    return [
        sys.executable,
        "-c",
        READY_SCRIPT,
        str(folder / "home"),
        str(folder / "project"),
        sid,
    ]
