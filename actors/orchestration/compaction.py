"""Keep a conversation within its model's context window (docs/context.md).

Before each model call of an agent loop, :class:`ContextGuard` estimates the request
(system prompt, tool specs, messages: :mod:`projections.tokens`). When it would exceed
the role's soft input budget (``RunSettings.context_budget`` × the model's
``context_window``) the guard compacts first:

1. the context the call would see is split into what is replaced and a kept tail —
   the latest nodes, verbatim, at most a quarter of the budget, never starting at a
   tool result (it would lose its call), never reaching back past the last compaction;
2. a recorded summariser call (role ``summarizer``, phase ``compact``; a team may set
   its model, instructions and settings) summarises what is replaced;
3. a ``compaction`` node holding the summary is appended at the tip; its metadata names
   the id range it replaces and the first kept node. Later context builds start from it
   (:func:`projections.context.build_context`); nothing is deleted.

A provider's context-length error on a call triggers one compaction and one retry
(``call_model``'s ``on_too_long``). Every decision reads recorded data only (the node
tree, recorded token counts, the run's recorded windows and budget), so a replay makes
the same decisions. A run recorded before clew managed context has no guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from actors.models.tools import ToolRegistry
from actors.orchestration.artifact_tool import with_artifact_reader
from actors.orchestration.env import SessionEnv
from actors.orchestration.loop import AgentSpec, Conversation, call_model
from actors.orchestration.roster import SUMMARIZER
from actors.recording.inputs import ContextRecord
from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    JsonBlock,
    Message,
    ResultPart,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    text_of,
)
from eventlog.errors import ModelError
from eventlog.records import NodeRow
from projections.context import build_context, context_nodes
from projections.tokens import count_blocks, count_message, count_text, count_tool

#: The kept tail takes at most this share of the budget (1/4).
TAIL_SHARE: Final = 4
#: Tokens kept free in a summariser request for its wrapping text.
_SUMMARY_SLACK: Final = 64

SUMMARIZER_SYSTEM = (
    "You compact the history of an agent's conversation so that the agent can go on with"
    " less context. Write a faithful, dense summary: the user's requests (quote the latest"
    " one word for word), the task and its constraints, decisions made, facts and results"
    " found (keep ids, names, paths and numbers exact), the tool calls made and what they"
    " returned, open questions, and what was about to happen next. Invent nothing. Reply"
    " with the summary only."
)
SUMMARY_HEAD = (
    "Summary of the conversation so far ({n} earlier nodes compacted; the full history"
    " stays in the session):\n\n"
)


def guard_for(env: SessionEnv) -> ContextGuard | None:
    """Return a new conversation's guard; None for a run recorded before clew had one."""
    return ContextGuard(env, env.context) if env.context is not None else None


class ContextGuard:
    """The context hooks of one conversation (``loop.ContextHooks``)."""

    def __init__(self, env: SessionEnv, record: ContextRecord) -> None:
        self.env = env
        self.record = record
        # Estimates by message identity: a long conversation's messages are counted once.
        self._messages: dict[int, tuple[Message, int]] = {}
        self._tools: dict[tuple[str, ...], int] = {}

    # --- counting ------------------------------------------------------------------------

    def node_tokens(self, content: list[ContentBlock], reported: int) -> int:
        """Return a node's token count: the provider's figure when there is one."""
        return reported if reported > 0 else count_blocks(content)

    def request_tokens(
        self, messages: Sequence[Message], system: str, tools: ToolRegistry | None
    ) -> int:
        """Return the estimated input tokens of a request (what the budget is checked on)."""
        total = count_text(system)
        for m in messages:
            hit = self._messages.get(id(m))
            if hit is None or hit[0] is not m:
                hit = self._messages[id(m)] = (m, count_message(m))
            total += hit[1]
        if tools is not None and len(tools):
            names = tuple(tools.names())
            if names not in self._tools:
                self._tools[names] = sum(
                    count_tool(s.name, s.description, s.parameters) for s in tools.specs()
                )
            total += self._tools[names]
        return total

    # --- the hooks -----------------------------------------------------------------------

    def before_call(self, conv: Conversation, agent: AgentSpec) -> AgentSpec:
        """Compact when the next request would exceed the budget; return the calling agent."""
        agent = with_artifact_reader(self.env, conv, agent)
        budget = self.record.budget_for(agent.role)
        if budget is not None and self._tokens(conv, agent) > budget:
            self.compact(conv, agent, budget, trigger="budget")
        return agent

    def on_overflow(self, conv: Conversation, agent: AgentSpec) -> list[Message]:
        """Compact after a context-length error (to half of what did not fit)."""
        used = self._tokens(conv, agent)
        budget = self.record.budget_for(agent.role)
        target = budget if budget is not None and budget < used else used
        self.compact(conv, agent, max(1, target // 2), trigger="context_length")
        return conv.messages

    def _tokens(self, conv: Conversation, agent: AgentSpec) -> int:
        return self.request_tokens(conv.messages, agent.system, agent.tools)

    # --- compaction ----------------------------------------------------------------------

    def compact(self, conv: Conversation, agent: AgentSpec, budget: int, *, trigger: str) -> bool:
        """Summarise the head of ``conv``'s context into a ``compaction`` node.

        Returns:
            False when nothing could be compacted (the context is one kept tail, or the
            summariser failed: its failure is recorded, the call goes ahead as it is).
        """
        env = self.env
        conv.rec.flush()  # the run's own nodes are read back from the store
        path = env.store.read_active_path(env.session_id, conv.tip)
        nodes = context_nodes(path)
        cut = _cut(path, nodes, budget // TAIL_SHARE)
        if cut == 0:
            return False
        replaced = nodes[:cut]
        summary = self._summarise(conv, agent, build_context(replaced), budget)
        if summary is None:
            return False
        compacted: dict[str, Any] = {
            "from": replaced[0].node_id,
            "through": replaced[-1].node_id,
            "nodes": cut,
            "tokens": sum(_tokens(n) for n in replaced),
            "kept_from": nodes[cut].node_id if cut < len(nodes) else None,
        }
        conv.append(
            "user",
            [TextBlock(text=SUMMARY_HEAD.format(n=cut) + summary)],
            node_type="compaction",
            metadata={"compacted": compacted, "trigger": trigger, "role": agent.role},
        )
        conv.rec.flush()
        conv.messages = build_context(env.store.read_active_path(env.session_id, conv.tip))
        self._messages.clear()  # the replaced messages need not stay alive for the cache
        return True

    def _summarise(
        self, conv: Conversation, agent: AgentSpec, messages: list[Message], budget: int
    ) -> str | None:
        """Ask the summariser for a summary of ``messages``; None when it failed."""
        role = self.env.team.summarizer_role()
        system = "\n\n".join(p for p in (SUMMARIZER_SYSTEM, role.instructions) if p)
        own = self.record.budget_for(SUMMARIZER) or budget
        allowance = own - count_text(system) - _SUMMARY_SLACK
        prompt = "# The conversation to summarise\n\n" + clip_to(transcript(messages), allowance)
        settings = role.settings
        if settings.max_tokens is None:
            settings = msgspec.structs.replace(
                settings, max_tokens=max(256, min(4096, budget // TAIL_SHARE))
            )
        try:
            content, _, _ = call_model(
                self.env,
                conv.rec,
                role=SUMMARIZER,
                phase="compact",
                messages=[Message(role="user", content=[TextBlock(text=prompt)])],
                system=system,
                task_id=agent.task_id,
                settings=settings,
            )
        except ModelError:
            return None  # recorded (model_failed); the call goes ahead uncompacted
        return text_of(content).strip() or "(the summariser returned no text)"


def _tokens(node: NodeRow) -> int:
    return node.token_count if node.token_count is not None else count_blocks(node.content)


def _cut(path: Sequence[NodeRow], nodes: Sequence[NodeRow], tail_budget: int) -> int:
    """Return where the kept tail of ``nodes`` starts (0: nothing can be compacted).

    The tail holds only nodes after the last compaction node of ``path`` (one summary
    covers the one before it), never starts at a tool node, and fits ``tail_budget``.
    """
    after = {n.node_id for n in path[_last_compaction(path) + 1 :]}
    cut = len(nodes)
    size = 0
    for i in range(len(nodes) - 1, 0, -1):
        node = nodes[i]
        if node.node_id not in after:
            break
        size += _tokens(node)
        if size > tail_budget:
            break
        if node.role != "tool":
            cut = i
    return cut


def _last_compaction(path: Sequence[NodeRow]) -> int:
    for i in range(len(path) - 1, -1, -1):
        if path[i].node_type == "compaction":
            return i
    return -1


def transcript(messages: Sequence[Message]) -> str:
    """Return ``messages`` as plain text, one ``role: text`` paragraph each."""
    return "\n\n".join(f"{m.role}: {_render(m.content)}" for m in messages)


def _render(blocks: Sequence[ContentBlock] | Sequence[ResultPart]) -> str:
    parts: list[str] = []
    for b in blocks:
        match b:
            case TextBlock(text=text):
                parts.append(text)
            case JsonBlock(data=data):
                parts.append(msgspec.json.encode(data).decode())
            case ArtifactRefBlock(artifact_id=aid, summary=summary):
                parts.append(f"[artifact {aid}: {summary}]")
            case ToolCallBlock(name=name, arguments=arguments):
                parts.append(f"[calls {name} {msgspec.json.encode(arguments).decode()}]")
            case ToolResultBlock(name=name, content=content, is_error=is_error):
                parts.append(f"[{name} {'error' if is_error else 'result'}: {_render(content)}]")
    return "\n".join(parts)


def clip_to(text: str, tokens: int) -> str:
    """Return ``text`` cut in the middle until its estimate is at most ``tokens``."""
    for _ in range(8):
        have = count_text(text)
        if have <= tokens:
            return text
        keep = max(0, int(len(text) * tokens / have * 0.9) - 80)
        head, tail = keep // 4, keep - keep // 4
        left_out = len(text) - head - tail
        text = f"{text[:head]}\n[… {left_out} characters left out …]\n{text[len(text) - tail :]}"
    return text[: max(0, tokens)]
