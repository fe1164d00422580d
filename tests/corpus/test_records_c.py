"""The C record builder (`_speedups.make_records`) against ChangeRecord's own __init__.

Records are built in C from a slot template; these tests make sure every field of every
record is what the Python constructor gives, on every corpus file, and that the builder
refuses classes whose layout it cannot fill.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import binlake.cdc.changes as changes
from binlake._speedups.native import c_module as _c_module
from binlake.cdc.changes import ChangeRecord, ChangeTracker
from binlake.errors import DecodeError
from binlake.binlog.files import read_events

from corpus_index import corpus_files

pytestmark = pytest.mark.skipif(changes._make_records is None,
                                reason="C extension not built or BINLAKE_PURE_PYTHON set")

FIELDS = ChangeRecord.__slots__


def _records(path: Path, builder) -> list[ChangeRecord]:
    saved = changes._make_records
    changes._make_records = builder
    try:
        # (read past INCIDENT events: both builders are compared on every record)
        tracker = ChangeTracker(on_incident=lambda ev: None)
        out: list[ChangeRecord] = []
        try:
            for ev in read_events(path):
                out.extend(tracker.records(ev))
        except DecodeError:
            pass  # files the corpus keeps broken on purpose: compare what came before
        return out
    finally:
        changes._make_records = saved


def test_c_records_equal_python_records_on_the_corpus(corpus_dir: Path) -> None:
    compared = 0
    for path in corpus_files(corpus_dir):
        fast = _records(path, _c_module.make_records)
        slow = _records(path, None)
        assert len(fast) == len(slow), path
        for a, b in zip(fast, slow):
            assert type(a) is ChangeRecord
            for name in FIELDS:
                assert getattr(a, name) == getattr(b, name), (path, name)
            assert a.before == b.before and a.after == b.after
        compared += len(fast)
    assert compared > 1000  # the corpus has thousands of row changes


def test_record_class_refuses_classes_it_cannot_fill() -> None:
    class WithDict:
        pass

    class Slots:
        __slots__ = ("_before", "_after")

    with pytest.raises(TypeError):
        _c_module.record_class(WithDict, ())
    with pytest.raises(TypeError):  # 'row' is missing
        _c_module.record_class(Slots, ("_before", "_after"))
    with pytest.raises(TypeError):  # not a slot of the class
        _c_module.record_class(Slots, ("_before", "_after", "row"))


def test_make_records_checks_its_input() -> None:
    template = tuple(None for _ in FIELDS)
    with pytest.raises(TypeError):
        _c_module.make_records(template[:-1], [], 0)  # wrong template length
    with pytest.raises(TypeError):
        _c_module.make_records(template, [(1, 2, 3)], 2)  # an update row is not a pair
    with pytest.raises(TypeError):
        _c_module.make_records(template, [], 3)  # unknown mode
    recs = _c_module.make_records(template, [("b", "a")], 2)
    assert recs[0].raw_images == ("b", "a") and recs[0].row == 0
    recs = _c_module.make_records(template, ((1,), (2,)), 1)  # any sequence of rows
    assert [(r.raw_images, r.row) for r in recs] == [(((1,), None), 0), (((2,), None), 1)]
