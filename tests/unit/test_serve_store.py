"""The binlog folder index behind binlake's primary: order, formats, GTID positions, tails."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from binlake.binlog.constants import ChecksumAlg
from binlake.errors import ConfigError
from binlake.gtid.sets import MariaGtidState, MySQLGtidSet
from binlake.serve.store import BinlogStore, EventReader, natural_key

UUID = "396e294c-1ca4-11f1-9ae7-00155da79c6b"


@pytest.fixture
def chain(corpus_dir: Path, tmp_path: Path) -> Path:
    """The two-file GTID chain under its original names (binlog.000001 rotates to binlog.000002)."""
    for i in (1, 2):
        (tmp_path / f"binlog.00000{i}").symlink_to(corpus_dir / f"percona-binlog-server/data_80045_gtid_binlog.00000{i}")
    (tmp_path / "notes.txt").write_text("not a binlog")
    return tmp_path


def test_natural_order() -> None:
    names = ["b.000010", "b.000009", "b.100000", "b.99999"]
    assert sorted(names, key=natural_key) == ["b.000009", "b.000010", "b.99999", "b.100000"]


def test_folder_index(chain: Path) -> None:
    store = BinlogStore(chain)
    assert [f.name for f in store.files] == ["binlog.000001", "binlog.000002"]
    f1, f2 = store.files
    assert f1.checksum == ChecksumAlg.CRC32 and f1.server_version == "8.0.45" and not f1.mariadb
    assert f1.previous_gtids == MySQLGtidSet() and f2.previous_gtids == MySQLGtidSet(f"{UUID}:1-4")
    assert [m.gtid for m in f1.gtids] == [f"{UUID}:{n}" for n in range(1, 5)]
    assert [m.offset for m in f2.gtids] == [197, 529]
    assert store.gtid_executed() == MySQLGtidSet(f"{UUID}:1-6")
    assert store.gtid_purged() == MySQLGtidSet()
    assert store.end() == ("binlog.000002", 847)
    assert store.last_gtid_uuid() == UUID
    assert f1.is_boundary(642) and not f1.is_boundary(643) and f1.is_boundary(f1.end)
    assert store.next_after("binlog.000001") is f2 and store.next_after("binlog.000002") is None
    # MySQL's GTID search: the newest file whose PREVIOUS_GTIDS the replica already has
    assert store.first_file_not_in(MySQLGtidSet(f"{UUID}:1-3")) is f1
    assert store.first_file_not_in(MySQLGtidSet(f"{UUID}:1-4")) is f2
    assert store.first_file_not_in(MySQLGtidSet(f"{UUID}:1-2:4")) is f1


def test_index_file_decides_the_order(chain: Path) -> None:
    (chain / "binlog.index").write_text("./binlog.000002\n./binlog.000001\n")
    assert [f.name for f in BinlogStore(chain).files] == ["binlog.000002", "binlog.000001"]


def test_files_keep_the_order_given(corpus_dir: Path) -> None:
    a = corpus_dir / "percona-operator/binlog.000003"
    b = corpus_dir / "rust_mysql_common/transaction_compression.000001"
    assert [f.name for f in BinlogStore([b, a]).files] == [b.name, a.name]


def test_refusals(corpus_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a binlog"):
        BinlogStore(corpus_dir / "INDEX.md")
    with pytest.raises(ConfigError, match="no binlog files"):
        BinlogStore(tmp_path)
    with pytest.raises(ConfigError, match="two binlog files are named"):
        BinlogStore([corpus_dir / "percona-operator/binlog.000001", corpus_dir / "docker-datadir-AirLin-K70/binlog.000001"])


def test_growing_file_is_indexed_to_its_last_whole_event(corpus_dir: Path, tmp_path: Path) -> None:
    data = (corpus_dir / "percona-binlog-server/data_80045_gtid_binlog.000001").read_bytes()
    live = tmp_path / "binlog.000001"
    live.write_bytes(data[:700])
    store = BinlogStore(tmp_path)
    bf = store.last()
    assert bf.end == 642 and bf.tail_bytes == 58 and len(bf.gtids) == 2
    gen = store.generation
    assert not store.refresh() and store.generation == gen
    with live.open("ab") as fh:
        fh.write(data[700:])
    assert store.refresh() and store.generation == gen + 1
    assert bf.end == len(data) and bf.tail_bytes == 0 and len(bf.gtids) == 4
    reader = EventReader(bf, 642)
    ev = reader.next()
    assert ev is not None and ev.offset == 642 and ev.end == 721 and ev.type_code == 33
    reader.close()


def test_mariadb_positions(corpus_dir: Path, tmp_path: Path) -> None:
    src = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-gtid-domains-xa.000001"
    shutil.copy(src, tmp_path / "m.000001")
    store = BinlogStore(tmp_path)
    bf = store.last()
    assert bf.mariadb and bf.gtid_list is not None
    pos = store.gtid_binlog_pos()
    assert str(pos) == "0-1-175,1-1-1,2-7-1001"  # this file writes in three GTID domains
    assert store.gtid_binlog_state() == "0-1-175,1-1-1,2-1-1000,2-7-1001"  # per (domain, server)
    for g in pos:
        assert g.seq_no >= (bf.gtid_list.get(g.domain_id).seq_no if bf.gtid_list.get(g.domain_id) else 0)
    # a replica at the binlog's end starts in this file; one with nothing can start here only
    # if the file's GTID_LIST is empty
    assert store.first_file_for_state(pos) is bf
    assert (store.first_file_for_state(MariaGtidState()) is bf) == (not bf.gtid_list)
