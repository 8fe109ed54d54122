"""The folders show the layers (house style 1): arrows point down, no cycle, small units.

Every module of ``eventlog``, ``projections`` and ``actors`` is imported (so a module
that cannot be imported fails here) and its source read with ``ast``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest
from _modules import PACKAGES, module_names

#: One concept per module, written in its docstring: a module may run long rather than
#: split a class into mixins or friend modules to fit a number (house style 30).
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60
#: A function may pass the limit when a comment holding this says why, on the line before
#: its ``def`` (or its decorators) or up to its first body line.
LONG_MARK = "long:"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module
    source: str

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def _load(name: str) -> Module:
    # Found, not imported: a module of an optional extra (actors.langgraph.saver) imports
    # a library the core install lacks.
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    path = Path(spec.origin)
    source = path.read_text(encoding="utf-8")
    return Module(name, path, ast.parse(source, str(path)), source)


MODULES = {name: _load(name) for package in PACKAGES for name in module_names(package)}


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from … import`` names."""
    if node.level == 0:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _targets(module: Module, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads (``from pkg import mod`` loads ``pkg.mod``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = _absolute(module, node)
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
        for alias in node.names
    ]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _ImportTimeImports(ast.NodeVisitor):
    """Collect the imports that run when the module is imported.

    Function bodies run later and ``if TYPE_CHECKING:`` bodies never run, so neither
    can close an import cycle.
    """

    def __init__(self, module: Module) -> None:
        self.module = module
        self.found: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        pass

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        pass

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        for statement in node.orelse:
            self.visit(statement)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.update(_targets(self.module, node))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.found.update(_targets(self.module, node))


def _every_import(module: Module) -> set[str]:
    """Every module the source names in an import, wherever the statement is."""
    return {
        target
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for target in _targets(module, node)
    }


def _import_time_imports(module: Module) -> set[str]:
    visitor = _ImportTimeImports(module)
    visitor.visit(module.tree)
    return visitor.found


class _ModuleLevelImports(_ImportTimeImports):
    """The imports at module level, ``if TYPE_CHECKING:`` bodies included: an arrow the
    type checker follows is an arrow of the design (house style 32)."""

    def visit_If(self, node: ast.If) -> None:
        self.generic_visit(node)


def _module_level_imports(module: Module) -> set[str]:
    visitor = _ModuleLevelImports(module)
    visitor.visit(module.tree)
    return visitor.found


# --- layers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lower", PACKAGES[:-1])
def test_a_lower_layer_imports_nothing_of_the_layers_above_it(lower: str) -> None:
    above = PACKAGES[PACKAGES.index(lower) + 1 :]
    upward = sorted(
        f"{module.name} imports {target}"
        for module in MODULES.values()
        if module.name.partition(".")[0] == lower
        for target in _every_import(module)
        if target.partition(".")[0] in above
    )

    assert [] == upward


def test_the_import_time_graph_of_actors_modules_has_no_cycle() -> None:
    graph = {
        name: sorted(t for t in _import_time_imports(module) if t in MODULES and t != name)
        for name, module in MODULES.items()
        if name.partition(".")[0] == "actors"
    }

    cycles = [" → ".join([*cycle, cycle[0]]) for cycle in _cycles(graph)]

    assert [] == cycles


def test_no_import_cycle_even_under_type_checking() -> None:
    graph = {
        name: sorted(t for t in _module_level_imports(module) if t in MODULES and t != name)
        for name, module in MODULES.items()
    }

    cycles = [" → ".join([*cycle, cycle[0]]) for cycle in _cycles(graph)]

    assert [] == cycles


# Tarjan's algorithm, iterative: splitting it would scatter its shared state.
def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:  # noqa: C901
    """One cycle through each strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in graph.get(node, []):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_one_cycle(graph, set(c), c[0]) for c in components]


def _one_cycle(graph: dict[str, list[str]], members: set[str], start: str) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``members`` (breadth first)."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in graph[node]:
                if succ == start:
                    return paths[node]
                if succ in members and succ not in paths:
                    paths[succ] = [*paths[node], succ]
                    following.append(succ)
        frontier = following
    raise AssertionError(f"{start} is in a strongly connected component but on no cycle")


# --- sizes ----------------------------------------------------------------------------------


def _comment_lines(source: str) -> dict[int, str]:
    """The comments of ``source`` by line number."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}


def _long_functions(module: Module) -> list[str]:
    comments = _comment_lines(module.source)
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                marked = any(
                    LONG_MARK in comments.get(line, "")
                    for line in range(first - 1, child.body[0].lineno + 1)
                )
                if length > MAX_FUNCTION_LINES and not marked:
                    out.append(f"{module.path.name}:{child.lineno} {name}() has {length} lines")
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(module.tree, "")
    return out


def test_no_module_is_over_800_lines_and_no_function_over_60_unless_marked_long() -> None:
    root = Path(importlib.import_module(PACKAGES[0]).__file__ or "").parents[1]
    offenders = [
        f"{module.path.relative_to(root)}: {lines} lines"
        for module in MODULES.values()
        if (lines := len(module.source.splitlines())) > MAX_MODULE_LINES
    ]
    offenders += [
        f"{module.path.parent.relative_to(root)}/{offence}"
        for module in MODULES.values()
        for offence in _long_functions(module)
    ]

    assert [] == offenders, (
        "split these (or give a function whose length is its clarity a"
        f" '# {LONG_MARK} why' comment on the line before its def):\n  " + "\n  ".join(offenders)
    )


def test_every_module_says_its_concept_in_a_docstring() -> None:
    undocumented = sorted(
        name for name, module in MODULES.items() if not (ast.get_docstring(module.tree) or "")
    )

    assert [] == undocumented


def test_no_class_in_the_runtime_room_is_built_from_mixins() -> None:
    # One class, one module (house style 30): Runtime and Session were once three mixins.
    # A protocol made of protocols is an interface, not a class built from parts.
    mixed = sorted(
        f"{name}.{cls.name}"
        for name, module in MODULES.items()
        if name.startswith("actors.runtime.")
        for cls in ast.walk(module.tree)
        if isinstance(cls, ast.ClassDef)
        and not any(_named(b, "Protocol") for b in cls.bases)
        and len([b for b in cls.bases if not _named(b, "Generic")]) > 1
    )

    assert [] == mixed


def _named(base: ast.expr, name: str) -> bool:
    """True when the base class ``base`` is ``name`` or ``name[…]``."""
    target = base.value if isinstance(base, ast.Subscript) else base
    return isinstance(target, ast.Name) and target.id == name


# --- forwarding -----------------------------------------------------------------------------

#: Methods in ``actors/`` whose body only forwards to another object's method of the same
#: name, handed its arguments unchanged (house style 28: one name, one body). A ceiling:
#: lower it as they go, never raise it (29 before issue 30, 9 after).
MAX_FORWARDING_METHODS = 10


def _imported_modules(module: Module) -> set[str]:
    """The names under which ``module`` binds modules: a call on one is the work itself."""
    names: set[str] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            names |= {
                alias.asname or alias.name
                for alias in node.names
                if f"{base}.{alias.name}" in MODULES
            }
    return names


def _forwards(function: ast.FunctionDef | ast.AsyncFunctionDef, modules: set[str]) -> bool:
    """True when the body (past its docstring) is one call of a same-named method of
    another object, handed the function's arguments unchanged."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return | ast.Expr):
        return False
    value = body[0].value
    if isinstance(value, ast.Await):
        value = value.value
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == function.name
    ):
        return False
    receiver = value.func.value
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name):
        return receiver.func.id != "super" and _passes_through(function, value)
    if isinstance(receiver, ast.Name) and receiver.id in modules:
        return False
    return _passes_through(function, value)


def _passes_through(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> bool:
    """True when every argument of ``call`` is one of the function's own parameters or an
    attribute of ``self`` (a handle passing its id): nothing is computed on the way, so
    the method is a layer and not work (a call that cuts a timeout, builds a value … is)."""
    params = {a.arg for a in (*function.args.posonlyargs, *function.args.args,
                              *function.args.kwonlyargs)}  # fmt: skip
    params |= {a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None}

    def plain(arg: ast.expr) -> bool:
        if isinstance(arg, ast.Starred):
            arg = arg.value
        if isinstance(arg, ast.Name):
            return arg.id in params
        return (
            isinstance(arg, ast.Attribute)
            and isinstance(arg.value, ast.Name)
            and arg.value.id == "self"
        )

    return all(plain(a) for a in call.args) and all(plain(k.value) for k in call.keywords)


def _forwarding_methods() -> list[str]:
    found = []
    for module in MODULES.values():
        if module.name.partition(".")[0] != "actors":
            continue
        modules = _imported_modules(module)
        for cls in ast.walk(module.tree):
            if not isinstance(cls, ast.ClassDef):
                continue
            found += [
                f"{module.name}:{fn.lineno} {cls.name}.{fn.name}"
                for fn in cls.body
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and _forwards(fn, modules)
            ]
    return sorted(found)


def test_few_methods_only_forward_to_a_method_of_the_same_name() -> None:
    found = _forwarding_methods()

    assert len(found) <= MAX_FORWARDING_METHODS, "\n  ".join(["forwarding:", *found])
