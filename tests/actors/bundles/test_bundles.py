"""Session bundles: ``clew export SESSION --bundle FILE`` / ``clew import FILE``.

A bundle round-trips SQLite → file → PostgreSQL → file → SQLite with the same rows and
hash chain, verifies and replays identically on each store; importing it twice is a
no-op; an altered bundle is refused in one line (exit 2); a fork carries its parent."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from actors.cli.main import main
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.errors import BundleRefused
from actors.runtime.bundles.files import VERSION, import_bundle, read_bundle
from actors.runtime.runtime import Runtime
from eventlog.locations import open_store

WORKERS = 3


def _demo_session(home: Path, project: Path) -> str:
    with Runtime(home, project) as rt:
        session = rt.new_session()
        out = session.run(DEMO_PROMPT, model=demo_model(WORKERS), tools=demo_tools(project))
        assert "completed" == out.status
        return session.id


def _rows(location: str | Path, sid: str) -> list[tuple[object, ...]]:
    store = open_store(location, read_only=True)
    try:
        return [
            (e.event_id, e.seq, e.run_seq, e.created_at, e.event) for e in store.iter_events(sid)
        ]
    finally:
        store.close()


def _clew(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _verify_and_replay(capsys: pytest.CaptureFixture[str], location: str, project: Path) -> None:
    flag = "--store" if location.startswith("postgresql://") else "--home"
    code, out, err = _clew(capsys, flag, location, "--project", str(project), "verify", "last")
    assert 0 == code, (location, out, err)
    code, out, err = _clew(capsys, flag, location, "--project", str(project), "replay", "last")
    assert 0 == code, (location, out, err)
    assert "reproduced identically" in out


def test_a_bundle_round_trips_sqlite_postgres_sqlite_exactly_and_replays_identically(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    first, back = tmp_path / "first", tmp_path / "back"
    sid = _demo_session(first, project)
    one, two = tmp_path / "one.clew", tmp_path / "two.clew"

    code, out, err = _clew(capsys, "--home", str(first), "export", sid[:8], "--bundle", str(one))
    assert 0 == code, err
    assert out.startswith(f"{sid}: bundle")
    code, out, err = _clew(capsys, "--store", pg_url, "import", str(one), "--json")
    assert 0 == code, err
    [result] = json.loads(out)["sessions"]
    assert (sid, "copied") == (result["session_id"], result["outcome"])
    assert 0 < result["task_wal_lines"]
    _verify_and_replay(capsys, pg_url, project)

    # From PostgreSQL to a file again, and into a home on "another host".
    code, _, err = _clew(capsys, "--store", pg_url, "export", sid, "--bundle", str(two))
    assert 0 == code, err
    assert gzip.decompress(one.read_bytes()) == gzip.decompress(two.read_bytes())
    here = tmp_path / "proj-here"
    here.mkdir()
    project.rename(tmp_path / "proj-elsewhere")
    code, _, err = _clew(capsys, "--home", str(back), "--project", str(here), "import", str(two))
    assert 0 == code, err
    _verify_and_replay(capsys, str(back), here)
    assert _rows(first, sid) == _rows(pg_url, sid) == _rows(back, sid)


def test_importing_the_same_bundle_twice_is_a_no_op(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    sid = _demo_session(tmp_path / "a", project)
    file = tmp_path / "s.clew"
    assert 0 == main(["--home", str(tmp_path / "a"), "export", sid, "--bundle", str(file)])
    target = tmp_path / "b"
    first = import_bundle(target, file, project)
    rows = _rows(target, sid)
    again = import_bundle(target, file, project)

    assert (["copied"], ["identical"]) == (
        [r.outcome for r in first.sessions],
        [r.outcome for r in again.sessions],
    )
    assert (True, False) == (first.written, again.written)
    assert rows == _rows(target, sid)


def _tampered(file: Path, old: bytes, new: bytes) -> Path:
    data = gzip.decompress(file.read_bytes())
    assert old in data
    out = file.with_name("tampered.clew")
    out.write_bytes(gzip.compress(data.replace(old, new, 1)))
    return out


def test_an_altered_bundle_is_refused_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    sid = _demo_session(home, project)
    file = tmp_path / "s.clew"
    assert 0 == _clew(capsys, "--home", str(home), "export", sid, "--bundle", str(file))[0]
    bad = _tampered(file, b"completed", b"complated")
    target = tmp_path / "target"

    code, out, err = _clew(capsys, "--home", str(target), "import", str(bad))

    assert (2, "") == (code, out)
    assert 1 == len(err.strip().splitlines())
    assert "altered since it was written" in err
    with pytest.raises(BundleRefused, match="altered"):
        read_bundle(bad)
    assert not (target / "sessions.sqlite").exists() or [] == open_store(target).list_sessions()


def test_a_bundle_whose_digest_was_rewritten_too_is_refused_by_its_hash_chain(
    tmp_path: Path,
) -> None:
    import hashlib  # noqa: PLC0415

    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    sid = _demo_session(home, project)
    file = tmp_path / "s.clew"
    assert 0 == main(["--home", str(home), "export", sid, "--bundle", str(file)])
    head, _, body = gzip.decompress(file.read_bytes()).partition(b"\n")
    body = body.replace(b"completed", b"complated", 1)
    doc = json.loads(head)
    doc["digest"] = "sha256:" + hashlib.sha256(body).hexdigest()
    file.write_bytes(gzip.compress(json.dumps(doc).encode() + b"\n" + body))

    with pytest.raises(BundleRefused, match=r"hash chain of .* is broken"):
        read_bundle(file)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not gzip at all", "is not a clew session bundle"),
        (
            gzip.compress(
                b'{"format":"other","version":1,"session_id":"x","sessions":[],"digest":""}\n{}',
                mtime=0,  # the same bytes (and test id) in every process
            ),
            "format 'other'",
        ),
        (
            gzip.compress(
                b'{"format":"clew-bundle","version":99,"session_id":"x",'
                b'"sessions":[],"digest":""}\n{}',
                mtime=0,
            ),
            "version 99 bundle",
        ),
    ],
)
def test_a_file_that_is_not_a_bundle_this_clew_reads_is_refused(
    tmp_path: Path, content: bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "x.clew"
    file.write_bytes(content)
    code, _, err = _clew(capsys, "--home", str(tmp_path / "h"), "import", str(file))
    assert 2 == code
    assert message in err
    assert 1 == len(err.strip().splitlines())
    assert 1 == VERSION


def test_a_different_session_of_the_same_id_on_the_target_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    sid = _demo_session(home, project)
    file = tmp_path / "s.clew"
    assert 0 == main(["--home", str(home), "export", sid, "--bundle", str(file)])
    with Runtime(home, project) as rt:
        rt.session(sid).run("once more", model=demo_model(WORKERS), tools=demo_tools(project))
    before = _rows(home, sid)

    with pytest.raises(BundleRefused, match="already exists on the target and differs"):
        import_bundle(home, file, project)
    assert before == _rows(home, sid)


def test_a_fork_carries_its_parent_and_imports_where_the_parent_went_on(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    parent = _demo_session(home, project)
    with Runtime(home, project) as rt:
        fork = rt.session(parent).fork(title="a fork")
        fork.run("and then?", model=demo_model(WORKERS), tools=demo_tools(project))
    file = tmp_path / "fork.clew"
    assert 0 == main(["--home", str(home), "export", fork.id, "--bundle", str(file)])
    assert [parent, fork.id] == read_bundle(file).header.sessions

    fresh = tmp_path / "fresh"
    got = import_bundle(fresh, file, project)
    assert ["copied", "copied"] == [r.outcome for r in got.sessions]
    with Runtime(fresh, project) as rt:
        assert rt.session(fork.id).verify().ok
        assert rt.session(fork.id).replay().identical

    # The parent went on where the bundle was made: its history starts with the bundle's.
    with Runtime(home, project) as rt:
        rt.session(parent).run("more", model=demo_model(WORKERS), tools=demo_tools(project))
        rt.session(fork.id).delete(force=True)
    got = import_bundle(home, file, project)
    assert ["present", "copied"] == [r.outcome for r in got.sessions]


def test_a_bundle_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    sid = _demo_session(home, project)
    target = tmp_path / "no-such-dir" / "s.clew"
    code, _, err = _clew(capsys, "--home", str(home), "export", sid, "--bundle", str(target))
    assert 2 == code
    assert 1 == len(err.strip().splitlines())
    assert "cannot write the bundle" in err
