"""``clew usage``: a session's tokens by model, role and phase, and their cost where prices
are configured (``--prices FILE`` or ``$CLEW_PRICES``: a TOML price list).

The price list, per million tokens, in one currency::

    currency = "USD"
    [models."openai:gpt-4o-mini"]      # a model's recorded name, or the part after ':'
    input = 0.15
    output = 0.60
    cache_read = 0.075                 # optional: the input price when absent

A bad file is one ``error:`` line (exit 2). A model without a price is listed as
unpriced; the cost of a group that mixes priced and unpriced calls is marked partial.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any

import pydantic
import typer
from rich.markup import escape
from rich.table import Table

from actors.cli import render
from actors.cli.app import app
from actors.cli.options import Home, Json, Project, SessionArg, open_session, where_from
from actors.cli.output import clipped, print_json
from actors.documents.usage import BREAKDOWNS, usage_doc
from actors.errors import UsageError
from eventlog.regular_files import MIB
from projections.costs import Price, usage_cells

_FORBID = pydantic.ConfigDict(extra="forbid")


class PriceEntry(pydantic.BaseModel):
    model_config = _FORBID
    input: float = pydantic.Field(ge=0)
    output: float = pydantic.Field(ge=0)
    cache_read: float | None = pydantic.Field(default=None, ge=0)
    cache_write: float | None = pydantic.Field(default=None, ge=0)


class PriceFile(pydantic.BaseModel):
    model_config = _FORBID
    currency: str = "USD"
    models: dict[str, PriceEntry] = {}


def load_prices(path: str) -> tuple[str, dict[str, Price]]:
    """Return the currency and the prices of a price list file.

    Raises:
        UsageError: the file cannot be read, is not TOML, or is not a price list.
    """
    where = clipped(path)
    try:
        with Path(path).open("rb") as f:
            data = tomllib.loads(f.read(MIB).decode("utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise UsageError(f"cannot read the price list {where}: {why}") from e
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"the price list {where} is not TOML: {e}") from e
    try:
        parsed = PriceFile.model_validate(data)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise UsageError(f"the price list {where} is invalid at {field}: {first['msg']}") from e
    prices = {name: Price(**entry.model_dump()) for name, entry in parsed.models.items()}
    return parsed.currency, prices


def _table(title: str, column: str, groups: list[dict[str, Any]], currency: str | None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(column)
    for col in ("calls", "input", "output", "cache read", "cache write", "total"):
        table.add_column(col, justify="right")
    if currency is not None:
        table.add_column(f"cost ({currency})", justify="right")
    for g in groups:
        cells = [
            escape(g["name"] or "-"),
            *(
                f"{g[k]:,}"
                for k in (
                    "calls",
                    "input_tokens",
                    "output_tokens",
                    "cache_read_tokens",
                    "cache_write_tokens",
                    "total_tokens",
                )
            ),
        ]
        if currency is not None:
            cost = "-" if g["cost"] is None else f"{g['cost']:.4f}"
            cells.append(cost + (" (partial)" if g["partial"] else ""))
        table.add_row(*cells)
    return table


@app.command()
def usage(
    session: SessionArg,
    prices: Annotated[
        str | None,
        typer.Option(
            "--prices",
            metavar="FILE",
            help="a price list (TOML; default $CLEW_PRICES) to show the cost",
            show_default=False,
        ),
    ] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Show the session's token usage by model, role and phase (and cost, with prices)."""
    where = where_from(home, project)
    path = prices or os.environ.get("CLEW_PRICES") or None
    currency, table = load_prices(path) if path else ("USD", {})
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        cells = usage_cells(rt.store.iter_events(sid))
    doc = usage_doc(sid, cells, currency, table)
    if as_json:
        print_json(doc)
        return
    out = render.make_console()
    shown = doc["currency"]
    for i, (key, column, _) in enumerate(BREAKDOWNS):
        title = f"token usage of {sid} by {column}" if i == 0 else f"by {column}"
        out.print(_table(title, column, doc[key], shown))
    total = doc["total"]
    cost = "" if total["cost"] is None else f" · cost {total['cost']:.4f} {currency}"
    out.print(f"total: {total['calls']:,} calls · {total['total_tokens']:,} tokens{cost}")
    if doc["unpriced_models"]:
        out.print(f"no price for: {escape(', '.join(doc['unpriced_models']))}")
