"""The errors of the projections layer (its one error module), under clew's one root.

Both are refusals of bad input — an id or a branch point the caller chose — so they
derive from :class:`eventlog.errors.Refused` (the CLI exits 2 on it, no list to keep)
as well as from the builtin a plain-Python caller would catch.
"""

from __future__ import annotations

from eventlog.errors import Refused


class UnknownNode(Refused, LookupError):
    """An operation names a node id that is not in the tree."""


class BranchRefused(Refused, ValueError):
    """A new branch would start from something other than a user message."""
