"""The ``clew`` command line (placeholder until the CLI issue lands)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the clew CLI."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["demo"]:
        print("clew demo is not built yet")
        return 0
    print("usage: clew demo", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
