"""One short human summary per event: what ``clew tail`` prints after the event type,
the details cell of ``clew timeline`` and the summary of the inspector's timeline rows.

The tool name and its arguments, the model and its tokens, a status, a goal: enough to
follow a run by eye. Ids are relative to the session; text is cut to one short line.
"""

from __future__ import annotations

import json
from typing import Any

from actors.documents.excerpts import clip, excerpt, short, short_call_id
from actors.langgraph.linear import split_array
from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    ApprovalDecided,
    ApprovalRequested,
    ArtifactCreated,
    ClarificationAnswered,
    ClarificationRequested,
    ContentStored,
    Event,
    FixIteration,
    HandoffSent,
    HookDecided,
    InDoubtResolved,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    NodeAppended,
    PlanRejected,
    ResumedPastDivergence,
    RunCancelling,
    RunEnded,
    RunResumed,
    RunStarted,
    RunWaiting,
    SessionCreated,
    TodoPlanned,
    TodoUpdated,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
    WorkerFailed,
    WorkerResultReceived,
)
from eventlog.graph_events import ChannelBlob, CheckpointSaved, CheckpointsRemoved, CheckpointWrites
from eventlog.ids import task_of

#: Longest summary: a line of ``clew tail`` stays readable on a terminal.
SUMMARY = 96


def _tokens(usage: Usage) -> str:
    return f"{usage.input_tokens}→{usage.output_tokens} tokens"


def _args(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False, default=str, separators=(",", ":"))


def _attempt(n: int) -> str:
    return f" attempt {n}" if n > 1 else ""


def summarise(sid: str, event: Event) -> str:
    """Return a one-line summary of ``event`` (of session ``sid``); "" when none helps."""
    text = _runs_and_agents(sid, event)
    if text is None:
        text = _calls(event)
    if text is None:
        text = _orchestration(sid, event)
    if text is None:
        text = _waits(sid, event)
    if text is None:
        text = _checkpoints(event)
    return clip(text or "", SUMMARY)


def _runs_and_agents(sid: str, event: Event) -> str | None:
    text: str | None = None
    match event:
        case SessionCreated(cwd=cwd):
            text = f"cwd {cwd}"
        case RunStarted(run_id=run_id, phase=phase, attempt=attempt, metadata=meta):
            text = f"{short(sid, run_id)} {phase}{_attempt(attempt)}".strip()
            if meta.get("redrive"):  # a run a re-drive started (RunInputs.redrive)
                text += f" · {meta['redrive']}"

        case RunEnded(status=status, end_reason=reason, turn_count=turns, usage=usage):
            why = "" if reason == status else f" ({reason})"
            error = f": {event.error.get('message', '')}" if event.error else ""
            text = f"{status}{why}, {turns} turns, {_tokens(usage)}{error}"
        case AgentCreated(role=role, agent_type=kind, purpose=purpose):
            text = f"{role or kind} ({kind}){': ' + purpose if purpose else ''}"
        case AgentStatusChanged(status=status):
            text = status
        case NodeAppended(node=node):
            text = f"{node.role}: {excerpt(node.content)}"
        case ActiveNodeSwitched(to_node_id=to):
            text = f"→ {short(sid, to)}"
        case ResumedPastDivergence(seq=seq, recorded_type=kind, abandoned=n):
            text = f"live from seq {seq} ({kind}); {n} recorded events no longer followed"
    return text


def _calls(event: Event) -> str | None:
    text: str | None = None
    match event:
        case ModelRequested(model=model, role=role, call_index=n, attempt=attempt):
            text = f"{role or '-'} → {model} call {n}{_attempt(attempt)}"
        case ModelResponded(model=model, usage=usage, stop_reason=stop):
            text = f"{model} {_tokens(usage)} {stop}"
        case ModelFailed(model=model, error_type=kind, message=message):
            fallback = " (falling back)" if event.will_fallback else ""
            text = f"{model} {kind}: {message}{fallback}"
        case TokenUsage(model=model, role=role, usage=usage):
            text = f"{role or '-'} {model} {_tokens(usage)}"
        case ToolCallStarted(tool_name=name, arguments=arguments):
            text = f"{name} {_args(arguments)}"
        case ToolCallFinished(tool_name=name, is_error=is_error, content=content):
            text = f"{name} {'error' if is_error else 'ok'}: {excerpt(content)}"
        case ToolFailed(tool_name=name, error_type=kind, message=message):
            text = f"{name} {kind}: {message}"
        case InDoubtResolved(tool_name=name, decision=decision, reason=reason):
            text = f"{name} {decision}{': ' + reason if reason else ''}"
    return text


def _orchestration(sid: str, event: Event) -> str | None:
    text: str | None = None
    match event:
        case HandoffSent(packet=packet):
            task = packet.task
            text = f"→ {task_of(task.id)} ({task.agent_role}): {task.goal}"
        case WorkerResultReceived(result=result):
            said = result.error or result.summary
            text = f"← {task_of(result.task_id)} {result.status}: {said}"
        case WorkerFailed(task_id=task, error_type=kind, message=message):
            text = f"{task_of(task)} {kind}: {message}"
        case PlanRejected(error=error, fallback=fallback):
            text = f"{error} → {fallback}"
        case TodoPlanned(todos=todos):
            text = f"{len(todos)} todos: {', '.join(t.id for t in todos)}"
        case TodoUpdated(todo_id=todo, status=status, note=note):
            text = f"{todo} {status}{': ' + note if note else ''}"
        case ArtifactCreated(filename=name, size_bytes=size, summary=summary):
            text = f"{name or 'artifact'} {size} bytes{': ' + summary if summary else ''}"
        case ClarificationRequested(question=question):
            text = question
        case FixIteration(iteration=n, trigger=trigger):
            text = f"iteration {n}: {trigger}"
    return text


#: Who decided an approval recorded as ``approval_decided``: a person, through ``clew
#: decide``, the inspector or ``Session.decide`` (a hook's verdict is a ``hook_decided``).
BY_A_PERSON = "by a person"


def decision_text(decision: str, reason: str, arguments: dict[str, Any] | None, by: str) -> str:
    """Return how an approval was decided: ``approve by a person``, ``deny by the
    before_tool hook: too much``, ``edit by a person → {"amount":40}``."""
    why = f": {reason}" if reason else ""
    edited = f" → {_args(arguments)}" if arguments is not None else ""
    return f"{decision} {by}{why}{edited}"


def call_shown(event: Event) -> str:
    """Return the short tool call id a human row of a tool call starts with, as
    ``git log --oneline`` starts with a commit's: ``a400ce979e_0`` (what ``clew approve``
    and ``clew rerun --tool-result`` take); "" for an event of no call. An approval's
    request is not one: its row ends with the whole id already (what a person decides)."""
    match event:
        case (
            ToolCallStarted(tool_call_id=call)
            | ToolCallFinished(tool_call_id=call)
            | ToolFailed(tool_call_id=call)
            | InDoubtResolved(tool_call_id=call)
            | ApprovalDecided(tool_call_id=call)
            | HookDecided(tool_call_id=str() as call)
        ):
            return short_call_id(call)
    return ""


def approval_text(event: ApprovalRequested) -> str:
    """Return what an approval asks for: ``pay {"amount":42} [payer]``."""
    return f"{event.tool_name} {_args(event.arguments)} [{event.role or '-'}]"


def _waits(sid: str, event: Event) -> str | None:
    """Waiting for a person, hooks, cancellations, stored texts."""
    text: str | None = None
    match event:
        case ApprovalRequested(reason=reason, tool_call_id=call):
            # named by its call id last: `clew approve SESSION CALL` takes it (or a prefix)
            text = f"{approval_text(event)}{': ' + reason if reason else ''} · {clip(call, 200)}"
        case ApprovalDecided(decision=decision, reason=reason, arguments=arguments):
            text = decision_text(decision, reason, arguments, BY_A_PERSON)
        case RunWaiting(reason=reason, pending=pending, question=question):
            what = f"{len(pending)} pending" if reason == "approval" else question
            text = f"{reason}: {what}"
        case RunResumed(run_id=run_id):
            text = short(sid, run_id)
        case ClarificationAnswered(answer=answer):
            text = answer
        case HookDecided(hook=hook, decision=decision, reason=reason, arguments=arguments):
            text = decision_text(decision, reason, arguments, f"by the {hook} hook")
        case RunCancelling(reason=reason, source=source, during=during, scope=scope):
            text = f"{scope} by {source}{' during ' + during if during else ''}: {reason}"
        case ContentStored(kind=kind, content_hash=digest, text=stored):
            text = f"{kind} {digest[:12]} ({len(stored)} characters)"
    return text


def _channel(blob: ChannelBlob) -> str:
    """A LangGraph channel of a checkpoint: ``messages +2`` for an increment."""
    if blob.extends is None:
        return blob.channel
    split = split_array(blob.data)
    return f"{blob.channel} +{split[0] if split else '?'}"


def _checkpoints(event: Event) -> str | None:
    """The LangGraph checkpointer's events (docs/langgraph.md)."""
    text: str | None = None
    match event:
        case CheckpointSaved(checkpoint_ns=ns, step=step, source=source, channels=channels):
            where = f"{ns} " if ns else ""
            at = f"step {step} " if step is not None else ""
            changed = ", ".join(_channel(c) for c in channels)
            text = f"{where}{at}{source}: {changed or 'no new values'}"
        case CheckpointWrites(task_path=path, task_id=task, writes=writes):
            text = f"{path or task}: {', '.join(w.channel for w in writes)}"
        case CheckpointsRemoved(removed=removed, reason=reason):
            text = f"{len(removed)} checkpoints: {reason}"
    return text
