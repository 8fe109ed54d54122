"""``--store URL``: run any command on a PostgreSQL store (docs/postgres.md).

The option works before the command or after it (``clew --store URL sessions``,
``clew demo --store URL``): :func:`lift_store_option` takes it out of the arguments
before typer parses them, so no command needs a parameter of its own. ``$CLEW_STORE``
is the default. With a store, ``--home`` (or ``$CLEW_HOME``) keeps only this host's
owner locks and control files; a ``postgresql://`` URL given to ``--home`` is taken
as ``--store``.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.errors import UsageError
from eventlog.locations import is_postgres_url

OPTION = "--store"
ENV = "CLEW_STORE"


def lift_store_option(args: list[str]) -> tuple[list[str], str | None]:
    """Return ``args`` without ``--store URL`` / ``--store=URL``, and the URL (last wins).

    Arguments after ``--`` are left alone.

    Raises:
        UsageError: ``--store`` without a value, or a value that is not a
            ``postgresql://`` URL.
    """
    out: list[str] = []
    store: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out += args[i:]
            break
        if arg == OPTION or arg.startswith(OPTION + "="):
            if arg == OPTION:
                if i + 1 >= len(args):
                    raise UsageError("--store needs a value: a postgresql:// URL")
                value, i = args[i + 1], i + 2
            else:
                value, i = arg.split("=", 1)[1], i + 1
            store = check_store_url(value)
            continue
        out.append(arg)
        i += 1
    return out, store


def check_store_url(value: str) -> str:
    """Return ``value`` if it is a ``postgresql://`` URL, else raise ``UsageError``."""
    if not is_postgres_url(value):
        raise UsageError(
            "--store takes a postgresql://user@host:port/database URL"
            " (a clew home directory goes to --home)"
        )
    return value


def chosen_store(lifted: str | None, home: str | None, env: Mapping[str, str]) -> str | None:
    """The store a command uses: ``--store``, a URL given as ``--home``, else $CLEW_STORE."""
    if lifted:
        return lifted
    if home and is_postgres_url(home):
        return home
    value = env.get(ENV) or None
    return check_store_url(value) if value else None
