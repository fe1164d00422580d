"""ImageRows: a rows event's JSON images packed by the C writer must read exactly as the list
of images (pairs for updates) json_many() gives, item by item, sliced, and compared."""
from __future__ import annotations

from pathlib import Path

import pytest

from binlake.binlog.codecs import rows as rows_codec
from binlake._speedups.native import switches
from binlake.binlog.events import RowsEvent
from binlake.binlog.files import read_events

_speedups = switches.c  # (None: not built, or BINLAKE_PURE_PYTHON=1)
pytestmark = pytest.mark.skipif(_speedups is None, reason="needs the C extension")

FILES = ("row-full-metafull-crc32", "row-minimal-metaminimal-crc32", "large-event")


def _events(corpus_dir: Path, json_images: bool) -> list[RowsEvent]:
    return [ev for n in FILES
            for ev in read_events(corpus_dir / "generated-mariadb-10.11"
                                  / f"mariadb-10.11.19-{n}.000001", json_images=json_images)
            if isinstance(ev, RowsEvent)]


def test_packed_rows_read_as_the_json_many_list(corpus_dir: Path, monkeypatch) -> None:
    packed = _events(corpus_dir, True)
    monkeypatch.setattr(rows_codec, "fast_rows", lambda *a, **k: None)  # the general path
    plain = _events(corpus_dir, True)
    assert len(packed) == len(plain)
    kinds = set()
    for p, q in zip(packed, plain):
        if type(p.rows) is not _speedups.ImageRows:
            continue
        kinds.add(p.kind)
        listed = list(q.rows)
        assert type(q.rows) is list and p.rows == listed and not (p.rows != listed)
        assert len(p.rows) == len(listed) and list(p.rows) == listed
        assert p.rows[-1] == listed[-1] and p.rows[1:3] == listed[1:3]
        assert p.rows[::2] == listed[::2] and p.rows == p.rows
        assert repr(p.rows) == repr(listed)
        sizes = [len(r[0]) + len(r[1]) if p.kind == "update" else len(r) for r in listed]
        assert p.rows.nbytes() == sum(sizes)
        assert p.rows.nbytes(1, 3) == sum(sizes[1:3])
        with pytest.raises(IndexError):
            p.rows[len(listed)]
    assert kinds == {"insert", "update", "delete"}


def test_packed_rows_are_read_only_and_unhashable(corpus_dir: Path) -> None:
    ev = next(e for e in _events(corpus_dir, True) if type(e.rows) is _speedups.ImageRows)
    with pytest.raises(TypeError):
        ev.rows[0] = b"{}"
    with pytest.raises(TypeError):
        hash(ev.rows)
    assert ev.rows != [b"{}"] * len(ev.rows)
