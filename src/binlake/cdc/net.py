"""A CDC batch's net change per key and table, on the driver, without Spark.

The apply step (spark/apply.py) folds a table's row changes into one change per key before
its MERGE. Done in Spark, that means typing every image with `from_json` and an aggregation
per table; a batch read by the driver (a few MB of JSON images) folds faster here, in one
pass, and Spark gets only the net rows. The fold is exactly the Spark one (`_events` +
`_scd1_net`):

* a change record becomes events per key: insert and update upsert, delete deletes, an update
  whose key changes deletes the old key and upserts the new one (both at the record's seq);
* per key: the newest event's seq, time and kind; `full` when any event reset the key
  (insert, delete, key move); per column the value of the newest event that holds the column
  or resets the key, and whether that event held it (minimal row images);
* events not after the table's TRUNCATE in the batch are dropped; a seq seen twice counts once.

Values stay the text `from_json(image, 'map<string,string>')` gives them (JSON strings as
their content, numbers as their text), so the Spark side types them with the same
`typed_value` as the generic path. Keys are compared as that text, which equals comparing
the typed keys only for the types in `TEXT_EXACT_KEYS`; `foldable` says when a table may be
folded here at all.
"""
from __future__ import annotations

import json
import json.scanner
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..schema.spec import (
    BINARY_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, TEXT_TYPES, TableSpec,
)
from .._speedups.native import function
from .arrow import SEQ_TYPE

ROW_OPS = ("insert", "update", "delete")

TEXT_EXACT_KEYS = (*INTEGER_TYPES, *TEXT_TYPES, *BINARY_TYPES, "decimal", "year", "bit")
"""Key column types whose image text is canonical (one text per typed value): integers,
DECIMAL (written with its scale), strings (compared as bytes by Delta too), base64 binary.
Temporal keys are not (zero dates all type to NULL), nor are floating point keys."""

NESTED_TYPES = (*GEOMETRY_TYPES, "vector")
"""Column types whose image value is a JSON object or array (typed from a struct schema)."""


def foldable(spec: TableSpec, keys: Sequence[str], cols: Sequence[str]) -> str | None:
    """None when a table's changes fold here exactly; else why not (for the log)."""
    for k in keys:
        c = spec.column(k)
        if c.type not in TEXT_EXACT_KEYS:
            return f"key column {k} is {c.type}"
    for name in cols:
        if spec.column(name).type in NESTED_TYPES:
            return f"column {name} is {spec.column(name).type}"
    return None


@dataclass
class BatchTable:
    """What planning needs of one (schema, table) in a batch (the Spark `_batch_stats` row)."""

    schema: str
    table: str | None
    trunc: tuple[int, int, int, int] | None = None
    deletes: bool = False
    dels: bool = False
    rows: bool = False
    ddl: bool = False
    n: int = 0
    ts: Any = None
    statement: dict[str, Any] | None = None

    def __getitem__(self, name: str) -> Any:  # the shape of a Spark Row, for shared code
        return getattr(self, name)


def _seqs(batch: pa.Table | pa.RecordBatch) -> list[tuple[int, int, int, int]]:
    seq = batch.column("seq")
    if isinstance(seq, pa.ChunkedArray):
        seq = seq.combine_chunks()
    return list(zip(*(seq.field(f.name).to_pylist() for f in SEQ_TYPE)))


def batch_stats(batch: pa.Table) -> list[BatchTable]:
    """Per (schema, table) of a CDC batch, in the order the batch first names them: last
    TRUNCATE seq, updates/deletes present, deletes present, rows, ddl, record count
    (statements not counted), newest time, first statement-logged DML.

    Counted per (schema, table, op) by one Arrow aggregation; only TRUNCATE and statement
    records, which are few, are looked at one by one."""
    ops = batch.column("op")
    listed = pa.array([*ROW_OPS, "truncate", "ddl", "statement"])
    keep = pc.indices_nonzero(pc.fill_null(pc.is_in(ops, value_set=listed), False))
    if len(keep) == 0:
        return []
    sub = pa.table({"i": keep, "op": ops.take(keep), "schema": batch.column("schema").take(keep),
                    "table": batch.column("table").take(keep), "ts": batch.column("ts").take(keep)})
    groups = sub.group_by(["schema", "table", "op"], use_threads=False).aggregate(
        [("i", "min"), ("i", "count"), ("ts", "max")]).to_pylist()
    first: dict[tuple[str, str | None], int] = {}
    out: dict[tuple[str, str | None], BatchTable] = {}
    for g in groups:
        key = (g["schema"], g["table"])
        first[key] = min(first.get(key, g["i_min"]), g["i_min"])
        st = out.get(key)
        if st is None:
            st = out[key] = BatchTable(*key)
        op = g["op"]
        if op == "statement":
            continue
        st.n += g["i_count"]
        if g["ts_max"] is not None and (st.ts is None or g["ts_max"] > st.ts):
            st.ts = g["ts_max"]
        if op == "truncate":
            st.rows = True
        elif op == "ddl":
            st.ddl = True
        else:
            st.rows = True
            st.deletes = st.deletes or op != "insert"
            st.dels = st.dels or op == "delete"
    rare = pc.indices_nonzero(pc.fill_null(
        pc.is_in(ops, value_set=pa.array(["truncate", "statement"])), False))
    if len(rare):
        part = batch.take(rare)
        seqs = _seqs(part)
        stmt_seq: dict[tuple[str, str | None], tuple[int, ...]] = {}
        for j, (op, schema, table) in enumerate(zip(part.column("op").to_pylist(),
                                                    part.column("schema").to_pylist(),
                                                    part.column("table").to_pylist())):
            key = (schema, table)
            st = out[key]
            if op == "truncate":
                if st.trunc is None or seqs[j] > st.trunc:
                    st.trunc = seqs[j]
            elif key not in stmt_seq or seqs[j] < stmt_seq[key]:
                stmt_seq[key] = seqs[j]
                st.statement = {"file": part.column("file")[j].as_py(),
                                "pos": part.column("pos")[j].as_py(),
                                "query": part.column("query")[j].as_py()}
    return [out[k] for k in sorted(out, key=first.__getitem__)]


def _text(v: Any) -> Any:
    """A parsed scalar as `from_json` reads it into a string (numbers as their text)."""
    t = type(v)
    if t is str or v is None:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return repr(v)
    raise ValueError(f"a nested image value ({t.__name__}) where `foldable` allows none")


_scan: Any = json.scanner.make_scanner(
    json.JSONDecoder(parse_float=str, parse_int=str))  # type: ignore[arg-type]


_decode = json.JSONDecoder(parse_float=str, parse_int=str).decode


def _loads(text: str) -> Any:
    try:
        return _scan(text, 0)[0]  # the C scanner, without `decode`'s Python steps
    except StopIteration:  # (not an object at offset 0: let `decode` say what it is)
        return _decode(text)


"""Images parsed with numbers kept as their text: the text `from_json` reads into a string
(binlake writes integers with `str` and floating point with `repr`, so there is one text per
value); booleans and nested values are turned into text when the columns are built."""


@dataclass
class NetChanges:
    """One table's net change per key, as Arrow: `_k<j>` key texts, `_seq`, `_ts`, `_kind`
    ('upsert' or 'delete'), `_full`, then `_c<i>` value texts and `_p<i>` presence."""

    table: pa.Table
    deletes: int
    """Keys whose net change is a delete."""
    min_seq: tuple[int, int, int, int] | None
    """The oldest event folded (None: none), for the late-change check."""
    max_delete_seq: tuple[int, int, int, int] | None


SLICE_ROWS = 4096
"""Records whose images are turned into Python objects at a time (the rest stay in Arrow)."""

SLICE_BYTES = 4 << 20
"""Image bytes turned into Python objects at a time: a slice of wide rows (large TEXT/BLOB
images) would otherwise hold hundreds of MB of Python strings at once."""


def fold_slices(batch: pa.Table) -> Iterable[tuple[int, int]]:
    """(offset, length) of consecutive slices of at most SLICE_ROWS records and, past the
    first record, at most SLICE_BYTES of image text."""
    n = batch.num_rows
    if n == 0:
        return
    sizes = pc.add(pc.fill_null(pc.binary_length(batch.column("before")), 0),
                   pc.fill_null(pc.binary_length(batch.column("after")), 0))
    if pc.sum(sizes).as_py() <= SLICE_BYTES:
        yield from ((off, SLICE_ROWS) for off in range(0, n, SLICE_ROWS))
        return
    start, acc = 0, 0
    for i, size in enumerate(sizes.to_pylist()):
        if i > start and (i - start >= SLICE_ROWS or acc + size > SLICE_BYTES):
            yield start, i - start
            start, acc = i, 0
        acc += size
    yield start, n - start


def net_scd1(batch: pa.Table | pa.RecordBatch, keys: Sequence[str], cols: Sequence[str],
             trunc: Sequence[int] | None = None) -> NetChanges:
    """Fold one table's change records (CDC schema) into its net change per key: in the C
    core when it is in use (`fold_scd1`), else here (`fold_python`), with the same result."""
    if not isinstance(batch, pa.Table):
        batch = pa.Table.from_batches([batch])
    fields = _one(batch.column("seq")).flatten()
    ordered = pc.sort_indices(pa.table(fields, names=[f.name for f in SEQ_TYPE]),
                              [(f.name, "ascending") for f in SEQ_TYPE])
    if batch.num_rows and not pc.all(pc.equal(ordered, pa.array(range(batch.num_rows),
                                                              ordered.type))).as_py():
        batch = batch.take(ordered)
    fast = function("fold_scd1")
    if fast is None:
        return fold_python(batch, keys, cols, trunc)
    return _fold_c(fast, batch, keys, cols, trunc)


def _buffers(a: pa.Array) -> tuple[Any, Any, Any, int]:
    """(validity or None, values or text data, text offsets or None, offset) of an array."""
    bufs = a.buffers()
    if pa.types.is_string(a.type):
        return bufs[0], bufs[2] if bufs[2] is not None else b"", bufs[1], a.offset
    return bufs[0], bufs[1], None, a.offset


def _one(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One array of a column (a single chunk as it is, without a copy)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    if column.num_chunks == 1:
        return column.chunk(0)
    return column.combine_chunks()


def _fold_c(fast: Any, batch: pa.Table, keys: Sequence[str], cols: Sequence[str],
            trunc: Sequence[int] | None) -> NetChanges:
    n = batch.num_rows
    ops = _one(pc.fill_null(pc.index_in(batch.column("op"), value_set=pa.array(ROW_OPS)), -1)
               .cast(pa.int8()))
    ops_buf = ops.buffers()[1].slice(ops.offset, n) if n else b""
    seq = _one(batch.column("seq")).flatten()
    ts = _one(pc.cast(batch.column("ts"), pa.int64()))
    out = fast(n, ops_buf, tuple(_buffers(f) for f in seq), _buffers(ts),
               _buffers(_one(batch.column("before"))), _buffers(_one(batch.column("after"))),
               tuple(k.encode() for k in keys), tuple(c.encode() for c in cols),
               tuple(trunc) if trunc is not None else None)
    (m, key_cols, val_cols, present, fi, pos, inner, row, ts_data, ts_nulls, ts_valid,
     dels, full, deletes, min_seq, max_del) = out

    def text(t: tuple[Any, Any, Any, int]) -> pa.Array:
        valid, offsets, data, nulls = t
        return pa.Array.from_buffers(pa.string(), m, [
            None if valid is None else pa.py_buffer(valid), pa.py_buffer(offsets),
            pa.py_buffer(data)], null_count=nulls)

    def flags(bits: bytes) -> pa.Array:
        return pa.Array.from_buffers(pa.bool_(), m, [None, pa.py_buffer(bits)], null_count=0)

    def ints(t: pa.DataType, data: bytes) -> pa.Array:
        return pa.Array.from_buffers(t, m, [None, pa.py_buffer(data)], null_count=0)

    arrays: list[pa.Array] = [text(k) for k in key_cols]
    names = [f"_k{j}" for j in range(len(key_cols))]
    arrays.append(pa.StructArray.from_arrays(
        [ints(f.type, d) for f, d in zip(SEQ_TYPE, (fi, pos, inner, row))],
        fields=list(SEQ_TYPE)))
    stamps = pa.Array.from_buffers(pa.int64(), m, [
        pa.py_buffer(ts_valid) if ts_nulls else None, pa.py_buffer(ts_data)],
        null_count=ts_nulls)
    arrays.append(stamps.cast(pa.timestamp("us", tz="UTC")))
    arrays += [pc.if_else(flags(dels), "delete", "upsert"), flags(full)]
    names += ["_seq", "_ts", "_kind", "_full"]
    for i, (v, p) in enumerate(zip(val_cols, present)):
        arrays += [text(v), flags(p)]
        names += [f"_c{i}", f"_p{i}"]
    return NetChanges(pa.Table.from_arrays(arrays, names=names), deletes, min_seq, max_del)


def fold_python(batch: pa.Table, keys: Sequence[str], cols: Sequence[str],
                trunc: Sequence[int] | None = None) -> NetChanges:
    """`net_scd1` in Python, on records in seq order: the reference of the C core's fold."""
    seqs = _seqs(batch)
    cut = tuple(trunc) if trunc is not None else None
    nk, nc = len(keys), len(cols)
    index = {n: j for j, n in enumerate(cols)}
    # per key: [seq, ts, kind, full, values, present]
    state: dict[tuple[Any, ...], list[Any]] = {}
    get = state.get
    last = None
    min_seq = None
    absent = (None,) * nc
    no = (False,) * nc
    every = (True,) * nc
    for off, length in fold_slices(batch):
        part = batch.slice(off, length)
        ops = part.column("op").to_pylist()
        ts = pc.cast(part.column("ts"), pa.int64()).to_pylist()
        befores = part.column("before").to_pylist()
        afters = part.column("after").to_pylist()
        for i, op in enumerate(ops):
            if op not in ROW_OPS:
                continue
            seq = seqs[off + i]
            if seq == last or (cut is not None and seq <= cut):
                continue  # a duplicate (at-least-once input), or before the TRUNCATE
            last = seq
            if min_seq is None:
                min_seq = seq
            t = ts[i]
            if op == "update":
                b = _loads(befores[i])
                a = _loads(afters[i])
                bget = b.get
                old = tuple(map(bget, keys))
                new = tuple(a[n] if n in a else bget(n) for n in keys)
                if old != new:  # a key move: delete the old key, upsert the new one
                    state[old] = [seq, t, "delete", True, list(absent), list(no)]
                    state[new] = [seq, t, "upsert", True,
                                  [a[n] if n in a else bget(n) for n in cols],
                                  [n in a or n in b for n in cols]]
                    continue
                st = get(new)
                if st is None:
                    st = state[new] = [seq, t, "upsert", False, list(absent), list(no)]
                else:
                    st[0], st[1], st[2] = seq, t, "upsert"
                values, present = st[4], st[5]
                for n, v in a.items():
                    j = index.get(n)
                    if j is not None:
                        values[j] = v
                        present[j] = True
            elif op == "insert":
                a = _loads(afters[i])
                state[tuple(map(a.get, keys))] = [seq, t, "upsert", True, list(map(a.get, cols)),
                                                  list(every)]
            else:
                b = _loads(befores[i])
                state[tuple(map(b.get, keys))] = [seq, t, "delete", True, list(absent), list(no)]
    return _net_table(state, nk, nc, min_seq)


def _strings(values: Sequence[Any]) -> pa.Array:
    """Texts as an Arrow string column (booleans and nested values made text first)."""
    try:
        return pa.array(values, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([_text(v) for v in values], pa.string())


def _net_table(state: dict[tuple[Any, ...], list[Any]], nk: int, nc: int,
               min_seq: Any) -> NetChanges:
    keys = list(state)
    sts = list(state.values())
    arrays: list[pa.Array] = []
    names: list[str] = []
    key_cols = list(zip(*keys)) if keys else [()] * nk
    for j in range(nk):
        arrays.append(_strings(key_cols[j]))
        names.append(f"_k{j}")
    fields = list(zip(*(s[0] for s in sts))) if sts else [()] * 4
    arrays.append(pa.StructArray.from_arrays(
        [pa.array(fields[f], field.type) for f, field in enumerate(SEQ_TYPE)],
        fields=list(SEQ_TYPE)))
    names.append("_seq")
    arrays.append(pa.array([s[1] for s in sts], pa.int64()).cast(pa.timestamp("us", tz="UTC")))
    names.append("_ts")
    kinds = [s[2] for s in sts]
    arrays += [pa.array(kinds, pa.string()), pa.array([s[3] for s in sts], pa.bool_())]
    names += ["_kind", "_full"]
    values = list(zip(*(s[4] for s in sts))) if sts else [()] * nc
    present = list(zip(*(s[5] for s in sts))) if sts else [()] * nc
    for i in range(nc):
        arrays.append(_strings(values[i]))
        arrays.append(pa.array(present[i], pa.bool_()))
        names += [f"_c{i}", f"_p{i}"]
    dels = [s[0] for s in sts if s[2] == "delete"]
    return NetChanges(pa.Table.from_arrays(arrays, names=names), len(dels), min_seq,
                      max(dels) if dels else None)


def present_columns(net: NetChanges) -> set[int]:
    """Indexes of the columns whose value every net upsert carries (a full row, or the column
    present in its images): a MERGE may set them without asking per row."""
    t = net.table
    ups = pc.equal(t.column("_kind"), "upsert")
    full = t.column("_full")
    nc = sum(1 for n in t.column_names if n.startswith("_p"))
    plain = set()
    for i in range(nc):
        missing = pc.and_(ups, pc.invert(pc.or_(full, t.column(f"_p{i}"))))
        if not pc.any(missing).as_py():
            plain.add(i)
    return plain


def table_rows(batch: pa.Table, schema: str, table: str) -> pa.Table:
    """The records of one table in a CDC batch."""
    mask = pc.and_(pc.equal(batch.column("schema"), schema), pc.equal(batch.column("table"), table))
    return batch.filter(mask)


def tables_of(stats: Iterable[BatchTable]) -> list[tuple[str, str]]:
    """(schema, table) of the stats rows that carry rows or a TRUNCATE."""
    return sorted((s.schema, s.table) for s in stats if s.rows and s.table is not None)
