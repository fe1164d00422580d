"""`spark.read.format("binlake")`: a batch Python Data Source over binlog files.

A partition per file, or per part of a big file: every binlog file starts with its own
FORMAT_DESCRIPTION and each transaction carries its TABLE_MAPs, so files, and runs of whole
event groups inside them, decode independently on executors. Big files are cut at GTID
events the driver finds near each `splitBytes` boundary without reading the file through
(files.split_points); each task checks that its part ends where the next one begins.
Executors yield Arrow batches in the fixed CDC schema (`arrow.py`); order is `seq`.

Options:
  path / paths   a file, a directory (its numbered binlog files) or a glob; `load([...])`
                 passes several.
  tables         `db.table,db2.*` filter (as `binlake decode --tables`).
  batchSize      rows per Arrow batch (default 10000).
  keyFile        MariaDB file_key_management key file for encrypted binlogs.
  statements     "false" to leave out truncate/ddl records (default "true").
  splitBytes     cut files of twice this size or more into parts of about this size
                 (default 134217728, Spark's maxPartitionBytes; 0: a partition per file).
"""
from __future__ import annotations

import glob
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..binlog.files import SPLIT_BYTES, split_points
from ..binlog.left_out import LeftOut
from ..cdc.arrow import CDC_DDL, file_index

NAME = "binlake"
_NUMBERED = re.compile(r"\.\d+$")


class BinlogFile(InputPartition):
    """One binlog file to decode, or the event groups that start in [begin, end) of it
    (None: its start, its end). Plain attributes: partitions are pickled to executors."""

    def __init__(self, path: str, index: int, begin: int | None = None,
                 end: int | None = None) -> None:
        super().__init__(path if begin is None and end is None else f"{path}@{begin or 4}")
        self.path = path
        self.index = index
        self.begin = begin
        self.end = end


def expand_paths(specs: list[str]) -> list[str]:
    """Files, directories (numbered binlog files inside) and globs -> files in binlog order."""
    found: list[str] = []
    for spec in specs:
        p = Path(spec)
        if p.is_dir():
            found.extend(str(f) for f in p.iterdir() if f.is_file() and _NUMBERED.search(f.name))
        elif any(ch in spec for ch in "*?["):
            found.extend(f for f in glob.glob(spec) if os.path.isfile(f))
        elif p.is_file():
            found.append(str(p))
        else:
            raise FileNotFoundError(f"binlake: no binlog file or directory at {spec}")
    unique = dict.fromkeys(os.path.abspath(f) for f in found)
    return sorted(unique, key=lambda f: (Path(f).name.rsplit(".", 1)[0], file_index(f), f))


def _option_paths(options: Any) -> list[str]:
    specs: list[str] = []
    if options.get("paths"):
        raw = options["paths"]
        specs.extend(json.loads(raw) if raw.lstrip().startswith("[") else raw.split(","))
    if options.get("path"):
        specs.append(options["path"])
    if not specs:
        raise ValueError('binlake: give binlog files with .load(path) or .option("path", ...)')
    return specs


class BinlogFilesDataSource(DataSource):
    """Row changes (plus truncate/ddl records) of binlog files, in the CDC schema."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType | str:
        return CDC_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return BinlogFilesReader(self.options)


class BinlogFilesReader(DataSourceReader):
    """Plans one partition per file on the driver; decodes on executors."""

    def __init__(self, options: Any) -> None:
        # Keep plain values only: the reader is pickled to executors.
        self.files = expand_paths(_option_paths(options))
        self.tables = options.get("tables")
        self.batch_size = int(options.get("batchSize", "10000"))
        self.key_file = options.get("keyFile")
        self.statements = str(options.get("statements", "true")).lower() != "false"
        self.split_bytes = int(options.get("splitBytes", str(SPLIT_BYTES)))

    def partitions(self) -> list[InputPartition]:
        out: list[InputPartition] = []
        for i, f in enumerate(self.files):
            # (an encrypted file is never cut: files.cuttable sees its START_ENCRYPTION)
            bounds: list[int | None] = [None, *split_points(f, self.split_bytes), None]
            out.extend(BinlogFile(f, i, bounds[j], bounds[j + 1]) for j in range(len(bounds) - 1))
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from ..binlog.decoder import BinlogDecoder
        from ..cdc.changes import prepared_records, table_filter
        from ..errors import ConfigError
        from ..binlog.files import locate_prepared, read_range
        from ..cdc.arrow import file_batches

        assert isinstance(partition, BinlogFile)
        keys = None
        if self.key_file:
            from ..binlog.encryption import load_key_file

            keys = load_key_file(Path(self.key_file).read_text())
        tables = table_filter(self.tables)
        # The filter goes into the decoder: rows events of left-out tables are passed over in
        # C, but in an XA group, where their rows are counted (it numbers its records
        # whatever the filter), never decoded (file_batches says which, as it goes).
        dec = BinlogDecoder(file=Path(partition.path).name, keys=keys, json_images=True,
                            table_filter=tables)
        # An XA COMMIT whose PREPARE is in an earlier file (or part of this one): found
        # there and re-read.
        earlier = self.files[:partition.index]
        folder = {Path(f).name: f for f in self.files}
        head = None if partition.begin is None else (partition.path, partition.begin)

        def locate(xid: str, before: Any) -> Any:
            return locate_prepared(earlier, xid, head=head, keys=keys)

        def reread(rng: Any, at: Any) -> tuple[list[Any], int]:
            path = folder.get(rng.file)
            if path is None:
                raise ConfigError(f"XA transaction {rng}: that binlog file is not in the input",
                                  hint="read the files from the one it was prepared in")
            return prepared_records(read_range(path, rng.start, rng.end, keys=keys,
                                               json_images=True, table_filter=tables,
                                               left_out=LeftOut(count=True)), rng, tables)

        yield from file_batches(partition.path, partition.begin, partition.end, decoder=dec,
                                batch_size=self.batch_size, tables=tables,
                                statements=self.statements, locate=locate, reread=reread)
