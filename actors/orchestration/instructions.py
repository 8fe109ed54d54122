"""The project's instruction file (``AGENTS.md`` by default): read once, recorded, shown.

Seed 000's "project support section": when a new main run starts, the file named by
``RunSettings.instructions_file`` in the session's project directory is read — a regular
file only, at most ``instructions_max_bytes`` of it (cut at a character boundary) — and
recorded in the run's inputs (:class:`~actors.recording.inputs.InstructionsRecord`). The
worker and primary prompts include that recorded text; each worker's handoff lists it
(and the prior results it was given) as ``context_refs``. A replay or a resume never
reads the file again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from actors.errors import UsageError
from actors.recording.inputs import ContextRecord, InstructionsRecord
from eventlog.errors import UnsafeFile
from eventlog.packets import ContextRef, WorkerResult
from eventlog.regular_files import MIB, read_regular_file

#: The largest instruction file read at all; the prompt gets at most the byte budget.
MAX_FILE_BYTES = 4 * MIB


def read_instructions(project: Path, name: str | None, max_bytes: int) -> InstructionsRecord | None:
    """Return the instruction file ``name`` of ``project`` as a run records it.

    None when ``name`` is None or the file does not exist. A file that is not a regular
    file, too large or not UTF-8 is refused.

    Raises:
        UsageError: the name leaves the project directory, or the file cannot be used.
    """
    if name is None:
        return None
    if max_bytes < 0:
        raise UsageError(f"instructions_max_bytes must be ≥ 0, not {max_bytes}")
    path = project / name
    if Path(name).is_absolute() or ".." in Path(name).parts:
        raise UsageError(f"the instruction file {name!r} must be a path inside the project")
    if not path.exists():
        return None
    try:
        data = read_regular_file(path, MAX_FILE_BYTES, "an instruction file")
        text = data.decode("utf-8")
    except (UnsafeFile, OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot use the instruction file {name}: {e}") from None
    clipped = data[:max_bytes].decode("utf-8", errors="ignore")
    return InstructionsRecord(
        path=name,
        text=clipped,
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        truncated=len(clipped) < len(text),
    )


def support_section(record: ContextRecord | None) -> str:
    """Return the prompt section of the recorded instruction file ("" when there is none)."""
    found = record.instructions if record is not None else None
    if found is None or not found.text.strip():
        return ""
    note = (
        f"\n\n(The file has {found.size_bytes} bytes; the first part is shown.)"
        if found.truncated
        else ""
    )
    return f"# Project instructions ({found.path})\n\n{found.text.strip()}{note}"


def with_support(record: ContextRecord | None, prompt: str) -> str:
    """Return a worker's ``prompt`` after the project support section, when there is one."""
    support = support_section(record)
    return f"{support}\n\n{prompt}" if support else prompt


def handoff_refs(record: ContextRecord | None, prior: Sequence[WorkerResult]) -> list[ContextRef]:
    """Return what a worker is given besides its handoff, as ``context_refs``.

    Empty for a run recorded before clew filled them (its handoffs replay as recorded).
    """
    if record is None:
        return []
    refs: list[ContextRef] = []
    found = record.instructions
    if found is not None and found.text.strip():
        clipped = ", clipped" if found.truncated else ""
        label = (
            f"project instructions, {found.size_bytes} bytes{clipped}, sha256 {found.sha256[:12]}"
        )
        refs.append(ContextRef(kind="file", uri=found.path, label=label))
    refs.extend(
        ContextRef(kind="summary", uri=f"worker:{r.task_id}", label=f"result ({r.status})")
        for r in prior
    )
    return refs
