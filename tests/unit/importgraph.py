"""binlake's own import graph, read from the source with ast (nothing is imported).

Used by test_import_rules.py: which modules import which, including imports inside functions,
and which underscore names one module takes from another.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass
class Graph:
    edges: dict[str, set[str]] = field(default_factory=dict)
    private: set[tuple[str, str, str]] = field(default_factory=set)
    """(importing module, imported module, name) for each `_name` taken from another module."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(current: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def build(root: Path = SRC / "binlake") -> Graph:
    files = {module_name(p): p for p in root.rglob("*.py")}
    graph = Graph({name: set() for name in files})
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        tree = _runtime(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("binlake"):
                        graph.edges[name].add(_owner(alias.name, files))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, is_package, node.level, node.module)
                if not target.startswith("binlake"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in files:  # `from pkg import module`
                        graph.edges[name].add(sub)
                        continue
                    owner = _owner(target, files)
                    graph.edges[name].add(owner)
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and owner != name and not _own_module(name, is_package, target,
                                                                     alias.name, root):
                        graph.private.add((name, owner, alias.name))
    for name in graph.edges:
        graph.edges[name].discard(name)
        graph.edges[name].discard("")
    return graph


def _runtime(tree: ast.Module) -> ast.Module:
    """The tree without `if TYPE_CHECKING:` bodies (imports only type checkers run)."""
    class Strip(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.AST:
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                node.body = [ast.Pass()]
            self.generic_visit(node)
            return node

    return Strip().visit(tree)


def _own_module(name: str, is_package: bool, target: str, alias: str, root: Path) -> bool:
    """`from . import _mod` of a module in the importer's own package (a C extension
    included): the package's private module, used inside the package, is not another
    module's private name."""
    package = name if is_package else name.rpartition(".")[0]
    if target != package:
        return False
    folder = root.parent.joinpath(*package.split("."))
    return any(folder.glob(f"{alias}.py")) or any(folder.glob(f"{alias}.c")) \
        or f"{package}.{alias}" in _extensions(root) or (folder / alias / "__init__.py").is_file()


def _extensions(root: Path) -> set[str]:
    """The C extensions setup.py declares (built or not: the answer must not depend on
    whether this checkout has built them in place)."""
    setup = root.parents[1] / "setup.py"
    text = setup.read_text(encoding="utf-8") if setup.is_file() else ""
    return set(re.findall(r"Extension\(\s*[\"']([\w.]+)[\"']", text))


def _owner(module: str, files: dict[str, Path]) -> str:
    while module and module not in files:
        module = module.rpartition(".")[0]
    return module


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)
