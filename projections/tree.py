"""The conversation node tree: a fold over ``node_appended`` / ``active_node_switched``.

Rules (seed 004, see ``docs/projections.md``):

- A node's parent must already exist when the node is appended; ``parent_id=None``
  starts a new root (a worker's own context tree). ``node_seq`` is the order of the
  ``node_appended`` events, exactly as the store assigns it.
- Integrity: a duplicate node id, a parent that does not exist (yet), a node that is
  its own ancestor (a cycle) or a switch to an unknown node is an
  :class:`~eventlog.errors.IntegrityError` naming the node. The tree never drops
  history silently. With ``strict=False`` (``verify`` uses it) the same problems are
  collected in :attr:`NodeTree.problems` and the store's behaviour is mirrored instead.
- The active path is the active node and its ancestors, root first. Siblings stay out.
- Branch rule: a new branch starts only at a user message. A node that already has a
  child may get another one (a new branch) only if the new child is a ``user``/``message``
  node (the user re-asks from there), or the node itself is one (a retried run answers
  the same message again) — :func:`check_branch_point`. A switch moves the active node
  only where the next run's user message may start a branch —
  :func:`check_branch_target`. The fold itself does not enforce either: they are rules for
  *new* appends, checked by the runtime before it appends, while stored history is
  accepted as recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from eventlog.blocks import ToolCallBlock
from eventlog.errors import IntegrityError, quoted
from eventlog.events import ActiveNodeSwitched, Node, NodeAppended
from eventlog.records import NodeRow, StoredEvent
from projections.errors import BranchRefused, UnknownNode
from projections.folding import ComparedByValue, fold

#: ``fold`` is :func:`projections.folding.fold`, exported here like every projection's.
__all__ = [
    "TREE_EVENT_TYPES",
    "NodeTree",
    "check_branch_point",
    "check_branch_target",
    "check_switch_target",
    "fold",
    "rebuild",
]

#: The event types this fold reads; every other event leaves the tree unchanged.
TREE_EVENT_TYPES: Final = frozenset({"node_appended", "active_node_switched"})


# One entry per node: (node, node_seq, created_at). A tuple rather than a NodeRow:
# building the row costs ~0.5 µs and most rebuilds never look at most rows.
_Entry = tuple[Node, int, str]


class NodeTree(ComparedByValue):
    """The node tree of one session, folded from its events (mutable, owned by its folder)."""

    __slots__ = ("_children", "_dangling", "_entries", "active_node_id", "problems", "strict")
    _COMPARED = ("active_node_id", "_entries", "_children")

    def __init__(self, *, strict: bool = True) -> None:
        self._entries: dict[str, _Entry] = {}
        # Created on a node's first child only: most nodes are leaves or have one child.
        self._children: dict[str | None, list[str]] = {}
        # Lenient mode only: parent ids that were missing when a child named them. A node
        # that later takes such an id may close a cycle (a → b, then b → a).
        self._dangling: set[str] = set()
        self.active_node_id: str | None = None
        self.strict = strict
        self.problems: list[str] = []

    # --- folding -------------------------------------------------------------------------

    def apply(self, stored: StoredEvent) -> None:
        """Fold one stored event into the tree (events of other types are ignored)."""
        event = stored.event
        if isinstance(event, NodeAppended):
            self.add(event.node, stored.created_at, activate=event.activate)
        elif isinstance(event, ActiveNodeSwitched):
            self.switch(event.to_node_id)

    def add(self, node: Node, created_at: str, *, activate: bool = False) -> None:
        """Add ``node`` as the next node (node_seq = number of nodes + 1).

        Raises:
            IntegrityError: duplicate id, unknown parent, or the node is its own parent.
        """
        node_id = node.node_id
        entries = self._entries
        if node_id in entries:
            self._problem(
                f"duplicate node id {node_id!r} (first at node_seq {entries[node_id][1]})"
            )
            return  # the store refuses the second insert: the first node stays
        parent = node.parent_id
        if parent is not None and parent not in entries:
            if parent == node_id:
                self._problem(f"node {node_id!r} is its own parent (a cycle)")
            else:
                self._problem(f"node {node_id!r} has a dangling parent {parent!r}")
                self._dangling.add(parent)
        entries[node_id] = (node, len(entries) + 1, created_at)
        if node_id in self._dangling:
            self._dangling.discard(node_id)
            self._check_cycle_through(node_id)
        kids = self._children.get(parent)
        if kids is None:
            self._children[parent] = [node_id]
        else:
            kids.append(node_id)
        if activate:
            self.active_node_id = node_id

    def _check_cycle_through(self, node_id: str) -> None:
        """Report a parent cycle through ``node_id`` (only possible in lenient mode)."""
        trail = [node_id]
        current = self._entries[node_id][0].parent_id
        limit = len(self._entries)
        while current is not None and current in self._entries and len(trail) <= limit:
            if current == node_id:
                names = " → ".join([*trail, node_id])
                self._problem(f"node {node_id!r} is its own ancestor (a cycle: {names})")
                return
            trail.append(current)
            current = self._entries[current][0].parent_id

    def switch(self, node_id: str) -> None:
        """Make ``node_id`` the active node.

        Raises:
            IntegrityError: no such node (strict mode).
        """
        if node_id not in self._entries:
            self._problem(f"active node switched to unknown node {node_id!r}")
        self.active_node_id = node_id

    def _problem(self, message: str) -> None:
        if self.strict:
            raise IntegrityError(message)
        self.problems.append(message)

    @classmethod
    def from_rows(cls, rows: Iterable[NodeRow], active_node_id: str | None = None) -> NodeTree:
        """Build a tree from materialised rows in any order (e.g. ``store.read_nodes``).

        Raises:
            IntegrityError: duplicate id, dangling parent, or a cycle, naming the node.
        """
        tree = cls()
        ordered = sorted(rows, key=lambda r: r.node_seq)
        ids = set()
        for r in ordered:
            if r.node_id in ids:
                raise IntegrityError(f"duplicate node id {r.node_id!r}")
            ids.add(r.node_id)
        parent_of = {r.node_id: r.parent_id for r in ordered}
        for r in ordered:
            if r.parent_id is not None and r.parent_id not in parent_of:
                raise IntegrityError(f"node {r.node_id!r} has a dangling parent {r.parent_id!r}")
        _check_acyclic(parent_of)
        for r in ordered:
            node = Node(
                node_id=r.node_id,
                parent_id=r.parent_id,
                agent_id=r.agent_id,
                run_id=r.run_id,
                role=r.role,  # type: ignore[arg-type]
                node_type=r.node_type,  # type: ignore[arg-type]
                content=r.content,
                metadata=r.metadata,
                token_count=r.token_count,
            )
            tree._entries[r.node_id] = (node, r.node_seq, r.created_at)
            tree._children.setdefault(r.parent_id, []).append(r.node_id)
        if active_node_id is not None:
            tree.switch(active_node_id)
        return tree

    # --- queries -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._entries

    def __repr__(self) -> str:
        return f"NodeTree({len(self)} nodes, active={self.active_node_id!r})"

    def node(self, node_id: str) -> Node:
        """Return the node ``node_id``.

        Raises:
            UnknownNode: no such node.
        """
        try:
            return self._entries[node_id][0]
        except KeyError:
            raise UnknownNode(f"unknown node {quoted(node_id)}") from None

    def row(self, node_id: str) -> NodeRow:
        """Return ``node_id`` as the row the store materialises for it."""
        if node_id not in self._entries:
            raise UnknownNode(f"unknown node {quoted(node_id)}")
        return _row(self._entries[node_id])

    def rows(self) -> list[NodeRow]:
        """Return every node as a ``nodes_<sid>`` row, in node_seq order."""
        return [_row(e) for e in self._entries.values()]

    def children(self, node_id: str | None) -> list[str]:
        """Return the ids of ``node_id``'s children in node_seq order (None: the roots)."""
        return list(self._children.get(node_id, ()))

    def roots(self) -> list[str]:
        """Return the ids of the nodes without a parent, in node_seq order."""
        return self.children(None)

    def branch_points(self) -> list[str]:
        """Return the ids of nodes with two or more children, in node_seq order."""
        return [nid for nid in self._entries if len(self._children.get(nid, ())) > 1]

    def leaves(self) -> list[str]:
        """Return the tip of every branch (nodes without children), in node_seq order."""
        return [nid for nid in self._entries if nid not in self._children]

    def ancestors(self, node_id: str) -> Iterator[str]:
        """Yield ``node_id`` and its ancestors, tip first.

        Raises:
            UnknownNode: ``node_id`` is not in the tree.
            IntegrityError: the walk meets a missing parent or loops.
        """
        entries = self._entries
        if node_id not in entries:
            raise UnknownNode(f"unknown node {quoted(node_id)}")
        current: str | None = node_id
        steps = 0
        limit = len(entries)
        while current is not None:
            entry = entries.get(current)
            if entry is None:
                raise IntegrityError(f"node path to {node_id!r} meets a missing node {current!r}")
            yield current
            steps += 1
            if steps > limit:
                raise IntegrityError(f"node {node_id!r} is its own ancestor (a cycle)")
            current = entry[0].parent_id

    def path_to(self, node_id: str) -> list[Node]:
        """Return the path root → ``node_id`` (inclusive). Cost grows with the depth only."""
        entries = self._entries
        path = [entries[nid][0] for nid in self.ancestors(node_id)]
        path.reverse()
        return path

    def active_path(self) -> list[Node]:
        """Return the active path, root first; empty when there is no active node."""
        if self.active_node_id is None:
            return []
        return self.path_to(self.active_node_id)

    def active_path_ids(self) -> list[str]:
        """Return the ids on the active path, root first."""
        if self.active_node_id is None:
            return []
        ids = list(self.ancestors(self.active_node_id))
        ids.reverse()
        return ids


def _row(entry: _Entry) -> NodeRow:
    node, node_seq, created_at = entry
    return NodeRow(
        node_id=node.node_id,
        node_seq=node_seq,
        parent_id=node.parent_id,
        agent_id=node.agent_id,
        run_id=node.run_id,
        role=node.role,
        node_type=node.node_type,
        content=node.content,
        metadata=node.metadata,
        token_count=node.token_count,
        created_at=created_at,
    )


def _check_acyclic(parent_of: dict[str, str | None]) -> None:
    """Raise ``IntegrityError`` naming a node on a parent cycle, if there is one."""
    done: set[str] = set()
    for start in parent_of:
        trail: list[str] = []
        on_trail: set[str] = set()
        current: str | None = start
        while current is not None and current not in done:
            if current in on_trail:
                raise IntegrityError(f"node {current!r} is its own ancestor (a cycle)")
            trail.append(current)
            on_trail.add(current)
            current = parent_of.get(current)
        done.update(trail)


def rebuild(events: Iterable[StoredEvent], *, strict: bool = True) -> NodeTree:
    """Fold ``events`` (in seq order) into a new tree."""
    tree = NodeTree(strict=strict)
    apply = tree.apply
    for stored in events:
        if stored.event_type in TREE_EVENT_TYPES:
            apply(stored)
    return tree


def check_switch_target(tree: NodeTree, node_id: str) -> None:
    """Refuse a ``switch_node`` to a node that does not exist.

    Raises:
        UnknownNode: ``node_id`` is not in the tree.
    """
    if node_id not in tree:
        raise UnknownNode(f"cannot switch to unknown node {quoted(node_id)}")


def check_branch_point(
    tree: NodeTree, parent_id: str | None, child_role: str, child_node_type: str = "message"
) -> None:
    """Refuse appending a child under ``parent_id`` that would break the branch rule.

    A node's first child continues its branch and is always allowed. A second (or
    later) child starts a new branch, which must start at a user message: allowed when
    the new child is one (``role="user"``, ``node_type="message"``: the user edits or
    re-asks from that point), or when the parent is one (a retried run answers the same
    message again). A new root (``parent_id=None``) starts a separate tree and is always
    allowed.

    Raises:
        UnknownNode: ``parent_id`` is not in the tree.
        BranchRefused: the parent already has a child, and neither it nor the new one is
            a user message.
    """
    if parent_id is None:
        return
    if parent_id not in tree:
        raise UnknownNode(f"cannot append under unknown node {quoted(parent_id)}")
    if not tree.children(parent_id):
        return
    if _is_user_message(child_role, child_node_type):
        return
    parent = tree.node(parent_id)
    if _is_user_message(parent.role, parent.node_type):
        return
    raise BranchRefused(
        f"node {parent_id!r} already has a child: a new branch must start at a user "
        f"message, not a {child_role}/{child_node_type} node"
    )


def _is_user_message(role: str, node_type: str) -> bool:
    return role == "user" and node_type == "message"


def check_branch_target(tree: NodeTree, node_id: str, conversation_agent: str) -> None:
    """Refuse a ``switch_node`` to a node the next run's user message cannot branch from.

    The next main run appends the user's message under the active node, so a switch
    target must be a node where a user message may start a (new) branch
    (:func:`check_branch_point`) *and* continue the conversation:

    - a node of the session's own conversation (``conversation_agent``, the Brain): a
      worker's nodes are its isolated context and never join the Brain's;
    - not an assistant turn that asked for tools: the model would see a tool call with
      no result after it.

    Raises:
        UnknownNode: ``node_id`` is not in the tree.
        BranchRefused: ``node_id`` is one of the nodes above.
    """
    check_switch_target(tree, node_id)
    node = tree.node(node_id)
    if node.agent_id != conversation_agent:
        raise BranchRefused(
            f"cannot switch to node {node_id!r}: it belongs to {node.agent_id}'s isolated"
            " context; a new branch starts in the session's conversation"
        )
    if node.role == "assistant" and any(isinstance(b, ToolCallBlock) for b in node.content):
        raise BranchRefused(
            f"cannot switch to node {node_id!r}: it is an assistant turn waiting for its tool"
            " results; switch to the tool node after it, or to a node before it"
        )
    check_branch_point(tree, node_id, "user", "message")
