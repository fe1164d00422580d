"""`binlake decode` on real corpus files: outputs, filters, stats and loud failures."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from binlake.cli.program import main

GEN = "generated-mariadb-10.11"
FULL = f"{GEN}/mariadb-10.11.19-row-full-metafull-crc32.000001"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_jsonl_records_are_typed_and_exact(corpus_dir: Path) -> None:
    res = run("decode", str(corpus_dir / FULL))
    assert res.exit_code == 0
    rows = [json.loads(line) for line in res.output.splitlines()]
    t_int = next(r for r in rows if r["table"] == "t_int")
    assert t_int["after"]["biu"] == 18446744073709551615  # JSON integer, unsigned 64-bit
    t_dec = next(r for r in rows if r["table"] == "t_dec")
    assert t_dec["after"]["d1"] == "12345678.90" and t_dec["after"]["f"] == 3.14159
    t_time = [r for r in rows if r["table"] == "t_time"][:2]
    assert t_time[0]["after"]["dt3"] == "2024-02-29T23:59:59.999"
    assert t_time[0]["after"]["ts6"] == "2024-06-30T12:00:00.123456Z"
    assert t_time[1]["after"]["d"] == "0000-00-00"  # zero date kept, not null
    t_str = next(r for r in rows if r["table"] == "t_str")
    assert t_str["after"]["vbn"] == "3q2+7wD/"  # binary as base64
    assert t_int["position"]["file"] == Path(FULL).name and t_int["gtid"] == "0-1-12"


def test_absent_columns_are_left_out(corpus_dir: Path) -> None:
    res = run("decode", str(corpus_dir / f"{GEN}/mariadb-10.11.19-row-minimal-metaminimal-crc32.000001"))
    rows = [json.loads(line) for line in res.output.splitlines()]
    upd = next(r for r in rows if r["op"] == "update")
    assert len(upd["before"]) < len(upd["after"]) or len(upd["after"]) < 16


def test_tables_and_positions_filter(corpus_dir: Path) -> None:
    res = run("decode", "--tables", "corpus.t_enum", str(corpus_dir / FULL))
    tables = {json.loads(line)["table"] for line in res.output.splitlines()}
    assert tables == {"t_enum"}
    all_rows = [json.loads(x) for x in run("decode", str(corpus_dir / FULL)).output.splitlines()]
    cut = all_rows[10]["position"]["pos"]
    later = [json.loads(x) for x in run("decode", "--start-position", str(cut),
                                        str(corpus_dir / FULL)).output.splitlines()]
    assert later and all(r["position"]["pos"] >= cut for r in later)
    assert len(later) == sum(1 for r in all_rows if r["position"]["pos"] >= cut)


def test_left_out_tables_passed_over_change_no_output_or_count(corpus_dir: Path) -> None:
    """With only --tables, the left-out tables' rows events are passed over in C (not handed
    out); --start-position 4 makes the CLI see every event. Both must print the same records
    (XA transactions numbered alike) and count the same events."""
    xa = f"{GEN}/mariadb-10.11.19-gtid-domains-xa.000001"
    for name, tables in ((FULL, "corpus.t_enum"), (FULL, "corpus.t_int,corpus.t_str"),
                         (xa, "corpus.none"), *((xa, t) for t in _tables(corpus_dir / xa))):
        path = str(corpus_dir / name)
        for extra in ((), ("--output", "null", "--stats")):
            skipped = run("decode", "--tables", tables, *extra, path)
            walked = run("decode", "--tables", tables, "--start-position", "4", *extra, path)
            assert skipped.exit_code == walked.exit_code == 0
            if extra:  # the stats line: all but the time
                got, want = json.loads(skipped.output), json.loads(walked.output)
                assert got.pop("seconds") >= 0 and want.pop("seconds") >= 0
                assert got == want, (name, tables)
            else:
                assert skipped.output == walked.output, (name, tables)
    stats = json.loads(run("decode", "--tables", "corpus.none", "--output", "null", "--stats",
                           str(corpus_dir / FULL)).output)
    every = json.loads(run("decode", "--output", "null", "--stats", str(corpus_dir / FULL)).output)
    assert stats["rows"] == 0 and stats["events"] == every["events"]


def _tables(path: Path) -> list[str]:
    rows = [json.loads(x) for x in run("decode", str(path)).output.splitlines()]
    names = sorted({f"{r['schema']}.{r['table']}" for r in rows})
    assert names
    return names


def test_gtid_filter(corpus_dir: Path) -> None:
    res = run("decode", "--gtid", "0-1-17", str(corpus_dir / FULL))
    rows = [json.loads(x) for x in res.output.splitlines()]
    assert rows and {r["gtid"] for r in rows} == {"0-1-17"}


def test_stats_null_output(corpus_dir: Path) -> None:
    res = run("decode", "--output", "null", "--stats", str(corpus_dir / FULL))
    stats = json.loads(res.output.strip())
    jsonl = run("decode", str(corpus_dir / FULL)).output.splitlines()
    assert stats["rows"] == len(jsonl) and stats["events"] > stats["rows"]
    assert stats["bytes"] == (corpus_dir / FULL).stat().st_size


def test_events_text_and_key_file(corpus_dir: Path) -> None:
    enc = corpus_dir / f"{GEN}/mariadb-10.11.19-encrypted-row-full-crc32.000001"
    res = run("decode", "--events", "--output", "text", "--key-file",
              str(corpus_dir / f"{GEN}/binlog-key.txt"), str(enc))
    assert res.exit_code == 0
    assert "START_ENCRYPTION" in res.output and "TABLE_MAP" in res.output
    no_key = CliRunner().invoke(main, ["decode", str(enc)])
    assert no_key.exit_code != 0 and "key" in no_key.output


def test_corrupt_file_exits_nonzero_naming_offset(corpus_dir: Path) -> None:
    res = CliRunner().invoke(main, ["decode", str(corpus_dir / "rust_mysql_common/corrupt-relay-bin.000624")])
    assert res.exit_code != 0
    assert "corrupt-relay-bin.000624" in res.output and "offset 91204" in res.output


def test_help_reads_well() -> None:
    res = run("decode", "--help")
    for word in ("--start-position", "--gtid", "--tables", "--key-file", "--output", "--stats"):
        assert word in res.output



def test_jobs_print_the_same_bytes_in_the_same_order(corpus_dir: Path) -> None:
    """--jobs decodes files in worker processes; every option's output (and a failure's
    partial output, message and exit code) must be an in-order run's."""
    names = [FULL, f"{GEN}/mariadb-10.11.19-gtid-domains-xa.000001",
             f"{GEN}/mariadb-10.11.19-row-minimal-metaminimal-crc32.000001",
             f"{GEN}/mariadb-10.11.19-row-compressed-crc32.000001",
             f"{GEN}/mariadb-10.11.19-statement-mixed.000001"]
    files = [str(corpus_dir / n) for n in names]
    cut = [json.loads(x) for x in run("decode", files[0]).output.splitlines()][5]["position"]["pos"]
    for extra in ((), ("--events", "--output", "text"), ("--tables", "corpus.t_enum,corpus.t_int"),
                  ("--gtid", "0-1-17"), ("--start-position", str(cut), "--stop-position", "1500"),
                  ("--output", "text", "--tables", "corpus.none")):
        want = run("decode", *extra, *files)
        assert want.exit_code == 0 and (want.output != "") == ("corpus.none" not in extra)
        for jobs in ("2", "0"):
            got = run("decode", "--jobs", jobs, *extra, *files)
            assert (got.exit_code, got.output) == (0, want.output), (extra, jobs)
    stats = [json.loads(run("decode", "-o", "null", "--stats", "-j", j, *files).output)
             for j in ("1", "3")]
    assert stats[0].pop("seconds") >= 0 and stats[1].pop("seconds") >= 0
    assert stats[0] == stats[1] and stats[0]["rows"] > 0
    broken = [*files[:2], str(corpus_dir / "rust_mysql_common/corrupt-relay-bin.000624"), files[2]]
    want = CliRunner().invoke(main, ["decode", *broken])
    got = CliRunner().invoke(main, ["decode", "--jobs", "2", *broken])
    assert want.exit_code == got.exit_code == 2
    assert "offset 91204" in want.stderr and got.stderr == want.stderr
    assert got.stdout == want.stdout
    assert got.stdout.count("corrupt-relay-bin") > 10  # its rows before the bad event
    assert Path(files[2]).name not in got.stdout  # and nothing after it
    # a file from a server without GTIDs: no GTID of the file before stamped on its records
    assert {json.loads(line)["gtid"] for line in got.stdout.splitlines()
            if "corrupt-relay-bin" in line} == {None}


def test_jobs_refuse_a_schema_history(tmp_path: Path, corpus_dir: Path) -> None:
    history = tmp_path / "h.json"
    history.write_text("{}")
    res = CliRunner().invoke(main, ["decode", "--jobs", "2", "--schema-history", str(history),
                                    str(corpus_dir / FULL)])
    assert res.exit_code == 2 and "--jobs 1" in res.output


PIECES = {  # file -> bytes per piece
    FULL: 8192, f"{GEN}/mariadb-10.11.19-gtid-domains-xa.000001": 300,
    f"{GEN}/mariadb-10.11.19-row-compressed-crc32.000001": 1024,
    "docker-datadir-juanonsoftware/binlog.000017": 2048, "docker-datadir-9oormthon/binlog.000008": 2048,
    "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001": 150,
    "binlog-connector-java/mysql-bin.compressed": 100, "rust_mysql_common/transaction_compression.000001": 150,
    "rust_mysql_common/bug33029-slave-relay-bin.000001": 300,  # a relay log: not cut
    "relay": 8192,  # FULL with a relay log's next-event positions (the primary's) past its head
    "datadir-mysql51-CyberusNetwork/mysql-bin.000001": 1024,  # no GTID events to cut at
    f"{GEN}/mariadb-10.11.19-encrypted-row-full-crc32.000001": 8192}  # not cut


def test_files_cut_in_pieces_decode_as_whole_files(corpus_dir: Path, tmp_path: Path) -> None:
    """Pieces a few hundred bytes to KiB long (find_group_start guessing each piece's first
    event group, the piece before stopping at it): MariaDB and MySQL GTIDs, tagged GTIDs,
    compressed payloads, an XA group, a file with no GTIDs, a relay log and an encrypted
    file (not cut), and one with a relay log's positions past its head (its pieces never
    join: it is decoded again whole). The output is the in-order run's."""
    import io

    from binlake.cli.decode_command import (DecodeSpec, _decode_piece, _joined, decode_in_order,
                                            decode_in_parallel, plan_pieces)
    from binlake.binlog.files import find_group_start

    keys = _keys(corpus_dir)
    relay = tmp_path / "relay-bin.000001"
    relay.write_bytes(_shift_next_positions((corpus_dir / FULL).read_bytes(), 1000))
    for name, piece_bytes in PIECES.items():
        files = (str(relay if name == "relay" else corpus_dir / name),)
        plan = plan_pieces(DecodeSpec(files=files), 2, piece_bytes=piece_bytes)
        uncut = "encrypted" in name or "slave-relay" in name  # (files.cuttable)
        assert (plan[0].parts > 2) == (not uncut), name
        # each piece began at the event group the one before stopped at (but in the relay
        # log, whose pieces are decoded again whole)
        pieces = [_decode_piece(DecodeSpec(files=files, keys=keys, output="null"), p, "", "", "")
                  for p in plan]
        assert _joined(pieces) == (name != "relay"), name
        cut = sum(p.began is not None for p in pieces)  # (a piece with no group: empty)
        assert (cut > 0) == (not uncut and "mysql51" not in name and name != "relay"), name
        for options in ({}, {"what": "events", "output": "text"}, {"tables": "corpus.t_enum,*.t*"},
                        {"gtids": "0-1-17"}, {"output": "null"}):
            spec = DecodeSpec(files=files, keys=keys, **options)
            want, got = io.StringIO(), io.StringIO()
            counts = decode_in_order(spec, want)
            assert decode_in_parallel(spec, 2, got, piece_bytes=piece_bytes) == counts, name
            assert got.getvalue() == want.getvalue(), (name, options)
    # the guess lands on the event group a walk over every header finds
    path = corpus_dir / FULL
    starts, pos, data = [], 4, path.read_bytes()
    while pos < len(data):
        if data[pos + 4] == 162:
            starts.append(pos)
        pos += int.from_bytes(data[pos + 9:pos + 13], "little")
    assert len(starts) > 20
    for target in range(0, len(data), 997):
        assert find_group_start(path, target) == next((s for s in starts if s >= target), None)


def _shift_next_positions(data: bytes, by: int) -> bytes:
    """The next-position field of every event but the first four (which files.cuttable
    reads) moved by `by`, its CRC32 written again."""
    import zlib

    out, pos, n = bytearray(data), 4, 0
    while pos < len(out):
        n += 1
        size = int.from_bytes(out[pos + 9:pos + 13], "little")
        next_pos = int.from_bytes(out[pos + 13:pos + 17], "little")
        out[pos + 13:pos + 17] = (next_pos + (by if n > 4 else 0)).to_bytes(4, "little")
        out[pos + size - 4:pos + size] = zlib.crc32(out[pos:pos + size - 4]).to_bytes(4, "little")
        pos += size
    return bytes(out)


def _keys(corpus_dir: Path) -> dict[int, bytes]:
    from binlake.binlog.encryption import load_key_file

    return load_key_file((corpus_dir / f"{GEN}/binlog-key.txt").read_text())


def test_jobs_cut_one_big_file(corpus_dir: Path) -> None:
    """One file of 33.5 MB (a 16 MiB row inserted then updated) and --jobs 2: two pieces of
    the default size, the cut inside the big event; the output is one process's."""
    from binlake.cli.decode_command import DecodeSpec, plan_pieces

    big = str(corpus_dir / f"{GEN}/mariadb-10.11.19-large-event.000001")
    assert [p.parts for p in plan_pieces(DecodeSpec(files=(big,)), 2)] == [2, 2]
    want, got = run("decode", big), run("decode", "--jobs", "2", big)
    assert got.exit_code == want.exit_code == 0 and len(want.output) > 32 << 20
    assert got.output == want.output


def test_the_program_settles_its_imports_a_caller_keeps_its_collector(corpus_dir: Path) -> None:
    """The `binlake` program freezes its imported modules for the collector (cli.
    settle_imports); a caller running the command in its own process does not get its
    collector changed, and the program's output is the same."""
    import gc
    import subprocess
    import sys

    frozen = gc.get_freeze_count()
    res = run("decode", "--output", "null", "--stats", str(corpus_dir / FULL))
    assert res.exit_code == 0 and gc.get_freeze_count() == frozen
    in_process = json.loads(res.output)
    script = ("import atexit, gc, sys\n"
              "import binlake.cli.program as cli\n"
              "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
              "sys.argv = ['binlake', 'decode', '--output', 'null', '--stats', sys.argv[1]]\n"
              "cli.entry()\n")
    out = subprocess.run([sys.executable, "-c", script, str(corpus_dir / FULL)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    program = json.loads(out.stdout)
    assert {k: program[k] for k in ("rows", "events", "bytes")} == \
        {k: in_process[k] for k in ("rows", "events", "bytes")}
    frozen_line = [ln for ln in out.stderr.splitlines() if ln.startswith("frozen ")]
    assert frozen_line and int(frozen_line[0].split()[1]) > 10_000


def test_both_ways_of_starting_the_program_settle_the_imports() -> None:
    """`binlake` (the console script: cli.entry) and `python -m binlake.cli` both freeze
    the imports of a command that reads cli.settle_imports from binlake.cli.program (stream does;
    under -m, the module run as __main__ is a second copy of binlake.cli.program, and the flag was
    set on that copy only). Here stream fails at once (nothing listens on the port it
    is given), after its imports are settled."""
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = ["binlake", "stream", f"mysql://u:p@127.0.0.1:{port}", "--until-end",
            "--output", "null"]
    start = {"console script": "import binlake.cli.program as cli\ncli.entry()\n",
             "python -m": "import runpy\nrunpy.run_module('binlake.cli.program', run_name='__main__', "
                          "alter_sys=True)\n"}
    for way, code in start.items():
        script = ("import atexit, gc, sys\n"
                  "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
                  f"sys.argv = {argv!r}\n" + code)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 2 and "refused" in out.stderr, (way, out.stderr)
        frozen = [ln for ln in out.stderr.splitlines() if ln.startswith("frozen ")]
        assert frozen and int(frozen[0].split()[1]) > 10_000, (way, out.stderr)
