"""The import graph's rules: no cycles between modules, no module taking another's private
(`_name`) names. What existed when the rules came in is listed in import_debt.txt; the test
fails on anything new, and on a listed entry that is gone (so the list only shrinks)."""
from __future__ import annotations

from pathlib import Path

import importgraph

DEBT = Path(__file__).with_name("import_debt.txt")


def _debt() -> tuple[set[str], set[str]]:
    cycles, private = set(), set()
    for line in DEBT.read_text().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "cycle":
            cycles.add(rest)
        elif kind == "private":
            private.add(rest)
    return cycles, private


def current() -> tuple[set[str], set[str]]:
    graph = importgraph.build()
    cycles = {" ".join(c) for c in importgraph.cycles(graph.edges)}
    private = {f"{a} {b} {name}" for a, b, name in graph.private}
    return cycles, private


def test_no_new_import_cycles_or_private_imports() -> None:
    known_cycles, known_private = _debt()
    cycles, private = current()
    assert not cycles - known_cycles, f"new import cycle(s): {sorted(cycles - known_cycles)}"
    assert not private - known_private, (
        f"imports of another module's private names (give them a public name): "
        f"{sorted(private - known_private)}")


def test_the_debt_list_is_current() -> None:
    known_cycles, known_private = _debt()
    cycles, private = current()
    gone = sorted((known_cycles - cycles) | (known_private - private))
    assert not gone, f"fixed, so remove from {DEBT.name}: {gone}"


def test_the_graph_sees_function_level_imports_and_cycles() -> None:
    cycle = importgraph.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycle == [["a", "b", "c"]]
    graph = importgraph.build()
    # values.py imports nothing of binlake at module level; decoder imports codecs in functions
    assert "binlake.errors" in graph.edges["binlake.binlog.decoder"]


if __name__ == "__main__":  # python tests/unit/test_import_rules.py: rewrite the debt list
    cycles, private = current()
    DEBT.write_text(
        "# Import-rule debt: cycles and private-name imports that existed when the rules came in.\n"
        "# Only remove lines (test_import_rules.py fails on new ones and on stale ones).\n"
        + "".join(f"cycle {c}\n" for c in sorted(cycles))
        + "".join(f"private {p}\n" for p in sorted(private)))
    print(f"{len(cycles)} cycles, {len(private)} private imports")
