"""Checks: a team's tests of the primary's answer; a failed one starts a fix (seed 000).

A :class:`Check` is a shell command (run in the session's project directory, the answer
on its stdin, exit status 0 passes) or a Python callable (given the answer's text:
``True``/``None`` passes, ``False`` or a message fails, raising fails). After the
primary answers — and after each fix — every check runs in order; any failure starts a
fix iteration with trigger ``checks_failed`` (bounded by ``max_fix_iterations``, shared
with the review's ``changes_requested``).

A check's run is a recorded effect like a tool call: ``tool_call_started`` (tool name
``check:<name>``, id ``<run>:chk<n>``) before it runs, its outcome after
(``tool_call_finished``, ``is_error`` when it failed). A replay takes the recorded
outcome and never runs it; a check interrupted by a crash is run again on resume
(checks are idempotent by contract: they look, they do not change).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from actors.errors import TeamError
from actors.models.storable import safe_text
from eventlog.blocks import TextBlock
from eventlog.errors import ClewError
from eventlog.events import ToolCallFinished

#: The recorded tool name of check ``name``.
CHECK_PREFIX = "check:"
CHECK_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
#: The most output of a command kept in the record and shown to the primary.
MAX_CHECK_OUTPUT = 4000

#: What a check callable returns: True or None passes; False or a message fails.
CheckVerdict = bool | str | None


@dataclass(frozen=True)
class Check:
    """One check of a team: exactly one of ``command`` and ``call``."""

    name: str
    _: KW_ONLY
    #: A shell command run in the session's project directory with the answer on stdin.
    command: str | None = None
    #: A callable given the answer's text.
    call: Callable[[str], CheckVerdict] | None = None
    #: Seconds a command may run before it fails; None: no limit.
    timeout_s: float | None = 300.0

    def __post_init__(self) -> None:
        if not CHECK_NAME_RE.match(self.name):
            raise TeamError(f"team: check name {self.name!r} must match [a-zA-Z0-9_-]{{1,40}}")
        if (self.command is None) == (self.call is None):
            raise TeamError(f"team: check {self.name!r} needs exactly one of command and call")


def check_names(checks: Sequence[Check]) -> None:
    """Refuse two checks of one name.

    Raises:
        TeamError: naming the duplicate.
    """
    seen: set[str] = set()
    for c in checks:
        if c.name in seen:
            raise TeamError(f"team: two checks are named {c.name!r}")
        seen.add(c.name)


def _clip(text: str) -> str:
    text = safe_text(text.strip())
    return text if len(text) <= MAX_CHECK_OUTPUT else text[:MAX_CHECK_OUTPUT] + " …[clipped]"


def execute_check(check: Check, answer: str, project_dir: Path, call_id: str) -> ToolCallFinished:
    """Run ``check`` live on ``answer``; its verdict is the result's ``is_error``; never
    raises (a check that raises failed, with the reason)."""
    name = CHECK_PREFIX + check.name
    try:
        passed, output = _verdict(check, answer, project_dir)
    except Exception as e:  # a check that raises failed, with the reason
        passed, output = False, f"{type(e).__name__}: {e}"
    text = _clip(output) or ("passed" if passed else "failed")
    return ToolCallFinished(
        tool_call_id=call_id, tool_name=name, content=[TextBlock(text=text)], is_error=not passed
    )


def _verdict(check: Check, answer: str, project_dir: Path) -> tuple[bool, str]:
    if check.call is not None:
        verdict = check.call(answer)
        if verdict is None or verdict is True:
            return True, ""
        return False, "" if verdict is False else str(verdict)
    assert check.command is not None
    try:
        done = subprocess.run(
            check.command,
            shell=True,
            cwd=project_dir,
            input=answer.encode(),
            capture_output=True,
            timeout=check.timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {check.timeout_s}s"
    output = (done.stdout + done.stderr).decode("utf-8", "replace")
    if done.returncode != 0:
        return False, f"exit status {done.returncode}\n{output}"
    return True, output


def stand_in(name: str, command: str | None) -> Check:
    """Return a recorded check rebuilt for a replay or resume (a callable cannot be)."""
    if command is not None:
        return Check(name, command=command)

    def never(answer: str) -> CheckVerdict:
        raise ClewError(f"check {name!r} is a callable of the team: pass the team to run it")

    return Check(name, call=never)
