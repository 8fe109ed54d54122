"""Large tool result benchmark: one tool returns ``--mb`` MB of text inside a real run.

Prints, in one run, for a session whose one worker calls a tool returning a text of
``--mb`` MB (default 50) and then answers:

- the bytes the home holds afterwards: ``sessions.sqlite`` (+ ``-wal``), the artifact
  files, and their sum, each as a multiple of the result's size;
- the peak RSS of the process that ran it, the RSS before the run (imports, runtime
  open, the text already built), and the difference, as a multiple of the result;
- the wall time of the run, and for comparison the time to write the same bytes to a
  file with fsync in the same process (the floor of storing them once, durably).

Each case runs in a fresh child process (peak RSS is per process). Not a test: numbers
depend on the machine. ``--store URL`` runs it on a PostgreSQL database instead (an empty
one: its growth is reported as the database's bytes; artifacts are rows there, in chunks).

    python benchmarks/bench_large_result.py [--mb 50] [--store postgresql://…]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pydantic

from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool
from actors.runtime.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent


def _rss_mb() -> float:
    """Return the current resident set size in MB (from /proc, Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _pg_bytes(url: str) -> int:
    import psycopg  # noqa: PLC0415 - the postgres extra, only with --store

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0


def child(work: Path, mb: int, store: str | None = None) -> dict[str, float]:
    """Run the session in this process; return the measures."""
    size = mb * 1_000_000
    line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?\n"
    text = (line * (size // len(line) + 1))[:size]
    box = [text]

    class NoArgs(pydantic.BaseModel):
        pass

    def dump(args: NoArgs) -> str:
        return box[0]

    script = {
        "rules": [
            {
                "role": "router",
                "replies": [
                    {
                        "json": {
                            "primary_role": "lead",
                            "workers": [{"id": "w1", "role": "reader", "goal": "read the dump"}],
                        }
                    }
                ],
            },
            {
                "role": "reader",
                "replies": [{"tool_calls": [{"name": "dump"}]}, {"text": "The dump was read."}],
            },
            {"role": "lead", "replies": [{"text": "Done."}]},
        ]
    }
    tool = FunctionTool("dump", dump, NoArgs, description="Return a large text.")
    # Fsync floor: the same bytes written once to a file, durably.
    t0 = time.perf_counter()
    floor_path = work / "floor.bin"
    with floor_path.open("wb") as f:
        f.write(text.encode())
        f.flush()
        os.fsync(f.fileno())
    floor_s = time.perf_counter() - t0
    floor_path.unlink()
    home = work / "home"
    pg_before = _pg_bytes(store) if store else 0
    with Runtime(home, work / "project", store=store) as rt:
        session = rt.new_session()
        before = _rss_mb()
        t0 = time.perf_counter()
        out = session.run("Read the dump.", model=ScriptedModel(script), tools=[tool])
        seconds = time.perf_counter() - t0
        assert out.status == "completed", out
    box.clear()
    del text
    db = sum(p.stat().st_size for p in home.glob("sessions.sqlite*"))
    if store:
        db = _pg_bytes(store) - pg_before
    artifacts = _dir_bytes(home / "artifacts") if (home / "artifacts").exists() else 0
    return {
        "size": size,
        "db": db,
        "artifacts": artifacts,
        "rss_before": before,
        "peak": _peak_mb(),
        "seconds": seconds,
        "floor_s": floor_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--child", type=Path)
    parser.add_argument("--store", help="a postgresql:// URL of an empty database")
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.mb, args.store)))
        return
    extra = ["--store", args.store] if args.store else []
    with tempfile.TemporaryDirectory(prefix="clew-bench-large-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, __file__, "--mb", str(args.mb), "--child", tmp, *extra],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    m = json.loads(done.stdout.strip().splitlines()[-1])
    size_mb = m["size"] / 1e6
    total = m["db"] + m["artifacts"]
    grew = m["peak"] - m["rss_before"]
    print(f"one tool result of {size_mb:.0f} MB in a run (worker → tool → answer)")
    print("| measure | value | × result size |")
    print("|---|---|---|")
    db = "PostgreSQL database growth" if args.store else "sessions.sqlite (+ -wal)"
    print(f"| {db} | {m['db'] / 1e6:.1f} MB | {m['db'] / m['size']:.2f} |")
    print(f"| artifact files | {m['artifacts'] / 1e6:.1f} MB | {m['artifacts'] / m['size']:.2f} |")
    print(f"| home, total | {total / 1e6:.1f} MB | {total / m['size']:.2f} |")
    print(f"| RSS before the run | {m['rss_before']:.0f} MB | - |")
    print(f"| peak RSS | {m['peak']:.0f} MB | - |")
    print(f"| peak RSS − RSS before | {grew:.0f} MB | {grew / size_mb:.2f} |")
    print(f"| run, wall s | {m['seconds']:.2f} | - |")
    floor, ratio = m["floor_s"], m["seconds"] / m["floor_s"]
    print(f"| write + fsync of the bytes once, s | {floor:.2f} | run / floor {ratio:.1f} |")


if __name__ == "__main__":
    main()
