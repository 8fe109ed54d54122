# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from eventlog.errors import UnknownSession
from eventlog.records import StoredEvent
from projections.references import (
    MAX_FILE_BYTES,
    FileReference,
    MissingReference,
    SessionReference,
    expand_references,
    find_references,
)


def no_sessions(session_id: str) -> Sequence[StoredEvent]:
    raise UnknownSession(f"unknown session {session_id}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('hi')\n")
    (tmp_path / "secret.txt").write_text("outside")
    return root


def only_ref(prompt: str, root: Path) -> FileReference | MissingReference | SessionReference:
    [ref] = expand_references(prompt, root, no_sessions).references
    return ref


def test_a_text_file_is_inlined_after_the_prompt_which_is_kept(project: Path) -> None:
    expanded = expand_references("look at @src/a.py please", project, no_sessions)
    assert [
        FileReference(token="@src/a.py", path="src/a.py", text="print('hi')\n", size_bytes=12)
    ] == expanded.references
    assert expanded.prompt.startswith("look at @src/a.py please\n\n[@src/a.py] file src/a.py")
    assert "print('hi')" in expanded.prompt


def test_a_file_of_exactly_64_kib_is_inlined(project: Path) -> None:
    (project / "big.txt").write_bytes(b"x" * MAX_FILE_BYTES)
    ref = only_ref("@big.txt", project)
    assert isinstance(ref, FileReference)
    assert 65536 == ref.size_bytes


def test_a_file_one_byte_over_64_kib_is_missing_with_the_reason(project: Path) -> None:
    (project / "big.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    assert MissingReference(
        token="@big.txt", target="big.txt", reason="larger than 65536 bytes (65537 bytes)"
    ) == only_ref("@big.txt", project)


def test_a_multibyte_file_at_the_limit_is_inlined_whole(project: Path) -> None:
    text = "€" * (MAX_FILE_BYTES // 3) + "x"  # 3 bytes each: 65535 + 1 bytes
    (project / "euro.txt").write_text(text, encoding="utf-8")
    ref = only_ref("@euro.txt", project)
    assert isinstance(ref, FileReference)
    assert text == ref.text


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("../secret.txt", "outside the project root"),
        ("src/../../secret.txt", "outside the project root"),
        ("/etc/passwd", "outside the project root"),
        ("nope.txt", "no such file"),
        ("src", "is a directory"),
    ],
)
def test_escapes_missing_files_and_directories_are_missing_references(
    project: Path, target: str, reason: str
) -> None:
    assert MissingReference(token=f"@{target}", target=target, reason=reason) == only_ref(
        f"see @{target}", project
    )


def test_a_symlink_out_of_the_project_is_refused(project: Path) -> None:
    (project / "link.txt").symlink_to(project.parent / "secret.txt")
    (project / "up").symlink_to(project.parent)
    assert "outside the project root" == only_ref("@link.txt", project).reason  # type: ignore[union-attr]
    assert "outside the project root" == only_ref("@up/secret.txt", project).reason  # type: ignore[union-attr]


def test_a_symlink_inside_the_project_is_followed(project: Path) -> None:
    (project / "alias.py").symlink_to(project / "src" / "a.py")
    ref = only_ref("@alias.py", project)
    assert isinstance(ref, FileReference)
    assert "src/a.py" == ref.path


def test_binary_and_non_utf8_files_are_missing_references(project: Path) -> None:
    (project / "bin.dat").write_bytes(b"abc\x00def")
    (project / "latin.txt").write_bytes("café".encode("latin-1"))
    assert "binary file" == only_ref("@bin.dat", project).reason  # type: ignore[union-attr]
    assert "not UTF-8 text" == only_ref("@latin.txt", project).reason  # type: ignore[union-attr]


def test_an_unknown_session_is_a_missing_reference() -> None:
    assert MissingReference(
        token="@@sess_nope", target="sess_nope", reason="unknown session sess_nope"
    ) == only_ref("as in @@sess_nope", Path())


def test_markers_are_found_once_and_emails_are_not_markers() -> None:
    prompt = 'mail me@example.com, see @a.py. and @a.py, @"my file.txt" and (@@sess_1)'
    assert [
        ("@a.py", "file", "a.py"),
        ('@"my file.txt"', "file", "my file.txt"),
        ("@@sess_1", "session", "sess_1"),
    ] == find_references(prompt)


def test_a_prompt_without_markers_is_unchanged(project: Path) -> None:
    expanded = expand_references("plain prompt", project, no_sessions)
    assert ("plain prompt", []) == (expanded.prompt, expanded.references)


def test_a_nul_byte_in_a_path_is_a_missing_reference_not_an_exception(project: Path) -> None:
    ref = only_ref("look at @src/a\x00.py", project)
    assert isinstance(ref, MissingReference)
    assert "src/a\x00.py" == ref.target
    assert ref.reason.startswith("cannot resolve the path")
