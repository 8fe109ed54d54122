"""Ids and clocks: session id validation, derived ids, the deterministic clock."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import datetime as dt
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.clock import ManualClock, SystemClock
from eventlog.errors import ClewError, InvalidSessionId
from eventlog.ids import (
    MAX_SESSION_ID_LEN,
    MAX_TASK_NAME_LEN,
    SESSION_ID_RE,
    DerivedIds,
    agent_run_id,
    event_id,
    handoff_id,
    main_run_id,
    main_run_of,
    owning_main_run,
    seed_for,
    session_of,
    stable_hash,
    task_name,
    unique_task_name,
    validate_session_id,
    worker_agent_id,
)
from eventlog.taskwal import validate_wal_name

BAD_SESSION_IDS: list[object] = [
    "../x",
    "a;DROP TABLE sessions",
    "",
    "x" * 300,
    "sess-1",
    "sess 1",
    "sess_1\n",
    "événement",
    "a.b",
    None,
    42,
    b"sess_1",
]


@pytest.mark.parametrize("bad", BAD_SESSION_IDS, ids=repr)
def test_an_invalid_session_id_is_refused_with_invalid_session_id(bad: object) -> None:
    with pytest.raises(InvalidSessionId):
        validate_session_id(bad)


def test_invalid_session_id_is_a_clew_error_and_a_value_error() -> None:
    assert issubclass(InvalidSessionId, ClewError)
    assert issubclass(InvalidSessionId, ValueError)


def test_the_refusal_names_the_reason_in_one_sentence() -> None:
    with pytest.raises(InvalidSessionId, match="only letters, digits and '_' are allowed"):
        validate_session_id("a;DROP TABLE sessions")


@given(st.from_regex(r"[a-zA-Z0-9_]{1,128}", fullmatch=True))
def test_every_well_formed_session_id_is_returned_unchanged(sid: str) -> None:
    assert sid == validate_session_id(sid)


def test_the_longest_allowed_session_id_passes_and_one_more_char_fails() -> None:
    assert "a" * MAX_SESSION_ID_LEN == validate_session_id("a" * MAX_SESSION_ID_LEN)
    with pytest.raises(InvalidSessionId, match="longer than"):
        validate_session_id("a" * (MAX_SESSION_ID_LEN + 1))


def test_a_new_session_id_looks_like_the_seed_example() -> None:
    sid = DerivedIds(suffix="a1b2").new_session_id("2026-06-12T15:30:22.000001+00:00")
    assert "sess_20260612_153022_a1b2" == sid


def test_a_generated_session_id_is_always_valid() -> None:
    ids = DerivedIds()
    now = SystemClock().now()
    for _ in range(50):
        sid = ids.new_session_id(now)
        assert SESSION_ID_RE.match(sid)
        assert sid == validate_session_id(sid)


def test_derived_ids_count_per_scope_and_kind() -> None:
    ids = DerivedIds()
    actual = [
        ids.next_id("s:a1", "r"),
        ids.next_id("s:a1", "r"),
        ids.next_id("s:a1", "n"),
        ids.next_id("s:a2", "r"),
    ]
    assert ["s:a1:r1", "s:a1:r2", "s:a1:n1", "s:a2:r1"] == actual


def test_two_id_sources_fed_the_same_calls_give_the_same_ids() -> None:
    calls = [("a", "n"), ("b", "n"), ("a", "n"), ("a", "r"), ("b", "n")]
    first, second = DerivedIds(), DerivedIds()
    assert [first.next_id(*c) for c in calls] == [second.next_id(*c) for c in calls]


def test_derived_ids_stay_unique_under_concurrent_scopes() -> None:
    ids = DerivedIds()
    out: list[list[str]] = [[] for _ in range(4)]

    def work(i: int) -> None:
        out[i].extend(ids.next_id("shared", "n") for _ in range(1000))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [x for chunk in out for x in chunk]
    assert 4000 == len(set(every))


def test_the_manual_clock_ticks_a_fixed_step_per_call() -> None:
    clock = ManualClock(start="2026-01-01T00:00:00+00:00", step_us=1000)
    assert ["2026-01-01T00:00:00.001000+00:00", "2026-01-01T00:00:00.002000+00:00"] == [
        clock.now(),
        clock.now(),
    ]


def test_the_system_clock_returns_utc_iso_with_microseconds() -> None:
    t = dt.datetime.fromisoformat(SystemClock().now())
    assert dt.timedelta(0) == t.utcoffset()


def test_stable_hash_and_seed_are_deterministic() -> None:
    assert stable_hash(b"abc") == stable_hash(b"abc")
    assert 16 == len(stable_hash(b"abc"))
    assert seed_for("s:a1:r1") == seed_for("s:a1:r1")
    assert seed_for("s:a1:r1") != seed_for("s:a1:r2")


@given(
    sid=st.from_regex(r"[a-zA-Z0-9_]{1,40}", fullmatch=True),
    n=st.integers(1, 99),
    task=st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True),
)
def test_session_of_reads_the_session_back_from_every_id_built_in_it(
    sid: str, n: int, task: str
) -> None:
    run = main_run_id(sid, n)
    worker_run = agent_run_id(worker_agent_id(run, task), 1)
    ids = [
        sid,
        run,
        worker_run,
        handoff_id(run, task),
        event_id(sid, worker_run, 3, 9),
        event_id(sid, None, None, 9),
    ]

    assert [sid] * len(ids) == [session_of(i) for i in ids]


def test_main_run_of_names_the_main_run_of_a_worker_and_nothing_else() -> None:
    run = main_run_id("sess_1", 2)

    assert run == main_run_of(worker_agent_id(run, "w1"))
    assert [None, None, None] == [
        main_run_of(x) for x in ("sess_1:brain", run, worker_agent_id("sess_1:a1:r1", "w1"))
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fix the login bug!", "fix-the-login-bug"),
        ("  --Ünïcode & spaces--  ", "n-code-spaces"),
        ("snake_case_kept", "snake_case_kept"),
        ("!!!", "plan"),
        ("", "plan"),
    ],
)
def test_a_task_name_is_the_text_sanitised(text: str, expected: str) -> None:
    assert expected == task_name(text)


@given(st.text(max_size=300))
def test_every_task_name_is_a_valid_wal_name_even_with_a_suffix(text: str) -> None:
    name = unique_task_name(task_name(text), {task_name(text)})
    assert len(task_name(text)) <= MAX_TASK_NAME_LEN
    assert name == validate_wal_name(name)


def test_a_taken_task_name_gets_the_first_free_number() -> None:
    assert ("a", "a-2", "a-3") == (
        unique_task_name("a", set()),
        unique_task_name("a", {"a"}),
        unique_task_name("a", {"a", "a-2"}),
    )


def test_a_worker_run_belongs_to_its_main_run() -> None:
    assert ("s:brain:r2", "s:brain:r2") == (
        owning_main_run("s:brain:r2/w1:r1"),
        owning_main_run("s:brain:r2"),
    )
