"""``ScriptedModel``: a deterministic model driven by a JSON script.

What tests and ``clew demo`` use. The script is a list of rules; the first rule
whose ``role`` / ``phase`` / ``contains`` match the request answers it, with
``replies[turn]`` where *turn* is the number of assistant messages already in
the request (the last reply repeats). A reply is plain text, a JSON value, tool
calls (with optional text), or an error. See docs/runtime.md for the format.

``stream`` yields the reply's text word by word (``delay_ms`` spread over the words),
then the response ``complete`` returns; a reply's ``stream_cut_after: N`` cuts the first
stream of that request after N pieces (``StreamInterrupted``), so the next attempt
streams it whole.
"""

from __future__ import annotations

import json
import operator
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pydantic

from actors.errors import ScriptError
from actors.models.protocol import (
    STREAM_INTERRUPTED,
    ModelRequest,
    ModelResponse,
    RequestHasher,
    StopReason,
    StreamItem,
    request_hash,
    same_prefix,
)
from eventlog.blocks import ContentBlock, JsonBlock, Message, TextBlock, ToolCallBlock, text_of
from eventlog.errors import ModelError, UnsafeFile
from eventlog.events import Usage
from eventlog.regular_files import MIB, read_regular_file

#: The largest script file read. The demo's script is ~3 KB and a long hand-written test
#: script a few hundred KB; 16 MiB leaves room for generated ones while ``/dev/zero``, a
#: FIFO or a runaway file is refused at once instead of filling the memory.
MAX_SCRIPT_BYTES = 16 * MIB


class ScriptedToolCall(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = {}


#: The longest delay a script (or ``--slow``) may ask for before a reply: 10 minutes.
#: Bounded so a typo cannot overflow ``time.sleep`` (``9999999999999`` ms did) or park a
#: run for years.
MAX_DELAY_MS = 600_000
#: How deep a script's JSON may nest. Real scripts nest < 10 levels; the bound keeps a
#: hostile file from exhausting the recursion limit anywhere downstream (pydantic, msgspec,
#: the store's encoder).
MAX_SCRIPT_DEPTH = 100
#: Conversations a model remembers (to measure and hash their requests) before starting over.
_CONVERSATION_LIMIT = 256
DelayMs = Annotated[int, pydantic.Field(ge=0, le=MAX_DELAY_MS)]


class ScriptedReply(pydantic.BaseModel):
    """One scripted answer. Exactly one of text / json / tool_calls / error is the body."""

    model_config = pydantic.ConfigDict(extra="forbid")
    text: str | None = None
    json_: Any = pydantic.Field(default=None, alias="json")
    tool_calls: list[ScriptedToolCall] = []
    error: str | None = None
    status: int | None = None
    #: One of the normalised stop reasons (a provider's own word is refused).
    stop_reason: StopReason | None = None
    delay_ms: DelayMs | None = None
    #: When streamed, the first attempt yields this many pieces of text, then fails.
    stream_cut_after: int | None = pydantic.Field(default=None, ge=0)

    @pydantic.model_validator(mode="after")
    def _one_body(self) -> ScriptedReply:
        if self.text is None and self.json_ is None and not self.tool_calls and self.error is None:
            raise ValueError("a reply needs one of: text, json, tool_calls, error")
        return self


class ScriptRule(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    role: str | None = None
    phase: str | None = None
    contains: str | None = None
    replies: list[ScriptedReply] = pydantic.Field(min_length=1)


class Script(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    delay_ms: DelayMs = 0
    #: The context window the model declares, in tokens (docs/context.md); None: none.
    context_window: int | None = pydantic.Field(default=None, gt=0)
    rules: list[ScriptRule] = pydantic.Field(min_length=1)


def check_script_values(data: object) -> None:
    """Refuse a script no run could record: too deep, or holding text that is not Unicode.

    A JSON string may spell a lone surrogate (``"\\udcff"``): Python decodes it, but no
    event holding it can be stored, so a run would fail half-way instead of up front.

    Raises:
        ScriptError: naming the problem.
    """
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:  # iterative: the depth is what is being checked
        value, depth = stack.pop()
        if isinstance(value, dict | list) and depth > MAX_SCRIPT_DEPTH:
            raise ScriptError(f"script nests deeper than {MAX_SCRIPT_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((k, depth) for k in value)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ScriptError(
                    f"script holds text that is not valid Unicode ({value[e.start]!r} at"
                    f" character {e.start} of a string)"
                ) from e


def load_script(source: str | Path | dict[str, Any]) -> Script:
    """Parse a script from a dict, a JSON string or a path to a JSON file.

    Raises:
        ScriptError: with one sentence naming the problem.
    """
    try:
        if isinstance(source, dict):
            data = source
        elif isinstance(source, Path) or not str(source).lstrip().startswith("{"):
            data = json.loads(_read_script_file(Path(source)))
        else:
            data = json.loads(str(source))
        check_script_values(data)
        return Script.model_validate(data)
    except UnsafeFile as e:
        raise ScriptError(f"cannot read script {e}") from e
    except OSError as e:
        raise ScriptError(f"cannot read script {source}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        byte = e.object[e.start]
        raise ScriptError(f"script is not UTF-8 text: byte {byte:#04x} at offset {e.start}") from e
    except json.JSONDecodeError as e:
        raise ScriptError(f"script is not valid JSON: {e}") from e
    except RecursionError as e:
        raise ScriptError(f"script nests deeper than {MAX_SCRIPT_DEPTH} levels") from e
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ScriptError(f"invalid script at {loc or '(root)'}: {first['msg']}") from e


def _read_script_file(path: Path) -> str:
    """Return the text of the script file at ``path``: a regular file of at most 16 MiB.

    Raises:
        UnsafeFile: a FIFO, a device, a directory, or over :data:`MAX_SCRIPT_BYTES`.
        OSError: it cannot be read.
    """
    return read_regular_file(path, MAX_SCRIPT_BYTES, "a model script").decode("utf-8")


class _Conversation:
    """What a :class:`ScriptedModel` knows of one conversation: the messages it has
    measured (the earlier answers among them, their characters: running totals after
    each message) and its request hasher. A request goes on from the longest prefix of
    its messages that are the ones seen (the same objects)."""

    __slots__ = ("answers", "chars", "hasher", "lock", "seen")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hasher = RequestHasher()
        self.seen: list[Message] = []
        #: ``answers[i]``, ``chars[i]``: the totals over ``seen[:i]``.
        self.answers = [0]
        self.chars = [0]

    def tally(self, messages: list[Message]) -> tuple[int, int]:
        """Return (the assistant messages, the characters usage counts) of ``messages``."""
        with self.lock:
            seen, answers, chars = self.seen, self.answers, self.chars
            same = (
                min(len(seen), len(messages))
                if all(map(operator.is_, seen, messages))
                else same_prefix(seen, messages)
            )
            del seen[same:], answers[same + 1 :], chars[same + 1 :]
            for m in messages[same:]:
                answers.append(answers[-1] + (m.role == "assistant"))
                chars.append(
                    chars[-1]
                    + sum(
                        len(json.dumps(b.data))
                        if isinstance(b, JsonBlock)
                        else len(getattr(b, "text", ""))
                        for b in m.content
                    )
                )
                seen.append(m)
            return answers[-1], chars[-1]


class ScriptedModel:
    """A deterministic ``Model``; ``delay_ms`` (or the script's) sleeps before each reply.

    ``context_window`` (or the script's ``"context_window"``) declares a window in tokens,
    so a test can drive compaction with a small one.
    """

    def __init__(
        self,
        script: Script | str | Path | dict[str, Any],
        *,
        name: str = "scripted",
        delay_ms: int | None = None,
        context_window: int | None = None,
    ) -> None:
        self.script = script if isinstance(script, Script) else load_script(script)
        if delay_ms is not None and not 0 <= delay_ms <= MAX_DELAY_MS:
            raise ScriptError(f"delay_ms must be 0 to {MAX_DELAY_MS} ms, not {delay_ms}")
        if context_window is not None and context_window <= 0:
            raise ScriptError(
                f"context_window must be a positive number of tokens, not {context_window}"
            )
        self.name = name
        self._delay_ms = self.script.delay_ms if delay_ms is None else delay_ms
        # Requests whose stream was already cut (``stream_cut_after``), by request hash.
        self._cut: set[str] = set()
        self._lock = threading.Lock()
        self._conversations: dict[tuple[str, str, int], _Conversation] = {}
        self.context_window = (
            self.script.context_window if context_window is None else context_window
        )

    def _rule_for(self, request: ModelRequest) -> ScriptRule:
        last_user = ""
        for m in reversed(request.messages):
            if m.role == "user":
                last_user = text_of(m.content)
                break
        for rule in self.script.rules:
            if rule.role is not None and rule.role != request.role:
                continue
            if rule.phase is not None and rule.phase != request.phase:
                continue
            if rule.contains is not None and rule.contains not in last_user:
                continue
            return rule
        raise ModelError(
            f"scripted model: no rule for role={request.role!r} phase={request.phase!r}"
        )

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` with its scripted reply, after the reply's delay."""
        reply = self._reply_for(request)
        delay = self._delay_of(reply)
        if delay:
            time.sleep(delay / 1000)
        return self._response(request, reply)

    def stream(self, request: ModelRequest) -> Iterator[StreamItem]:
        """Yield the reply's text word by word, then the response ``complete`` returns.

        The delay is spread over the pieces (a sleep before each). A reply with
        ``stream_cut_after: N`` yields N pieces, then raises ``ModelError`` with
        ``error_type="StreamInterrupted"`` — on the first stream of that request only
        (this model remembers it), so the next attempt streams the reply whole.
        """
        reply = self._reply_for(request)
        pieces = text_pieces(reply.text or "")
        delay = self._delay_of(reply) / 1000
        cut = reply.stream_cut_after if self._first_cut(request, reply) else None
        for done, piece in enumerate(pieces):
            if cut is not None and done >= cut:
                break
            if delay:
                time.sleep(delay / len(pieces))
            yield piece
        if cut is not None:
            raise ModelError(
                f"scripted model: stream cut after {min(cut, len(pieces))} pieces of text",
                retryable=True,
                error_type=STREAM_INTERRUPTED,
            )
        if delay and not pieces:
            time.sleep(delay)
        yield self._response(request, reply)

    def _first_cut(self, request: ModelRequest, reply: ScriptedReply) -> bool:
        """Return whether this stream of ``request`` is the one its reply cuts."""
        if reply.stream_cut_after is None:
            return False
        key = request_hash(request)
        with self._lock:
            if key in self._cut:
                return False
            self._cut.add(key)
            return True

    def _reply_for(self, request: ModelRequest) -> ScriptedReply:
        rule = self._rule_for(request)
        turn = self._tally(request)[0]
        return rule.replies[min(turn, len(rule.replies) - 1)]

    def _conversation(self, request: ModelRequest) -> _Conversation:
        """Return what this model knows of ``request``'s conversation (by its role, phase
        and first message): a conversation's requests share their earlier messages, so a
        call measures and hashes only the new ones, as the runtime's hasher does."""
        first = id(request.messages[0]) if request.messages else 0
        key = (request.role, request.phase, first)
        with self._lock:
            known = self._conversations.get(key)
            if known is None:
                if len(self._conversations) > _CONVERSATION_LIMIT:
                    self._conversations.clear()
                known = self._conversations[key] = _Conversation()
        return known

    def _tally(self, request: ModelRequest) -> tuple[int, int]:
        """Return (the model's earlier answers, the characters usage counts) of ``request``."""
        return self._conversation(request).tally(request.messages)

    def _request_hash(self, request: ModelRequest) -> str:
        """Return ``request_hash(request)``, hashing only what is new (see _conversation)."""
        known = self._conversation(request)
        with known.lock:
            return known.hasher.hash(request)

    def _delay_of(self, reply: ScriptedReply) -> int:
        return reply.delay_ms if reply.delay_ms is not None else self._delay_ms

    def _response(self, request: ModelRequest, reply: ScriptedReply) -> ModelResponse:
        """Return the response of ``reply``; raise its error if it is one."""
        if reply.error is not None:
            raise ModelError(reply.error, status=reply.status, retryable=False)
        content: list[ContentBlock] = []
        if reply.text is not None:
            content.append(TextBlock(text=reply.text))
        if reply.json_ is not None:
            content.append(JsonBlock(data=reply.json_))
        h = self._request_hash(request)[:10]
        for i, tc in enumerate(reply.tool_calls):
            content.append(ToolCallBlock(id=f"call_{h}_{i}", name=tc.name, arguments=tc.arguments))
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        in_chars = self._tally(request)[1]
        out_chars = len(reply.text or "") + (
            len(json.dumps(reply.json_)) if reply.json_ is not None else 0
        )
        usage = Usage(input_tokens=in_chars // 4 + 1, output_tokens=out_chars // 4 + 1)
        return ModelResponse(content=content, usage=usage, stop_reason=stop, model=self.name)


_PIECE = re.compile(r"\s*\S+\s*|\s+")


def text_pieces(text: str) -> list[str]:
    """Return ``text`` cut into pieces of one word each (with its spaces): they join to it."""
    return _PIECE.findall(text)
