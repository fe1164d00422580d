"""The DDL journal (exactly once across replays), the process caches, and commit tags."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..tables import KNOWN, is_delta
from ...schema.spec import TableSpec

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from ..apply import ApplyConfig


TAG_CONF = "spark.databricks.delta.commitInfo.userMetadata"
JOURNAL_DDL = "app_id string, batch_id bigint, item string, payload string, at timestamp"


def journal_path(target: str) -> str:
    return f"{target.rstrip('/')}/_binlake/ddl_journal"


_JOURNALS: dict[str, list[tuple[str, int, str, str | None]]] = {}
"""Journal rows this process read or wrote, by journal path (one writer per target, as for
`KNOWN`); dropped when a batch fails."""
_OPENING = threading.Lock()
DETAILS: dict[str, tuple[dict[str, str], int, int]] = {}
"""DESCRIBE DETAIL of tables this process read, until it changes them."""


def open_journal(spark: "SparkSession", config: ApplyConfig, batch_id: int) -> dict[str, Any]:
    """What earlier runs of this batch id recorded (`items`: item -> payload), and the DDL
    other batches applied (`elsewhere`: positions); creates the journal."""
    path = journal_path(config.target)
    with _OPENING:  # a sync's warm-up may open it while a DDL batch does
        rows = _JOURNALS.get(path)
        if rows is None:
            if not is_delta(spark, path):
                spark.createDataFrame([], JOURNAL_DDL).write.format("delta").mode("ignore") \
                    .save(path)
                KNOWN[path] = set()
                rows = []
            else:
                rows = [(r[0], r[1], r[2], r[3]) for r in spark.read.format("delta").load(path)
                        .select("app_id", "batch_id", "item", "payload").collect()]
            _JOURNALS[path] = rows
    own = [r for r in rows if (r[0], r[1]) == (config.app_id, batch_id)]
    return {"path": path, "items": {r[2]: r[3] for r in own},
            "elsewhere": {r[2][5:] for r in rows if r[2].startswith("plan:")
                          and (r[0], r[1]) != (config.app_id, batch_id)}}


def record_item(spark: "SparkSession", ctx: "Context", item: str, payload: str | None = None) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    row = (ctx.config.app_id, ctx.batch_id, item, payload)
    (spark.createDataFrame([(*row, now)], JOURNAL_DDL)
     .write.format("delta").mode("append").save(ctx.journal["path"]))
    ctx.journal["items"][item] = payload
    _JOURNALS.setdefault(ctx.journal["path"], []).append(row)


def forget_caches(target: str) -> None:
    """After a failure: read the journal and the tables' details again next time."""
    _JOURNALS.pop(journal_path(target), None)
    DETAILS.clear()


@dataclass
class Context:
    config: ApplyConfig
    batch_id: int
    resolve: Callable[[str, str], TableSpec | None]
    seq_type: Any
    journal: dict[str, Any]
    changes: "DataFrame"
    apply_rows: Callable[..., None]
    """apply._apply_table(spark, part, batch_id, config, spec, trunc, deletes, app_id)"""
    apply_last: Callable[..., None] | None = None
    """For a batch held by the driver: (spark, schema, table, after seq, spec) applies the
    table's rows after its last DDL there (no typing in Spark); None: `apply_rows` does."""


def commit_tags(spark: "SparkSession", path: str) -> set[str]:
    from delta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, path).history(1000).select("userMetadata").collect()
    return {r[0] for r in rows if r[0]}


@contextlib.contextmanager
def tagged_commits(spark: "SparkSession", tag: str) -> Iterator[None]:
    """Commits made inside carry `tag` as their commitInfo.userMetadata."""
    spark.conf.set(TAG_CONF, tag)
    try:
        yield
    finally:
        spark.conf.unset(TAG_CONF)
