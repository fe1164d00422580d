"""A batch's net changes MERGEd into a Delta table by delta-rs, in the driver.

Why: on a local master a Spark MERGE of a folded batch costs seconds of fixed work (jobs,
the source copied into the JVM, Delta's snapshot state) before it touches a row; delta-rs
runs the same MERGE natively in a fraction of that (`benchmarks/README.md`). The clauses
are those of the Spark way (`spark/apply.py`'s `_scd1`), written in DataFusion's SQL.

Exactly once as Spark's `txnAppId`/`txnVersion`: the commit records the transaction
(app id, batch id), and a batch whose id is at or below the table's recorded one is a
replay and commits nothing.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .write import LakeWriteError

WRITABLE_FEATURES = frozenset({"timestampNtz", "appendOnly", "invariants"})
"""Delta table features delta-rs writes as Spark's Delta does; a table with any other
(deletion vectors, column mapping, change data feed, ...) is left to Spark."""

COMPACT_FILES = 50
"""Small files after which a table with auto compaction on is compacted (Delta's
`spark.databricks.delta.autoCompact.minNumFiles` default)."""

SMALL_FILE_BYTES = 16 << 20
"""A file below this is small (binlake's sessions set Delta's `minFileSize` to it)."""

COMPACT_TARGET_BYTES = 128 << 20
"""The file size compaction writes (Delta's `maxFileSize` default)."""


@dataclass(frozen=True)
class NetMerge:
    """One SCD1 net MERGE: source columns `_k<j>` (keys), `_seq`, `_ts`, `_kind`, `_full`,
    `_c<i>`/`_p<i>` (values and presence), as `spark/apply.py` folds them."""

    keys: Sequence[str]
    cols: Sequence[str]
    key_index: Mapping[str, int]
    """Target column name -> its key position, for columns that are keys."""
    plain: Collection[int]
    """Indexes of the columns every net upsert carries (set without the presence CASE)."""
    seq_col: str
    ts_col: str
    truncate: tuple[int, int, int, int] | None = None
    """A TRUNCATE in the batch: target rows older than it that no source row matches go."""


def ident(name: str) -> str:
    """A column name as a DataFusion identifier (quoted: names keep their case)."""
    return '"' + name.replace('"', '""') + '"'


def seq_before(column: str, seq: Sequence[int]) -> str:
    """`column` < `seq`, field by field (delta-rs cannot write a struct literal's text)."""
    names = ("file_index", "pos", "inner", "row")
    expr = f"{column}['row'] < {int(seq[3])}"
    for name, value in reversed(list(zip(names[:3], seq[:3]))):
        field = f"{column}['{name}']"
        expr = f"({field} < {int(value)} OR ({field} = {int(value)} AND {expr}))"
    return expr


def writable(path: str) -> str | None:
    """None when delta-rs can MERGE into the table at `path` as Spark would; else why not."""
    from deltalake import DeltaTable

    return _writable(DeltaTable(path))


def _writable(dt: Any) -> str | None:
    """`writable` of an opened table."""
    proto = dt.protocol()
    features = set(proto.writer_features or ()) | set(proto.reader_features or ())
    if proto.min_writer_version > 7 or proto.min_reader_version > 3:
        return f"protocol {proto.min_reader_version}/{proto.min_writer_version}"
    if proto.min_writer_version < 7 and proto.min_writer_version > 2:
        # legacy protocol 3-6 implies check constraints, generated columns, CDF, ...
        return f"writer protocol {proto.min_writer_version}"
    if features - WRITABLE_FEATURES:
        return f"table features {sorted(features - WRITABLE_FEATURES)}"
    conf = dt.metadata().configuration
    if str(conf.get("delta.enableChangeDataFeed", "false")).lower() == "true":
        return "change data feed"
    return None


def unwritable(path: str, wanted: pa.Schema) -> str | None:
    """None when delta-rs can MERGE rows of `wanted`'s columns into the table at `path` as
    Spark would (`writable`, and each column there with the type the rows take); else why
    not (a missing column is added by Spark first)."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path):
        return "a new table"
    dt = DeltaTable(path)  # its log read once for both questions
    why = _writable(dt)
    if why is not None:
        return why
    have = pa.schema(dt.schema().to_arrow())
    for f in wanted:
        i = have.get_field_index(f.name)
        if i < 0:
            return f"column {f.name} is missing"
        if have.field(i).type != f.type:
            return f"column {f.name} is {have.field(i).type}, not {f.type}"
    return None


def net_source(net: pa.Table, spec: NetMerge, types: Mapping[str, pa.DataType],
               binary: Collection[str]) -> pa.Table:
    """A fold's net rows (their values as image texts) as `merge_net`'s source: each key
    and value typed as its column's `types` entry (`binary`: columns whose texts are
    base64), `_ts` as the `ts_col` type. Raises `values.Untyped` for a value Arrow does not
    cast exactly (the caller then takes Spark's way)."""
    from .values import typed_column

    cols: list[Any] = []
    names: list[str] = []
    for j, k in enumerate(spec.keys):
        cols.append(typed_column(net.column(f"_k{j}"), types[k], binary=k in binary, name=k))
        names.append(f"_k{j}")
    cols += [net.column("_seq"), net.column("_ts").cast(types[spec.ts_col]),
             net.column("_kind"), net.column("_full")]
    names += ["_seq", "_ts", "_kind", "_full"]
    for i, c in enumerate(spec.cols):
        if c not in spec.key_index:  # keys are set from `_k<j>`
            cols += [typed_column(net.column(f"_c{i}"), types[c], binary=c in binary, name=c),
                     net.column(f"_p{i}")]
            names += [f"_c{i}", f"_p{i}"]
    return pa.Table.from_arrays(cols, names=names)


def inserted_rows(source: pa.Table, spec: NetMerge, schema: pa.Schema) -> pa.Table:
    """What `merge_net` would insert into a table without rows: the net upserts of a
    `net_source` as the table's columns (`schema`: `spec.cols`, then the seq and ts columns)."""
    ups = source.filter(pc.equal(source.column("_kind"), "upsert"))
    cols = [ups.column(f"_k{spec.key_index[c]}" if c in spec.key_index
                       else f"_c{list(spec.cols).index(c)}") for c in spec.cols]
    cols += [ups.column("_seq"), ups.column("_ts")]
    return pa.Table.from_arrays(cols, schema=schema)


def tombstone_rows(source: pa.Table, nkeys: int, schema: pa.Schema,
                   truncate: Sequence[int] | None) -> pa.Table:
    """A tombstone table's rows (`schema`: the keys, the seq, the TRUNCATE flag) for a
    `net_source`'s deletes, and a marker row (keys NULL) for a TRUNCATE."""
    dels = source.filter(pc.equal(source.column("_kind"), "delete"))
    cols = [dels.column(f"_k{j}") for j in range(nkeys)]
    cols += [dels.column("_seq"), pa.array([False] * dels.num_rows, pa.bool_())]
    rows = pa.Table.from_arrays(cols, schema=schema)
    if truncate is None:
        return rows
    fi, pos, inner, row = truncate
    marker = [pa.nulls(1, f.type) for f in list(schema)[:nkeys]]
    marker += [pa.array([{"file_index": fi, "pos": pos, "inner": inner, "row": row}],
                        schema.field(nkeys).type), pa.array([True])]
    return pa.concat_tables([rows, pa.Table.from_arrays(marker, schema=schema)])


def committed(path: str, app_id: str, version: int) -> bool:
    """Whether the table holds transaction `version` of `app_id` already (or a later one)."""
    from deltalake import DeltaTable

    return _committed(DeltaTable(path), app_id, version)


def _committed(dt: Any, app_id: str, version: int) -> bool:
    seen = dt.transaction_version(app_id)
    return seen is not None and version <= seen


def merge_net(path: str, source: pa.Table, spec: NetMerge, app_id: str,
              version: int) -> dict[str, Any] | None:
    """MERGE `source` into the table at `path` as transaction (app_id, version): a net
    delete removes its key's row, a net upsert updates or inserts it, each only when its seq
    is newer than the row's. None when the transaction was committed before (a replay)."""
    from deltalake import CommitProperties, DeltaTable, Transaction
    from deltalake.exceptions import DeltaError

    dt = DeltaTable(path)
    if _committed(dt, app_id, version):
        return None
    seq, newer = ident(spec.seq_col), f"s._seq > t.{ident(spec.seq_col)}"
    # each term in parentheses: the parser binds AND tighter than IS NOT DISTINCT FROM
    on = " AND ".join(f"(t.{ident(k)} IS NOT DISTINCT FROM s._k{j})"
                      for j, k in enumerate(spec.keys))
    sets: dict[str, str] = {}
    inserts: dict[str, str] = {}
    for i, c in enumerate(spec.cols):
        j = spec.key_index.get(c)
        value = f"s._k{j}" if j is not None else f"s._c{i}"
        if j is None and i not in spec.plain:
            sets[ident(c)] = f"CASE WHEN s._full OR s._p{i} THEN {value} ELSE t.{ident(c)} END"
        else:
            sets[ident(c)] = value
        inserts[ident(c)] = value
    sets[seq] = inserts[seq] = "s._seq"
    sets[ident(spec.ts_col)] = inserts[ident(spec.ts_col)] = "s._ts"
    merger = (dt.merge(source, on, source_alias="s", target_alias="t",
                       commit_properties=CommitProperties(
                           app_transactions=[Transaction(app_id, version)]))
              .when_matched_delete(f"s._kind = 'delete' AND {newer}")
              .when_matched_update(sets, f"s._kind = 'upsert' AND {newer}")
              .when_not_matched_insert(inserts, "s._kind = 'upsert'"))
    if spec.truncate is not None:
        merger = merger.when_not_matched_by_source_delete(
            seq_before(f"t.{seq}", spec.truncate))
    try:
        metrics: dict[str, Any] = merger.execute()
    except (DeltaError, OSError, pa.ArrowException) as exc:
        raise LakeWriteError(f"the MERGE into the Delta table {path} failed: {exc}",
                             hint="the batch is not committed; a restart applies it again"
                             ) from exc
    return metrics


def append_tagged(path: str, rows: pa.Table, tag: str) -> None:
    """Append `rows` to the table at `path` in one commit whose `userMetadata` is `tag` (as
    Spark's `userMetadata` writer option sets it)."""
    from deltalake import CommitProperties, write_deltalake
    from deltalake.exceptions import DeltaError

    try:
        write_deltalake(path, rows, mode="append",
                        commit_properties=CommitProperties(custom_metadata={"userMetadata": tag}))
    except (DeltaError, OSError, pa.ArrowException) as exc:
        raise LakeWriteError(f"appending to the Delta table {path} failed: {exc}",
                             hint="the batch is not committed; a restart applies it again"
                             ) from exc


def user_metadata(path: str, commits: int) -> list[str]:
    """The `userMetadata` of the table's newest `commits` commits (newest first)."""
    from deltalake import DeltaTable

    return [str(c["userMetadata"]) for c in DeltaTable(path).history(commits)
            if c.get("userMetadata")]


def newest_struct(path: str, column: str) -> tuple[int, ...] | None:
    """The largest value of a struct column of ints (compared field by field), or None when
    the table has no row with one."""
    from deltalake import DeltaTable

    table = DeltaTable(path).to_pyarrow_dataset().to_table(columns=[column])
    col = table.column(column)
    if table.num_rows == 0 or col.null_count == table.num_rows:
        return None
    flat = pa.Table.from_arrays(col.combine_chunks().flatten(),
                                names=[f.name for f in col.type]).filter(pc.is_valid(col))
    for name in flat.column_names:
        best = pc.max(flat.column(name))
        flat = flat.filter(pc.equal(flat.column(name), best))
    return tuple(int(v) for v in flat.slice(0, 1).to_pylist()[0].values())


def compact_if_small(path: str) -> bool:
    """What Delta's auto compaction does after a Spark commit: with `COMPACT_FILES` small
    files or more, rewrite them into larger ones (a commit without a txn: replays are not
    affected). True when it compacted."""
    from deltalake import DeltaTable

    dt = DeltaTable(path)
    conf = dt.metadata().configuration
    if str(conf.get("delta.autoOptimize.autoCompact", "false")).lower() != "true":
        return False
    sizes = pa.table(dt.get_add_actions(flatten=True)).column("size_bytes")
    small = pc.sum(pc.less(sizes, SMALL_FILE_BYTES)).as_py() or 0
    if small < COMPACT_FILES:
        return False
    dt.optimize.compact(target_size=COMPACT_TARGET_BYTES)
    return True
