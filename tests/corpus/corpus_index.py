"""Corpus helpers: the shared binlog corpus and its INDEX.md, read at run time (never copied)."""
from __future__ import annotations

import re
from pathlib import Path

BINLOG_MAGIC = b"\xfebin"


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.open("rb").read(4) == BINLOG_MAGIC)


def index_event_counts(root: Path) -> dict[str, dict[str, int]]:
    """INDEX.md 'events' column per file: {'2': 3, '2(in payload)': 1, 'encrypted': 140}."""
    out: dict[str, dict[str, int]] = {}
    text = (root / "INDEX.md").read_text()
    section = text.split("## Files", 1)[1].split("## Provenance", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 7 or not cells[1] or cells[1] in ("file", "---"):
            continue
        counts = {}
        for m in re.finditer(r"(\d+(?:\(in payload\))?|encrypted):(\d+)", cells[6]):
            counts[m.group(1)] = int(m.group(2))
        out[cells[1]] = counts
    return out
