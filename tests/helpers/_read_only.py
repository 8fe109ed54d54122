"""Run a real process on a real read-only mount.

The tests run as root, and root ignores file modes, so ``chmod a-w`` alone proves
nothing. Instead the child runs in a private mount namespace (``unshare --mount``) where
the directories are bind-mounted onto themselves read-only: every write fails with
EROFS, as on a read-only disk. The mounts die with the child; nothing outside it sees
them. Where that is impossible (not root, no ``unshare``), the tests skip with a reason.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from _processes import child_env


def _mount_script(paths: Sequence[Path], argv: Sequence[str]) -> str:
    mounts = [
        f"mount --bind {q} {q} && mount -o remount,ro,bind {q} {q}"
        for q in (shlex.quote(str(p)) for p in paths)
    ]
    return " && ".join([*mounts, "exec " + shlex.join(argv)])


@functools.cache
def why_no_read_only_mount() -> str | None:
    """Return why a read-only mount cannot be made here, or None when it can."""
    if shutil.which("unshare") is None:
        return "no unshare(1) to make a private read-only mount"
    with tempfile.TemporaryDirectory() as tmp:
        probe = subprocess.run(
            ["unshare", "--mount", "sh", "-c", _mount_script([Path(tmp)], ["true"])],
            capture_output=True,
            text=True,
            check=False,
        )
        written = subprocess.run(
            ["unshare", "--mount", "sh", "-c", _mount_script([Path(tmp)], ["touch", f"{tmp}/x"])],
            capture_output=True,
            check=False,
        )
    if probe.returncode != 0:
        return f"cannot bind-mount read-only (needs root): {probe.stderr.strip()[:200]}"
    if written.returncode == 0:
        return "a write on the read-only mount succeeded"
    return None


def make_read_only(root: Path) -> None:
    """Take every write bit off ``root`` and everything under it (as a user would)."""
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode):
            path.chmod(stat.S_IMODE(mode) & ~0o222)


def run_read_only(
    mounts: Sequence[Path], argv: Sequence[str], *, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as a real process that sees each of ``mounts`` mounted read-only."""
    return subprocess.run(
        ["unshare", "--mount", "sh", "-c", _mount_script(mounts, argv)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=cwd or Path.cwd(),
        timeout=120,
        check=False,
    )


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Return each file under ``root`` with its mode and bytes ("nothing changed" = equal)."""
    return {
        str(p.relative_to(root)): (p.stat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in sorted(root.rglob("*"))
    }
