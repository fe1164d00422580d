"""GTID set arithmetic: MySQL sets (with 8.4 tags) and MariaDB per-domain positions."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.errors import ConfigError, ProtocolError
from binlake.gtid.sets import (
         GNO_MAX,
         GtidOrderError,
         MariaGtid,
         MariaGtidState,
         MySQLGtidSet,
         parse_gtid,
     )

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "b9b88c66-0755-11f1-9899-4a9da94c4d71"

# --------------------------------------------------------------------------- text


@pytest.mark.parametrize("text, canonical", [
    ("", ""),
    ("   ", ""),
    (f"{U1}:1-5", f"{U1}:1-5"),
    (f"{U1}:1-5:7", f"{U1}:1-5:7"),
    (f"{U1.upper()}:7:1-5", f"{U1}:1-5:7"),                 # sorted, uuid lowercased
    (f"{U1}:1-5:6-9:11", f"{U1}:1-9:11"),                   # adjacent intervals merge
    (f"{U1}:3-8:1-4:5", f"{U1}:1-8"),                       # overlapping intervals merge
    (f"{U1}:4:4:4-4", f"{U1}:4"),
    (f"{U2}:1,{U1}:2", f"{U1}:2,{U2}:1"),                   # uuids sorted
    (f"{U1}:1,{U1}:2-3", f"{U1}:1-3"),                      # the same uuid twice
    (f"{U1.replace('-', '')}:1", f"{U1}:1"),                # 32-hex form accepted
    (f" {U1} : 1 - 3 ,\n{U2}:5 ", f"{U1}:1-3,{U2}:5"),      # MySQL prints ",\n"
    (f"{U1}:tag_a:1-3", f"{U1}:tag_a:1-3"),
    (f"{U1}:TAG_A:1-3:5", f"{U1}:tag_a:1-3:5"),             # tags lowercased
    (f"{U1}:zz:1:aa:2:3", f"{U1}:aa:2-3:zz:1"),             # intervals after a tag are its
    (f"{U1}:zz:1,{U1}:3:aa:2", f"{U1}:3:aa:2:zz:1"),        # untagged first, then tags sorted
    (f"{U1}:_x:1,{U1}:_x:2", f"{U1}:_x:1-2"),
    (f"{U1}:1-13:mytag:1-2", f"{U1}:1-13:mytag:1-2"),
    (f"{U1}:{GNO_MAX}", f"{U1}:{GNO_MAX}"),
])
def test_parse_and_format(text: str, canonical: str) -> None:
    s = MySQLGtidSet(text)
    assert str(s) == canonical
    assert MySQLGtidSet(str(s)) == s
    assert hash(MySQLGtidSet(canonical)) == hash(s)


@pytest.mark.parametrize("text, fragment", [
    ("nonsense", "UUID"),
    (f"{U1}", "no GNO intervals"),
    (f"{U1}:", "empty field"),
    (f"{U1}:0", "GNO"),
    (f"{U1}:5-3", "ends before"),
    (f"{U1}:{GNO_MAX + 1}", "GNO"),
    (f"{U1}:1,,{U2}:1", "empty entry"),
    (f"{U1}:tag", "no GNO intervals"),
    (f"{U1}:a:b:1", "no GNO intervals"),
    (f"{U1}:1x", "neither"),
    (f"{U1}:1-", "neither"),
    (f"{U1}:-1", "tag"),
    (f"{U1}:{'a' * 33}:1", "tag"),
    (f"{U1}:bad-tag:1", "tag"),
    (f"{U1[:-1]}:1", "UUID"),
    (f"{U1}:１", "tag"),  # non-ASCII digit is neither a GNO nor a tag
])
def test_invalid_text_raises_config_error(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        MySQLGtidSet(text)
    assert fragment.lower() in str(info.value).lower()
    assert repr(text.split(",")[0][:10])[1:-1] in str(info.value) or "UUID" in str(info.value)


def test_parse_gtid() -> None:
    assert parse_gtid(f"{U1.upper()}:42") == (U1, None, 42)
    assert parse_gtid(f"{U1}:Tag1:7") == (U1, "tag1", 7)
    for bad in (f"{U1}", f"{U1}:0", f"{U1}:1-2", f"{U1}::3", "x:1", f"{U1}:a:b:1", f"{U1}:9tag:1"):
        with pytest.raises(ConfigError):
            parse_gtid(bad)


def test_contains_add_subtract_examples() -> None:
    s = MySQLGtidSet(f"{U1}:1-10:20,{U2}:t:5")
    assert s.contains(f"{U1}:3") and s.contains(f"{U1}:1-10") and f"{U1}:20" in s
    assert not s.contains(f"{U1}:11") and not s.contains(f"{U1}:t:3")
    assert s.contains((U2, "T", 5)) and not s.contains((U2, None, 5))
    assert s.contains(MySQLGtidSet()) and s.contains("")
    assert str(s.subtract(f"{U1}:4-6")) == f"{U1}:1-3:7-10:20,{U2}:t:5"     # splits an interval
    assert str(s - f"{U1}:1-20") == f"{U2}:t:5"
    assert str(s.add(U1, 11)) == f"{U1}:1-11:20,{U2}:t:5"                 # extends, merges
    assert str(s.add(U1, 12).add(U1, 11)) == f"{U1}:1-12:20,{U2}:t:5"
    assert str(s.add(U2, 6, tag="T")) == f"{U1}:1-10:20,{U2}:t:5-6"
    assert str(s.add(U2, 6)) == f"{U1}:1-10:20,{U2}:6:t:5"
    assert str(s | f"{U1}:11-19") == f"{U1}:1-20,{U2}:t:5"
    assert str(s & f"{U1}:5-25") == f"{U1}:5-10:20"
    assert s.count() == 12
    assert s.intervals(U1) == [(1, 10), (20, 20)] and s.last_gno(U1) == 20
    assert list(s) == [(U1, None, 1, 10), (U1, None, 20, 20), (U2, "t", 5, 5)]
    assert bool(s) and not MySQLGtidSet("") and not (s - s)
    assert s == MySQLGtidSet(str(s)) and s != MySQLGtidSet(f"{U1}:1-10")
    assert MySQLGtidSet(f"{U1}:2") <= s and s >= f"{U1}:2"
    with pytest.raises(ConfigError):
        s.add(U1, 0)
    with pytest.raises(ConfigError):
        s.add("not-a-uuid", 1)
    with pytest.raises(ConfigError):
        s.contains(5)  # type: ignore[arg-type]


def test_sets_are_immutable_values() -> None:
    a = MySQLGtidSet(f"{U1}:1-3")
    b = a.add(U1, 9)
    assert str(a) == f"{U1}:1-3" and str(b) == f"{U1}:1-3:9"
    assert {a: 1}[MySQLGtidSet(f"{U1}:1-2:3")] == 1


def test_from_intervals_and_previous_gtids_sources() -> None:
    s = MySQLGtidSet.from_intervals([(U1, None, 1, 3), (U1, "x", 4, 4), (U1, None, 4, 9)])
    assert str(s) == f"{U1}:1-9:x:4"
    assert MySQLGtidSet.from_previous_gtids(str(s)) == s
    assert MySQLGtidSet.from_previous_gtids(s.encode_for_dump()) == s


# --------------------------------------------------------------------------- dump encoding


def test_encode_for_dump_untagged_layout() -> None:
    s = MySQLGtidSet(f"{U2}:1-2,{U1}:5:7-9")
    enc = s.encode_for_dump()
    expected = (struct.pack("<Q", 2)
                + bytes.fromhex(U1.replace("-", "")) + struct.pack("<Q", 2)
                + struct.pack("<qq", 5, 6) + struct.pack("<qq", 7, 10)
                + bytes.fromhex(U2.replace("-", "")) + struct.pack("<Q", 1) + struct.pack("<qq", 1, 3))
    assert enc == expected
    assert len(enc) == s.encoded_length()
    assert MySQLGtidSet.decode_dump_encoding(enc) == s
    assert MySQLGtidSet().encode_for_dump() == b"\0" * 8


def test_encode_for_dump_tagged_layout_matches_mysql_96_previous_gtids() -> None:
    # PREVIOUS_GTIDS body of rust_mysql_common/binlog_transaction_with_GTID_TAG.000001 (MySQL 9.6):
    # Gtid_set::encode with Gtid_format::tagged, the same bytes a replica sends in
    # COM_BINLOG_DUMP_GTID for this set.
    body = bytes.fromhex(
        "0102000000000001"
        "55778904029911f1b1b84ef0c4956feb" "00" "0100000000000000" "0100000000000000" "0e00000000000000"
        "55778904029911f1b1b84ef0c4956feb" "0a6d79746167" "0100000000000000" "0100000000000000"
        "0300000000000000")
    s = MySQLGtidSet("55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2")
    assert s.encode_for_dump() == body
    assert len(body) == s.encoded_length()
    assert MySQLGtidSet.decode_dump_encoding(body) == s


@pytest.mark.parametrize("data", [
    b"",
    b"\x01" + b"\0" * 6,
    struct.pack("<Q", 1),                                                   # entry missing
    struct.pack("<Q", 1) + b"\x11" * 16 + struct.pack("<Q", 1) + struct.pack("<qq", 3, 3),
    struct.pack("<Q", 1) + b"\x11" * 16 + struct.pack("<Q", 2) + struct.pack("<qqqq", 1, 3, 3, 5),
    struct.pack("<Q", 1) + b"\x11" * 16 + struct.pack("<Q", 1) + struct.pack("<qq", 0, 3),
    struct.pack("<Q", 1) + b"\x11" * 16 + struct.pack("<Q", 5) + struct.pack("<qq", 1, 3),
    struct.pack("<Q", 0) + b"x",                                            # trailing bytes
    struct.pack("<Q", 2 << 56),                                             # unknown format
    (1 << 56 | 1 << 8 | 1).to_bytes(8, "little") + b"\x11" * 16 + b"\x04" + b"9a"
    + struct.pack("<Q", 1) + struct.pack("<qq", 1, 2),                      # tag starts with digit
    (1 << 56 | 1 << 8 | 1).to_bytes(8, "little") + b"\x11" * 16 + b"\x42" + b"a" * 33
    + struct.pack("<Q", 1) + struct.pack("<qq", 1, 2),                      # tag too long
])
def test_decode_dump_encoding_rejects_malformed(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        MySQLGtidSet.decode_dump_encoding(data)


# --------------------------------------------------------------------------- properties

UUIDS = [U1, U2]
TAGS = [None, "a", "zz"]
MAXG = 24

gtid_st = st.tuples(st.sampled_from(UUIDS), st.sampled_from(TAGS), st.integers(1, MAXG))
model_st = st.frozensets(gtid_st, max_size=40)


def build(model: frozenset) -> MySQLGtidSet:
    s = MySQLGtidSet()
    for u, t, g in model:
        s = s.add(u, g, t)
    return s


def to_model(s: MySQLGtidSet) -> frozenset:
    return frozenset((u, t, g) for u, t, a, b in s for g in range(a, b + 1))


def model_text(model: frozenset) -> str:
    """Canonical text computed independently from the brute-force model."""
    groups = []
    for u in sorted({u for u, _, _ in model}):
        parts = []
        for t in sorted({t or "" for uu, t, _ in model if uu == u}):
            gnos = sorted(g for uu, tt, g in model if uu == u and (tt or "") == t)
            runs, start, prev = [], gnos[0], gnos[0]
            for g in gnos[1:] + [None]:
                if g is not None and g == prev + 1:
                    prev = g
                    continue
                runs.append(str(start) if start == prev else f"{start}-{prev}")
                if g is not None:
                    start = prev = g
            parts.append(":".join(([t] if t else []) + runs))
        groups.append(f"{u}:{':'.join(parts)}")
    return ",".join(groups)


@given(model_st)
def test_prop_text_round_trip_against_model(m: frozenset) -> None:
    s = build(m)
    assert to_model(s) == m
    assert str(s) == model_text(m)
    assert MySQLGtidSet(str(s)) == s
    assert s.count() == len(m)
    assert bool(s) == bool(m)


@given(model_st, model_st)
def test_prop_union_subtract_intersection(a: frozenset, b: frozenset) -> None:
    sa, sb = build(a), build(b)
    assert to_model(sa | sb) == a | b
    assert to_model(sa - sb) == a - b
    assert to_model(sa & sb) == a & b
    assert (sa | sb) == (sb | sa)
    assert ((sa - sb) | (sa & sb)) == sa


@given(model_st, model_st, gtid_st)
def test_prop_contains(a: frozenset, b: frozenset, g: tuple) -> None:
    sa, sb = build(a), build(b)
    assert sa.contains(g) == (g in a)
    assert sa.contains(sb) == (b <= a)
    assert sa.contains(str(sb)) == (b <= a)
    assert (sa == sb) == (a == b)
    u, t, n = g
    gtid_text = f"{u}:{t}:{n}" if t else f"{u}:{n}"
    assert (gtid_text in sa) == (g in a)


@given(st.lists(st.tuples(st.sampled_from(UUIDS), st.sampled_from(TAGS),
                          st.integers(1, MAXG), st.integers(0, 5)), max_size=12))
def test_prop_interval_text_merges_like_model(rows: list) -> None:
    """Arbitrary (possibly overlapping, unordered) interval text normalizes to the model."""
    model = frozenset((u, t, g) for u, t, a, k in rows for g in range(a, a + k + 1))
    text = ",".join(f"{u}:{t + ':' if t else ''}{a}-{a + k}" for u, t, a, k in rows)
    assert to_model(MySQLGtidSet(text)) == model
    assert str(MySQLGtidSet(text)) == model_text(model)


@settings(max_examples=200)
@given(model_st, st.booleans())
def test_prop_dump_encoding_round_trip(m: frozenset, huge: bool) -> None:
    s = build(m)
    if huge:
        s = s | f"{U1}:{GNO_MAX - 3}-{GNO_MAX}"
    enc = s.encode_for_dump()
    assert len(enc) == s.encoded_length()
    assert MySQLGtidSet.decode_dump_encoding(enc) == s
    assert (enc[7] == 1) == s.is_tagged  # format marker in the top byte of n_sids


# --------------------------------------------------------------------------- MariaDB


def test_maria_gtid_parse_format_and_errors() -> None:
    assert str(MariaGtid.parse("1-2-3")) == "1-2-3"
    assert MariaGtid.parse(f"{2**32 - 1}-0-{2**64 - 1}").seq_no == 2**64 - 1
    for bad in ("", "1-2", "1-2-3-4", "a-b-c", "-1-2", f"{2**32}-1-1", "1-1-" + str(2**64), "1 2 3"):
        with pytest.raises(ConfigError):
            MariaGtid.parse(bad)
    assert MariaGtid(0, 1, 5) < MariaGtid(0, 1, 6)


def test_maria_state_parse_format() -> None:
    st_ = MariaGtidState("1-2-5, 0-1-100")
    assert str(st_) == "0-1-100,1-2-5"
    assert MariaGtidState(str(st_)) == st_ and hash(MariaGtidState(str(st_))) == hash(st_)
    assert str(MariaGtidState("")) == "" and not MariaGtidState("")
    assert st_.domains == [0, 1] and st_.get(1) == MariaGtid(1, 2, 5) and st_.get(9) is None
    assert len(st_) == 2 and [str(g) for g in st_] == ["0-1-100", "1-2-5"]
    with pytest.raises(ConfigError, match="domain 0"):
        MariaGtidState("0-1-1,0-2-2")
    with pytest.raises(ConfigError, match="empty entry"):
        MariaGtidState("0-1-1,,1-1-1")
    with pytest.raises(ConfigError):
        MariaGtidState("0-1")


def test_maria_state_update_contains_union() -> None:
    s = MariaGtidState("0-1-100")
    s2 = s.update(0, 1, 101).update(5, 3, 1)
    assert str(s) == "0-1-100"  # immutable
    assert str(s2) == "0-1-101,5-3-1"
    assert s2.contains("0-9-101") and s2.contains((0, 1, 50)) and not s2.contains("0-1-102")
    assert "5-3-1" in s2 and "6-1-1" not in s2
    # non-strict: a lower seq_no (another server writing the domain) becomes the position
    assert str(s2.update("0-2-90")) == "0-2-90,5-3-1"
    with pytest.raises(GtidOrderError):
        s2.update("0-2-90", strict=True)
    with pytest.raises(GtidOrderError):
        s2.update(0, 1, 101, strict=True)
    assert str(s2.update(0, 1, 102, strict=True)) == "0-1-102,5-3-1"
    u = MariaGtidState("0-1-10,1-1-5") | MariaGtidState("0-2-12,2-1-1") | "1-3-4"
    assert str(u) == "0-2-12,1-1-5,2-1-1"
    assert str(MariaGtidState("0-1-10") | "0-2-10") == "0-1-10"  # tie keeps the left one


maria_gtid_st = st.tuples(st.integers(0, 3), st.integers(1, 3), st.integers(0, 30))


@given(st.lists(maria_gtid_st, max_size=30), maria_gtid_st)
def test_prop_maria_state_against_model(updates: list, probe: tuple) -> None:
    state = MariaGtidState()
    model: dict[int, tuple[int, int, int]] = {}
    for d, s, q in updates:
        state = state.update(d, s, q)
        model[d] = (d, s, q)  # last applied wins
    assert str(state) == ",".join(f"{d}-{s}-{q}" for d, s, q in (model[k] for k in sorted(model)))
    assert MariaGtidState(str(state)) == state
    d, _, q = probe
    assert state.contains(probe) == (d in model and q <= model[d][2])


@given(st.lists(maria_gtid_st, max_size=10, unique_by=lambda g: g[0]),
       st.lists(maria_gtid_st, max_size=10, unique_by=lambda g: g[0]))
def test_prop_maria_union_is_per_domain_max(a: list, b: list) -> None:
    sa, sb = MariaGtidState(a), MariaGtidState(b)
    u = sa | sb
    for d in {g[0] for g in a + b}:
        seqs = [g[2] for g in a + b if g[0] == d]
        assert u.get(d).seq_no == max(seqs)
    assert all(u.contains(g) for g in a + b)


def test_missing_before_names_the_hole_a_new_gno_would_open() -> None:
    from binlake.gtid.sets import MySQLGtidSet

    u = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    s = MySQLGtidSet(f"{u}:1-1414")
    assert s.missing_before(u, 1415) is None  # follows on
    assert s.missing_before(u, 1416) == (1415, 1415)
    assert s.missing_before(u, 1500) == (1415, 1499)
    assert s.missing_before(u, 7) is None  # already held (or fills an earlier gap)
    assert s.missing_before("11111111-2222-3333-4444-555555555555", 9) is None  # a new source
    tagged = MySQLGtidSet(f"{u}:1-3:mytag:1-2")
    assert tagged.missing_before(u, 5, "mytag") == (3, 4)
    assert tagged.missing_before(u, 4) is None
