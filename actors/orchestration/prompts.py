"""What the agents are told: system prompts, the isolation constraints, prompt assembly.

A worker's prompt holds the original request, the results the Brain chose to pass,
and its handoff packet — nothing else (seed 000's isolation rule). The primary gets
worker summaries, never transcripts.
"""

from __future__ import annotations

import msgspec

from actors.orchestration.roster import DISPATCH, ResolvedRole, Roster
from eventlog.packets import HandoffPacket, WorkerResult

PRIMARY_SYSTEM = (
    "You are the primary agent. Answer the user's request using the worker results you"
    " are given (summaries, not transcripts)."
)

WORKER_SYSTEM = (
    "You are a worker agent with one isolated task. Follow the constraints of your"
    " handoff packet and reply in the expected shape."
)

ISOLATION_CONSTRAINTS = [
    "Run as the assigned role only.",
    "Treat the packet as a Brain-to-agent transfer; Brain owns orchestration context,"
    " the worker owns only its isolated task context.",
    "Use only this handoff, the original user request, and explicit worker results"
    " supplied in the prompt.",
    "Echo taskId / parentId exactly as provided; Brain values are authoritative.",
    "Do not assume access to the full root transcript or another worker's private chain"
    " of thought.",
    "Return concise structured findings for the primary agent.",
]


EXPECTED_RESULT = (
    'Reply with JSON: {"taskId": str, "parentId": str, "summary": str, "risks": [str],'
    ' "nextQuestions": [str], "artifacts": [{"kind": "file|thread|summary|artifact",'
    ' "uri": str}]} — or plain text, which is taken as the summary.'
)


ROUTER_SYSTEM = (
    "You are the router of a multi-agent runtime. Read the user's request and reply with"
    ' one JSON plan: {"primary_role": str, "workers": [{"id": str, "role": str,'
    ' "goal": str, "deps": [worker ids]}], "review": bool, "clarification":'
    ' {"required": bool, "question": str, "reason": str, "missing_fields": [str],'
    ' "options": [str]}}.'
)


#: The router's plan shape from flow 2: a task name, and ``continue`` per worker.
ROUTER_SYSTEM_V2 = (
    "You are the router of a multi-agent runtime. Read the user's request and reply with"
    ' one JSON plan: {"task_name": str (a short name for the task, like'
    ' "fix-login-bug"), "primary_role": str, "workers": [{"id": str, "role": str,'
    ' "goal": str, "deps": [worker ids], "continue": bool (true: continue the context of'
    ' the last finished worker of the same role)}], "review": bool, "clarification":'
    ' {"required": bool, "question": str, "reason": str, "missing_fields": [str],'
    ' "options": [str]}}.'
)


def worker_prompt(request: str, handoff: HandoffPacket, prior: list[WorkerResult]) -> str:
    """Compose a worker's prompt: the request, the results it may use, its handoff.

    The project support section (the instruction file), when there is one, goes first
    (``instructions.with_support``).
    """
    parts = ["# Original request", request, ""]
    if prior:
        parts.append("# Results you may use")
        parts.extend(f"- {r.task_id} ({r.status}): {r.summary}" for r in prior)
        parts.append("")
    parts.append("# Your handoff")
    parts.append("```json")
    parts.append(msgspec.json.encode(handoff).decode())
    parts.append("```")
    parts.append("")
    parts.append("# Reply")
    parts.append(handoff.expected_result)
    return "\n".join(parts)


def summaries_block(
    results: list[WorkerResult],
    roles: dict[str, str],
    goals: dict[str, str] | None = None,
    request: str | None = None,
) -> str:
    """Format worker results for the primary: summaries, never transcripts.

    With ``goals`` (flow 2) each worker is shown as seed 000 lists it: role, status, goal,
    progress, summary, risks and open questions. With ``request`` (flow 4) a plan of no
    workers hands the primary the request again: its conversation ends with this user
    turn, after its own plan, and a bare "No workers ran." is what a model answers then.
    """
    if not results:
        if request is not None:
            return f"No workers ran. Answer the request yourself:\n\n{request}"
        return "No workers ran."
    if goals is not None:
        return "\n".join(["Worker results:", *(_worker_entry(r, roles, goals) for r in results)])
    lines = ["Worker results:"]
    for r in results:
        line = f"- {r.task_id} [{roles.get(r.task_id, '?')}] {r.status}: {r.summary}"
        if r.risks:
            line += f" | risks: {'; '.join(r.risks)}"
        if r.next_questions:
            line += f" | open questions: {'; '.join(r.next_questions)}"
        lines.append(line)
    return "\n".join(lines)


def _worker_entry(r: WorkerResult, roles: dict[str, str], goals: dict[str, str]) -> str:
    """One worker of the primary's summaries (flow 2): a head line, then its fields."""
    p = r.progress
    progress: str = p.status
    if p.total_steps:
        progress += f" ({p.completed_steps}/{p.total_steps} steps)"
    if p.note:
        progress += f" — {p.note}"
    lines = [
        f"- {r.task_id} [{roles.get(r.task_id, '?')}] {r.status}",
        f"  goal: {goals.get(r.task_id, '?')}",
        f"  progress: {progress}",
        f"  summary: {r.summary}",
    ]
    if r.risks:
        lines.append(f"  risks: {'; '.join(r.risks)}")
    if r.next_questions:
        lines.append(f"  open questions: {'; '.join(r.next_questions)}")
    return "\n".join(lines)


# --- a team's prompts ---------------------------------------------------------------------
# With the default team every function below returns the built-in text unchanged, so a
# run without a team sends exactly the requests it always sent.


def role_system(base: str, roster: Roster, role: ResolvedRole, extra: str = "") -> str:
    """Compose an agent's system prompt: the team, its role, the built-in ``base``, extras."""
    parts = [roster.instructions] if roster.instructions else []
    if role.listed:
        head = f"# Your role: {role.name}"
        if role.description:
            head += f" — {role.description}"
        parts.append(f"{head}\n{role.instructions}".strip())
    parts.append(base)
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def primary_system(
    roster: Roster, role: ResolvedRole, dispatch_limit: int, support: str = ""
) -> str:
    """Return the primary's system prompt (with the dispatch tool, when it has it, and the
    project support section, when the project has an instruction file)."""
    extra = [support] if support else []
    if dispatch_limit:
        extra.append(
            f"You may call the `{DISPATCH}` tool (at most {dispatch_limit} times) to have a"
            " worker of another role do a task to completion; it returns that worker's result."
        )
    if role.output is not None:
        extra.append(role.output.instruction())
    return role_system(PRIMARY_SYSTEM, roster, role, "\n\n".join(extra))


def expected_result(role: ResolvedRole) -> str:
    """Return the reply shape a worker's handoff asks for."""
    return role.output.instruction() if role.output is not None else EXPECTED_RESULT


def router_system(roster: Roster, flow: int = 1) -> str:
    """Return the router's system prompt: with a team, its catalogue and instructions."""
    router = roster.router_role()
    parts = [roster.instructions] if roster.instructions else []
    parts.append(ROUTER_SYSTEM_V2 if flow >= 2 else ROUTER_SYSTEM)
    if roster.catalogued:
        parts.append(catalogue(roster))
    if router.instructions:
        parts.append(router.instructions)
    return "\n\n".join(parts)


def catalogue(roster: Roster) -> str:
    """Return the role catalogue the router plans with: names, descriptions, tool names."""
    lines = ["# The roles you may plan with (a plan naming any other role is rejected)"]
    for role in roster.roles.values():
        tools = ", ".join(role.tools.names()) or "none"
        about = f" — {role.description}" if role.description else ""
        lines.append(f"- {role.name}{about} (tools: {tools})")
    if roster.primary is not None:
        lines.append(f"The primary role, who writes the answer, is {roster.primary}.")
    else:
        lines.append("Choose the primary_role, who writes the answer, among these roles.")
    if roster.reviewer is not None:
        lines.append(f'With "review": true, {roster.reviewer} reviews the answer.')
    else:
        lines.append('This team has no reviewer: set "review": false.')
    return "\n".join(lines)
