"""The driver-side fold in the C core (`fold_scd1`) gives exactly what its Python twin
(`cdc.net.fold_python`) gives: the same net table, deletes and seqs, on random batches of
inserts, updates (minimal images, key moves), deletes, other ops, duplicates, unsorted seqs
and a TRUNCATE cut; and both refuse what they cannot fold."""
from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
import pytest

from binlake._speedups.native import function, switches
from binlake.cdc import net
from binlake.cdc.arrow import CDC_SCHEMA

pytestmark = pytest.mark.skipif(function("fold_scd1") is None, reason="no C core")

TEXTS = ["", "a", "x" * 40, "é✓", "emoji 😀", 'q"uote', "back\\slash", "tab\tnl\n",
         "\u0001ctl", "true", "null", "1", "slash/", "ä" * 300]
NUMBERS = [0, -1, 7, 2**63 - 1, -(2**63), 2**64 - 1, 1.5, -0.25, 1e300, 2.5e-8, 123456.0]


def _value(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.5:
        return rng.choice(TEXTS)
    if r < 0.9:
        return rng.choice(NUMBERS)
    return rng.random() < 0.5  # booleans become "true"/"false"


def _batch(rng: random.Random, nkeys: int, ncols: int, n: int) -> tuple[pa.Table, list[str],
                                                                        list[str]]:
    keys = [f"k{j}" for j in range(nkeys)]
    cols = keys + [f"c{i}" for i in range(ncols)]
    rows: list[dict[str, Any]] = []
    pos = 100

    def key() -> dict[str, Any]:
        return {k: rng.choice([1, 2, 3, "a", "b", None]) if j else rng.randrange(6)
                for j, k in enumerate(keys)}

    def image(k: dict[str, Any], minimal: bool) -> dict[str, Any]:
        img = dict(k)
        for c in cols[nkeys:]:
            if not minimal or rng.random() < 0.5:
                img[c] = _value(rng)
        if rng.random() < 0.1:
            img["not_selected"] = rng.choice([{"nested": [1, 2]}, "x", 3])
        return img

    def enc(img: dict[str, Any] | None) -> str | None:
        if img is None:
            return None
        if rng.random() < 0.2:
            return json.dumps(img)  # spaces after ':' and ','
        return json.dumps(img, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)

    for _ in range(n):
        op = rng.choices(["insert", "update", "delete", "truncate", "ddl"],
                         [4, 6, 2, 0.3, 0.3])[0]
        if rng.random() > 0.1:  # else the same seq again (a duplicate) or a step back
            pos += rng.choice([1, 1, 1, 5])
        elif rng.random() < 0.5:
            pos -= 3
        before = after = None
        if op == "insert":
            after = image(key(), False)
        elif op == "delete":
            before = image(key(), False)
        elif op == "update":
            k = key()
            minimal = rng.random() < 0.4
            before = image(k, minimal)
            moved = dict(k) if rng.random() < 0.7 else key()
            after = image(moved, minimal)
            if minimal and moved == k:
                for c in keys:
                    if rng.random() < 0.5:
                        after.pop(c, None)
        rows.append({"op": op, "schema": "s", "table": "t",
                     "ts": None if rng.random() < 0.1 else 1_700_000_000_000_000 + pos,
                     "seq": {"file_index": 1 + pos // 1000, "pos": pos, "inner": 0,
                             "row": rng.randrange(2)},
                     "before": enc(before), "after": enc(after)})
    return pa.Table.from_pylist(rows, schema=CDC_SCHEMA), keys, cols


def _both(batch: pa.Table, keys: list[str], cols: list[str], trunc: Any = None) -> None:
    fast = net.net_scd1(batch, keys, cols, trunc)
    with switches.set(c=None):
        slow = net.net_scd1(batch, keys, cols, trunc)
    assert fast.table.schema == slow.table.schema
    assert fast.table.equals(slow.table), (fast.table.to_pylist()[:5], slow.table.to_pylist()[:5])
    assert (fast.deletes, fast.min_seq, fast.max_delete_seq) == \
        (slow.deletes, slow.min_seq, slow.max_delete_seq)


@pytest.mark.parametrize("seed", range(60))
def test_random_batches_fold_alike(seed: int) -> None:
    rng = random.Random(seed)
    batch, keys, cols = _batch(rng, rng.choice([1, 1, 2]), rng.randrange(0, 6),
                               rng.choice([0, 1, 5, 50, 400]))
    _both(batch, keys, cols)
    if batch.num_rows:
        pos = batch.column("seq").to_pylist()[batch.num_rows // 2]
        _both(batch, keys, cols, (pos["file_index"], pos["pos"], pos["inner"], pos["row"]))
    _both(batch.slice(batch.num_rows // 3), keys, cols)  # an offset into every buffer
    chunked = pa.concat_tables([batch.slice(0, batch.num_rows // 2),
                                batch.slice(batch.num_rows // 2)])
    _both(chunked, keys, cols)


def _one(before: str | None, after: str | None, op: str = "update", pos: int = 4) -> pa.Table:
    return pa.Table.from_pylist([{"op": op, "schema": "s", "table": "t", "ts": None,
                                  "seq": {"file_index": 1, "pos": pos, "inner": 0, "row": 0},
                                  "before": before, "after": after}], schema=CDC_SCHEMA)


@pytest.mark.parametrize("before,after", [
    ('{"id": 1, "v": 2}', '{"id": 1, "v": 2'),          # cut short
    ('{"id": 1, "v": 2}', '{"id": 1, "v" 2}'),          # no colon
    ('{"id": 1, "v": 2}', '{"id": 1, "v": tru}'),       # a bad literal
    ('{"id": 1, "v": 2}', '{"id": 1, "v": "a\\qb"}'),   # a bad escape
    ('{"id": 1, "v": 2}', '{"id": 1, "v": "a\u0001"}'),  # a raw control character
    ('{"id": 1, "v": 2}', '{"id": 1, "v": 01}'),        # a leading zero
    ('{"id": 1, "v": 2}', '[1, 2]'),                    # not an object
    ('{"id": 1, "v": 2}', '{"id": 1, "v": {"n": 1}}'),  # a nested value foldable() refuses
])
def test_bad_images_are_refused_by_both(before: str, after: str) -> None:
    batch = _one(before, after)
    with pytest.raises((ValueError, TypeError, AttributeError)):
        net.net_scd1(batch, ["id"], ["id", "v"])
    with switches.set(c=None):
        with pytest.raises((ValueError, TypeError, AttributeError)):
            net.net_scd1(batch, ["id"], ["id", "v"])


def test_c_error_names_the_record() -> None:
    batch = pa.concat_tables([_one(None, '{"id": 1}', "insert"), _one('{"id": 1}', '{"id": }', pos=5)])
    with pytest.raises(ValueError, match=r"change record 1: a bad JSON value"):
        net.net_scd1(batch, ["id"], ["id"])


def test_escapes_and_numbers_keep_their_text() -> None:
    after = '{"id": "\\ud83d\\ude00\\u00e9\\n\\"", "v": -1.50e+3, "w": true, "x": NaN}'
    fast = net.net_scd1(_one(None, after, "insert"), ["id"], ["id", "v", "w", "x"])
    assert fast.table.to_pylist()[0] | {"_seq": None, "_ts": None} == {
        "_k0": "😀é\n\"", "_seq": None, "_ts": None, "_kind": "upsert", "_full": True,
        "_c0": "😀é\n\"", "_p0": True, "_c1": "-1.50e+3", "_p1": True, "_c2": "true",
        "_p2": True, "_c3": "nan", "_p3": True}


def test_folds_in_threads_at_once_alike() -> None:
    """The C fold runs without the GIL (a driver applies tables in threads): four folds of
    one batch at the same time each give the single fold's result."""
    from concurrent.futures import ThreadPoolExecutor

    batch, keys, cols = _batch(random.Random(7), 1, 4, 4000)
    want = net.net_scd1(batch, keys, cols)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: net.net_scd1(batch, keys, cols), range(8)))
    assert all(g.table.equals(want.table) and g.deletes == want.deletes for g in got)
