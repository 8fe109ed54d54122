"""``clew usage``: a session's tokens by model, role and phase, and the cost where a price
list is given (``actors/cli/usage_command.py``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import structlog
from _cli_helpers import Where, invoke

from actors.runtime.runtime import Runtime
from projections import usage


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    base = tmp_path_factory.mktemp("usage")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    result = invoke(where, "demo", "--json")
    structlog.reset_defaults()
    assert 0 == result.code, result.err
    return where, result.json()["session_id"]


def test_usage_json_holds_the_totals_the_usage_projection_folds(demo: tuple[Where, str]) -> None:
    where, sid = demo
    result = invoke(where, "usage", sid, "--json")
    assert 0 == result.code, result.err
    doc = result.json()
    with Runtime(where.home, where.project, read_only=True) as rt:
        totals = usage.rebuild(rt.store.iter_events(sid))
    assert (totals.total.calls, totals.total.total_tokens) == (
        doc["total"]["calls"],
        doc["total"]["total_tokens"],
    )
    assert {r: t.total_tokens for r, t in totals.by_role.items()} == {
        g["name"]: g["total_tokens"] for g in doc["by_role"]
    }
    assert {p: t.calls for p, t in totals.by_phase.items()} == {
        g["name"]: g["calls"] for g in doc["by_phase"]
    }
    assert (None, None, []) == (doc["currency"], doc["total"]["cost"], doc["unpriced_models"])


def test_a_price_list_gives_the_cost_by_model_role_and_phase(
    demo: tuple[Where, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where, sid = demo
    prices = tmp_path / "prices.toml"
    prices.write_text('currency = "EUR"\n[models.demo]\ninput = 3.0\noutput = 15.0\n')
    doc = invoke(where, "usage", sid, "--prices", str(prices), "--json").json()
    t = doc["total"]
    expected = (t["input_tokens"] * 3.0 + t["output_tokens"] * 15.0) / 1_000_000
    assert ("EUR", False) == (doc["currency"], t["partial"])
    assert math.isclose(expected, t["cost"], rel_tol=1e-6)
    assert math.isclose(t["cost"], sum(g["cost"] for g in doc["by_role"]), rel_tol=1e-6)
    monkeypatch.setenv("CLEW_PRICES", str(prices))
    table = invoke(where, "usage", "last")
    assert 0 == table.code
    assert "cost (EUR)" in table.out and f"cost {t['cost']:.4f} EUR" in table.out


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[models.m]\ninput = 1\n", "is invalid at models.m.output: Field required"),
        ("[models.m]\ninput = -1\noutput = 1\n", "is invalid at models.m.input:"),
        ("models = [", "is not TOML"),
        ("[model.m]\ninput = 1\noutput = 1\n", "is invalid at model: Extra inputs"),
    ],
)
def test_a_bad_price_list_is_one_line_and_exit_2(
    demo: tuple[Where, str], tmp_path: Path, text: str, says: str
) -> None:
    where, sid = demo
    prices = tmp_path / "prices.toml"
    prices.write_text(text)
    result = invoke(where, "usage", sid, "--prices", str(prices))
    assert (2, "") == (result.code, result.out)
    [line] = result.err_lines()
    assert line.startswith(f"error: the price list {prices} ") and says in line, line


def test_a_missing_price_list_is_refused(demo: tuple[Where, str], tmp_path: Path) -> None:
    where, sid = demo
    result = invoke(where, "usage", sid, "--prices", str(tmp_path / "nope.toml"))
    assert 2 == result.code
    assert ["error: cannot read the price list"] == [line[:33] for line in result.err_lines()]
