"""Branching: new histories from a session's own — fork it at a node, move its active
node, rerun one of its runs with one thing changed (served from the recording).

**Fork** a session at a node: a new session that starts from the parent's history.

A fork is recorded like everything else, in the fork's own log: its ``session_created``
names the parent (``parent_session_id``) and, in its metadata, the node it was forked
from (``fork_from_node_id``) and an optional title; then one ``node_appended`` per node
of the parent's path root → NODE, the last one activating NODE.

The copies are small rows that keep the parent's node ids and point at the parent's
content: a node's large blocks are already ``artifact_ref``s to content-addressed files
(nothing large is copied), and its id still names the session and run that made it
(``session_of(node_id)`` is the parent), so a reader can follow any copied node back to
the events that produced it (``clew diff`` does). The fork's own runs number from
``brain:r1`` under the fork's id, so they never collide with a copied id. Only the path
is copied — the parent's other branches and its workers' nodes stay in the parent.

**Switch** a session's active node (``Session.switch_node``, ``clew switch-node``).

**Rerun** (counterfactual): fork a session at the start of a run and re-execute the run with
one thing changed — another model for a role, an edited tool result, a role's
instructions, the prompt — serving every unchanged model call from the recording. The run
goes on with its recorded team; a team with typed output needs its output models, which
no recording holds: given the team (``team=``, ``clew rerun --team FILE``), they are taken
from it by role, as a resume takes them.

The rerun is a new main run of the fork (``brain:r1`` of the fork), recorded live like
any run, so the fork replays, resumes, verifies and forks again on its own. What it
serves and what it asks live is decided as follows. What was
changed is recorded in the fork's ``session_created`` metadata (``rerun``).

**Served**: what a rerun takes from the recording instead of asking again. A rerun
re-executes a recorded run in a fork, live: its events are the fork's own. Its
model seam is wrapped by :class:`ServedModel`: a request whose bytes are those of a
recorded request (the fork's run id and session id read as the parent's) gets the
recorded reply — or the recorded failure — without asking the model; any other request
is asked live. A changed request (another model, an edited tool result, new
instructions) changes every later request of the same conversation, so from the first
change on that conversation goes live, while an independent worker whose request did
not change is still served. Its tool seam is wrapped by :class:`ServedTool`: an edited
result wins, then the recorded result of the same call (same id and arguments), then
the live tool (or, without one, a failure saying the call has no recorded result).
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec
import pydantic

from actors.errors import NotRecorded, Unencodable, UsageError
from actors.models.chains import ModelArg, model_chains
from actors.models.protocol import Model, ModelRequest, ModelResponse, ToolSpec
from actors.models.storable import check_storable
from actors.models.tools import Tool, ToolContext, ToolOutput, ToolRegistry, call_tool, spec_of
from actors.orchestration.brain import RunRequest
from actors.orchestration.env import SessionEnv
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.roster import Roster, needs_output_models, roster_from_record
from actors.orchestration.team import Team, resolve
from actors.recording.inputs import RoleRecord, RunInputs, TeamRecord, tool_records
from actors.recording.recorded import (
    RecordedModel,
    read_recording,
    recorded_tools,
    run_started_of,
)
from actors.runtime.config import Chains, model_lookup
from actors.runtime.engine import Engine, model_names
from actors.runtime.start import check_prompt, execute_prepared, fresh_session_id, owned_run
from actors.runtime.upkeep import refuse_if_archived
from eventlog.blocks import ContentBlock
from eventlog.codec import encode
from eventlog.errors import ClewError, ModelError, quoted
from eventlog.events import (
    ActiveNodeSwitched,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    Node,
    NodeAppended,
    SessionCreated,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
)
from eventlog.ids import brain_agent_id, main_run_id, relative, stable_hash, validate_session_id
from eventlog.records import AppendRequest, NodeRow, StoredEvent
from projections.errors import UnknownNode
from projections.tree import NodeTree, check_branch_target

# --- fork ---------------------------------------------------------------------------------

#: The metadata keys a fork adds to its parent's (``session_created.metadata``).
FORK_NODE_KEY = "fork_from_node_id"
TITLE_KEY = "title"
RERUN_KEY = "rerun"
#: The parent's metadata keys a fork does not inherit (they describe the parent).
_NOT_INHERITED = (FORK_NODE_KEY, TITLE_KEY, RERUN_KEY)


def fork_path(engine: Engine, session_id: str, at: str | None) -> list[NodeRow]:
    """Return the parent's path root → ``at`` (``[]`` for ``at`` None).

    Raises:
        UnknownNode: ``at`` is not a node of the session.
    """
    if at is None:
        return []
    if engine.store.read_node(session_id, at) is None:
        raise UnknownNode(f"session {session_id} has no node {quoted(at)}")
    return engine.store.read_active_path(session_id, at)


def fork_session(
    engine: Engine,
    session_id: str,
    at: str | None,
    *,
    title: str | None = None,
    extra: dict[str, Any] | None = None,
) -> str:
    """Create a fork of ``session_id`` whose history is the parent's path root → ``at``
    (``at`` None: an empty history); return the fork's id.

    ``extra`` goes into the fork's metadata too (a rerun records what it changed there).

    Raises:
        InvalidSessionId, UnknownSession: bad or unknown parent.
        UnknownNode: ``at`` is not a node of the parent.
        UsageError: the title cannot be stored.
        ReadOnlyStore: the runtime is read-only.
    """
    sid = validate_session_id(session_id)
    row = engine.store.read_session(sid)
    engine.refuse_if_read_only(f"forking session {sid}")
    path = fork_path(engine, sid, at)
    meta = {k: v for k, v in row.metadata.items() if k not in _NOT_INHERITED}
    meta[FORK_NODE_KEY] = at
    if title is not None:
        meta[TITLE_KEY] = title
    meta.update(extra or {})
    try:
        check_storable(meta, "the fork's metadata")
    except Unencodable as e:
        raise UsageError(str(e)) from None
    now = engine.clock.now()
    fork = fresh_session_id(engine, now)
    created = SessionCreated(
        session_id=fork,
        cwd=row.cwd,
        root_agent_id=brain_agent_id(fork),
        parent_session_id=sid,
        metadata=meta,
    )
    requests = [AppendRequest(session_id=fork, event=created, created_at=now)]
    for i, node in enumerate(path):
        copy = NodeAppended(node=_node_of(node), activate=i == len(path) - 1)
        requests.append(AppendRequest(session_id=fork, event=copy, created_at=now))
    # Submitted together: the writer usually commits them in one batch (group commit). A
    # crash between two batches leaves a fork whose active node is not yet ``at``.
    futures = [engine.writer.submit(r) for r in requests]
    for f in futures:
        f.get(timeout=120)
    return fork


def _node_of(row: NodeRow) -> Node:
    """Return the node a stored row holds (the same id, parent, content and metadata)."""
    return Node(
        node_id=row.node_id,
        parent_id=row.parent_id,
        agent_id=row.agent_id,
        run_id=row.run_id,
        role=row.role,  # type: ignore[arg-type]
        node_type=row.node_type,  # type: ignore[arg-type]
        content=row.content,
        metadata=row.metadata,
        token_count=row.token_count,
    )


# --- switching ----------------------------------------------------------------------------


def switch_node(engine: Engine, session_id: str, node_id: str) -> str | None:
    """Move the session's active node to ``node_id``; return the previous one.

    See :meth:`actors.runtime.session.Session.switch_node` for the rule and the errors.
    """
    sid = validate_session_id(session_id)
    engine.refuse_if_read_only(f"switching the active node of {sid}")
    row = engine.store.read_session(sid)
    refuse_if_archived(row, "switching its active node")
    engine.own(sid)
    try:
        tree = NodeTree.from_rows(engine.store.read_nodes(sid), row.active_node_id)
        check_branch_target(tree, node_id, row.root_agent_id)
        engine.writer.append(
            AppendRequest(
                session_id=sid,
                event=ActiveNodeSwitched(from_node_id=row.active_node_id, to_node_id=node_id),
                created_at=engine.clock.now(),
            )
        )
    finally:
        engine.release(sid)
    return row.active_node_id


# --- rerun --------------------------------------------------------------------------------


class RerunReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a rerun made: the fork, what it served from the recording, its outcome."""

    #: The fork holding the rerun.
    session_id: str
    parent_session_id: str
    #: The parent's run that was re-executed, and the fork's run that re-executed it.
    run_id: str
    fork_run_id: str
    #: Where the fork starts (the parent node the run started from; None: the root).
    fork_node_id: str | None
    #: What was changed (as recorded in the fork's metadata).
    changes: dict[str, Any]
    #: Model calls answered from the recording (no cost), and asked live.
    served_calls: int
    live_calls: int
    #: The tokens of the served calls: what the rerun did not pay for again.
    saved_usage: Usage
    #: Tool calls given their recorded result, and the edited calls that were reached.
    served_tool_calls: int
    edited_tool_calls: list[str]
    outcome: RunOutcome


@dataclass
class Changes:
    """What a rerun changes; every field empty: a faithful re-execution."""

    #: A role's model chain instead of the recorded one (models, or a spec string).
    models: Mapping[str, ModelArg | str] = field(default_factory=dict)
    tool_results: Mapping[str, ToolOutput] = field(default_factory=dict)
    instructions: Mapping[str, str] = field(default_factory=dict)
    prompt: str | None = None

    def record(self) -> dict[str, Any]:
        """Return the changes as the fork's metadata records them."""
        return {
            "models": {role: _names(m) for role, m in sorted(self.models.items())},
            "tool_results": sorted(self.tool_results),
            "instructions": sorted(self.instructions),
            "prompt": self.prompt is not None,
        }


def _names(model: ModelArg | str) -> list[str]:
    if isinstance(model, str):
        return [model]
    return [m.name for chain in model_chains(model).values() for m in chain]


# long: one linear story — read, check, fork, build the seams, run, report
def rerun(
    engine: Engine,
    session_id: str,
    *,
    run: str | None = None,
    changes: Changes | None = None,
    model: ModelArg | None = None,
    tools: Sequence[Tool] | None = None,
    title: str | None = None,
    team: Team | None = None,
) -> RerunReport:
    """Fork ``session_id`` where ``run`` started and re-execute the run there.

    ``team``: the run's team, for the output models of its typed roles (the recorded
    team is what the rerun goes on with).

    Raises:
        UsageError: no such run, an unknown role, an unknown tool call id, a bad prompt,
            or a team with typed output and no ``team`` giving its models (nothing is
            written).
    """
    changes = changes or Changes()
    sid = validate_session_id(session_id)
    engine.store.read_session(sid)
    engine.refuse_if_read_only(f"rerunning a run of {sid}")
    by_run, mains = read_recording(engine.store, sid)
    run_id = _pick_run(sid, run, mains)
    recorded = engine.store.read_runs_under(sid, run_id)
    started = run_started_of(by_run[run_id])
    inputs = RunInputs.from_metadata(started.metadata)
    _check(sid, run_id, inputs, recorded, changes, typed_given=team is not None)
    record = _team_with(inputs.team, changes.instructions)
    base = _chains(engine, inputs, model, changes.models)  # a bad spec: refused here
    fork = fork_session(
        engine,
        sid,
        started.start_node_id,
        title=title,
        extra={RERUN_KEY: {"run_id": run_id, **changes.record()}},
    )
    fork_run = main_run_id(fork, 1)
    served = served_from(recorded, parent=(sid, run_id), fork=(fork, fork_run))
    chains: Chains = {r: [ServedModel(m, served) for m in c] for r, c in base.items()}
    registry = ToolRegistry(tools) if tools is not None else recorded_tools(inputs)
    wrapped = ToolRegistry(
        ServedTool(t, served, changes.tool_results, live=tools is not None)
        for t, _ in registry.with_specs()
    )
    roster = roster_from_record(record, wrapped)
    if team is not None:
        roster = _with_output_models(roster, team, sid, run_id)
    new_inputs = msgspec.structs.replace(
        inputs,
        create_agent=True,
        models=model_names(chains),
        tools=tool_records(roster.tools),
        team=record,
        **_prompt_fields(changes.prompt),
    )
    request = RunRequest(run_id=fork_run, parent_node_id=started.start_node_id, inputs=new_inputs)
    outcome = _execute(engine, fork, request, chains, roster, inputs)
    return RerunReport(
        session_id=fork,
        parent_session_id=sid,
        run_id=run_id,
        fork_run_id=fork_run,
        fork_node_id=started.start_node_id,
        changes=changes.record(),
        served_calls=served.served,
        live_calls=served.live,
        saved_usage=served.saved,
        served_tool_calls=served.served_tools,
        edited_tool_calls=sorted(set(served.edited)),
        outcome=outcome,
    )


def _pick_run(sid: str, run: str | None, mains: list[str]) -> str:
    if not mains:
        raise UsageError(f"session {sid} has no run to rerun")
    if run is None:
        return mains[-1]
    for candidate in (run, f"{sid}:{run}"):
        if candidate in mains:
            return candidate
    shown = ", ".join(relative(sid, m) for m in mains)
    raise UsageError(f"session {sid} has no main run {quoted(run)} (its runs: {shown})")


def _check(
    sid: str,
    run_id: str,
    inputs: RunInputs,
    recorded: list[StoredEvent],
    changes: Changes,
    *,
    typed_given: bool,
) -> None:
    """Refuse, before anything is written, a change that names nothing of the run, or a
    typed team whose output models are not ``typed_given``."""
    roles = _roles(inputs, recorded)
    for role in [*changes.models, *changes.instructions]:
        if role not in roles:
            raise UsageError(
                f"run {relative(sid, run_id)} has no role {quoted(role)}"
                f" (its roles: {', '.join(sorted(roles))})"
            )
    if changes.instructions and inputs.team is None:
        raise UsageError(
            f"run {relative(sid, run_id)} used the default team, which records no role"
            " instructions to change"
        )
    calls = {
        e.event.tool_call_id: e.event.tool_name
        for e in recorded
        if isinstance(e.event, ToolCallStarted)
    }
    for call_id in changes.tool_results:
        if call_id not in calls:
            listed = ", ".join(f"{c} ({name})" for c, name in list(calls.items())[:6])
            more = f" and {len(calls) - 6} more" if len(calls) > 6 else ""
            raise UsageError(
                f"run {relative(sid, run_id)} has no tool call {quoted(call_id)}"
                f" (its tool calls: {listed or 'none'}{more})"
            )
    if changes.prompt is not None:
        check_prompt(changes.prompt)
    typed = needs_output_models(inputs.team)
    if typed and not typed_given:
        raise UsageError(
            f"run {relative(sid, run_id)} has typed output (roles {', '.join(typed)}):"
            " pass its team to rerun it (team=…, or clew rerun --team FILE), its output"
            " models are taken from it"
        )


def _with_output_models(roster: Roster, team: Team, sid: str, run_id: str) -> Roster:
    """Return ``roster`` (rebuilt from the recording) with each typed role's output model
    taken from ``team``, by role name, as a resume does.

    Raises:
        UsageError: ``team`` gives a typed role of the run no output model.
    """
    own = {t.name for t in team.tools}
    extra = [t for t, _ in roster.tools.with_specs() if t.name not in own]
    # Only its output models are taken: its model specs stand for their names.
    given, _ = resolve(team, extra, RecordedModel)
    roles = dict(roster.roles)
    for name, role in roles.items():
        if role.output is None:
            continue
        theirs = given.roles.get(name)
        if theirs is None or theirs.output is None or theirs.output.model is None:
            raise UsageError(
                f"run {relative(sid, run_id)} has typed output for role {quoted(name)}, and"
                " the team given has no output model for it"
            )
        roles[name] = replace(role, output=theirs.output)
    return replace(roster, roles=roles)


def _roles(inputs: RunInputs, recorded: list[StoredEvent]) -> set[str]:
    """Return every role the run names: its chains', its team's, and those it called."""
    roles = set(inputs.models)
    team = inputs.team
    if team is not None:
        roles.update(r.name for r in team.roles)
        roles.update(r.name for r in (team.router, team.summarizer) if r is not None)
    roles.update(e.event.role for e in recorded if isinstance(e.event, ModelRequested))
    roles.discard("")
    return roles


def _team_with(team: TeamRecord | None, instructions: Mapping[str, str]) -> TeamRecord | None:
    """Return the recorded team with the given roles' instructions replaced."""
    if team is None or not instructions:
        return team

    def role(r: RoleRecord | None) -> RoleRecord | None:
        if r is None or r.name not in instructions:
            return r
        return msgspec.structs.replace(r, instructions=instructions[r.name])

    return msgspec.structs.replace(
        team,
        roles=[role(r) or r for r in team.roles],
        router=role(team.router),
        summarizer=role(team.summarizer),
    )


def _prompt_fields(prompt: str | None) -> dict[str, Any]:
    if prompt is None:
        return {}
    return {"prompt": prompt, "raw_prompt": prompt, "references": []}


def _chains(
    engine: Engine,
    inputs: RunInputs,
    model: ModelArg | None,
    overrides: Mapping[str, ModelArg | str],
) -> Chains:
    """Return the rerun's chains: the recorded names (built from ``model`` by name, else
    from their spec), a role's override (models, or a spec string) instead of its chain.

    Raises:
        ProviderConfigError: an override's spec cannot be built.
    """
    given = model_chains(model) if model is not None else {}
    lookup = model_lookup(given, engine.environ)

    def build(name: str) -> Model:
        try:
            return lookup(name)
        except ClewError as e:
            return Unavailable(name, str(e))

    chains: Chains = {role: [build(n) for n in names] for role, names in inputs.models.items()}
    for role, arg in overrides.items():
        if isinstance(arg, str):
            chains[role] = [lookup(arg)]
        else:
            chains[role] = [m for chain in model_chains(arg).values() for m in chain]
    return chains


def _execute(
    engine: Engine,
    fork: str,
    request: RunRequest,
    chains: Chains,
    roster: Roster,
    inputs: RunInputs,
) -> RunOutcome:
    """Run the rerun on this thread, as a prepared main run of the fork."""

    def build() -> tuple[SessionEnv, RunRequest]:
        return engine.env(fork, chains, roster.tools, inputs.settings, roster=roster), request

    return execute_prepared(owned_run(engine, fork, build))


# --- served -------------------------------------------------------------------------------

Answer = ModelResponded | ModelFailed


@dataclass
class Served:
    """The recorded answers of a run, by request hash, and what the rerun took of them.

    ``rename`` maps the fork's ids back to the parent's: a request of the fork's run is
    hashed as the parent's run would have sent it.
    """

    answers: dict[str, deque[Answer]]
    tool_results: dict[str, ToolCallFinished | ToolFailed]
    tool_args: dict[str, dict[str, Any]]
    rename: list[tuple[re.Pattern[bytes], bytes]]
    served: int = 0
    live: int = 0
    saved: Usage = field(default_factory=Usage)
    served_tools: int = 0
    edited: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, request: ModelRequest) -> Answer | None:
        """Return the recorded answer of ``request`` (counted), or None (a live call)."""
        data = encode(request)
        for pattern, replacement in self.rename:
            data = pattern.sub(replacement, data)
        key = stable_hash(data, 24)
        with self.lock:
            queue = self.answers.get(key)
            if not queue:
                self.live += 1
                return None
            answer = queue.popleft()
            self.served += 1
            if isinstance(answer, ModelResponded):
                self.saved = _add(self.saved, answer.usage)
            return answer


def served_from(
    events: Iterable[StoredEvent],
    *,
    parent: tuple[str, str],
    fork: tuple[str, str],
) -> Served:
    """Index a recorded run's events (the run and its workers') for a rerun.

    ``parent`` and ``fork``: (session id, main run id) of the recording and of the rerun.
    """
    hashes: dict[tuple[str | None, int, int], str] = {}
    answers: dict[str, deque[Answer]] = {}
    results: dict[str, ToolCallFinished | ToolFailed] = {}
    args: dict[str, dict[str, Any]] = {}
    for stored in events:
        ev = stored.event
        if isinstance(ev, ModelRequested):
            hashes[(stored.run_id, ev.call_index, ev.attempt)] = ev.request_hash
        elif isinstance(ev, ModelResponded | ModelFailed):
            h = hashes.get((stored.run_id, ev.call_index, ev.attempt))
            if h is not None:
                answers.setdefault(h, deque()).append(ev)
        elif isinstance(ev, ToolCallStarted):
            args[ev.tool_call_id] = ev.arguments
        elif isinstance(ev, ToolCallFinished | ToolFailed):
            results[ev.tool_call_id] = ev
    (psid, prun), (fsid, frun) = parent, fork
    rename = [
        (re.compile(re.escape(frun.encode()) + rb"(?![0-9])"), prun.encode()),
        (re.compile(re.escape(fsid.encode())), psid.encode()),
    ]
    return Served(answers=answers, tool_results=results, tool_args=args, rename=rename)


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
    )


class ServedModel:
    """A model that answers a recorded request from the recording, else asks ``inner``."""

    def __init__(self, inner: Model, served: Served) -> None:
        self.name = inner.name
        self._inner = inner
        self._served = served
        window = getattr(inner, "context_window", None)
        if window is not None:
            self.context_window = window

    def complete(self, request: ModelRequest) -> ModelResponse:
        answer = self._served.take(request)
        if answer is None:
            return self._inner.complete(request)
        if isinstance(answer, ModelFailed):
            raise ModelError(answer.message, status=answer.status, error_type=answer.error_type)
        return ModelResponse(
            content=answer.content, usage=answer.usage, stop_reason=answer.stop_reason
        )


class Unavailable:
    """A model a rerun cannot build (a recorded name that is no provider spec): a call
    that is not served from the recording fails, recorded as ``model_failed``."""

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self._why = why

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError(
            f"rerun: model {self.name} has no recorded reply for this request and cannot be"
            f" asked live ({self._why}); pass it (model=…, clew rerun --with ROLE=SPEC)",
            error_type="ModelUnavailable",
        )


class ServedTool:
    """A tool whose calls get an edited result, else their recorded one, else run live."""

    def __init__(self, inner: Tool, served: Served, edits: Mapping[str, ToolOutput], live: bool):
        self.name = inner.name
        self.description = inner.description
        self.args_model: type[pydantic.BaseModel] = inner.args_model
        self.idempotent = inner.idempotent
        self.spec: ToolSpec = spec_of(inner)
        for attr in ("in_doubt", "timeout_s", "needs_approval"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))
        self._inner = inner
        self._served = served
        self._edits = edits
        self._live = live

    def call(self, args: pydantic.BaseModel, ctx: ToolContext | None = None) -> ToolOutput:
        call_id = ctx.tool_call_id if ctx is not None else ""
        if call_id in self._edits:
            with self._served.lock:
                self._served.edited.append(call_id)
            return self._edits[call_id]
        recorded = self._served.tool_results.get(call_id)
        dumped = args.model_dump(mode="json", exclude_unset=True)
        if recorded is not None and self._served.tool_args.get(call_id) == dumped:
            with self._served.lock:
                self._served.served_tools += 1
            return _replayed(recorded)
        if not self._live:
            raise NotRecorded(
                f"tool {self.name}: call {call_id} has no recorded result and no live tool"
                " was given to the rerun"
            )
        return call_tool(self._inner, args, ctx)


def _replayed(recorded: ToolCallFinished | ToolFailed) -> ToolOutput:
    """Return a recorded outcome as the tool's output (a failure raised again)."""
    if isinstance(recorded, ToolFailed):
        error: type[Exception] = type(recorded.error_type, (Exception,), {})
        raise error(recorded.message)
    blocks: list[ContentBlock] = list(recorded.content)
    return blocks or None
