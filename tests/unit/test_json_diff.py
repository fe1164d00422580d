"""PARTIAL_UPDATE_ROWS JSON diffs: wire format, paths, MySQL's apply semantics, a real event."""
from __future__ import annotations

import copy
import importlib.util
import json
import struct
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.binlog.columns.json_binary import decode_json_binary
from binlake.binlog.columns.json_diff import (
    JsonDiff,
    apply_json_diffs,
    parse_json_diffs,
    parse_json_path,
)
from binlake.errors import DecodeError


def _load_binary_tests() -> ModuleType:
    """The binlog reader and test encoder live in test_json_binary.py; load it by path."""
    path = Path(__file__).with_name("test_json_binary.py")
    spec = importlib.util.spec_from_file_location("_json_binary_test_helpers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


H = _load_binary_tests()


def packed(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def encode_diffs(diffs: list[tuple[int, str, object]]) -> bytes:
    """Json_diff_vector::write_binary, from the format: u32 length, then op/path/value."""
    body = bytearray()
    for op, path, value in diffs:
        raw_path = path.encode()
        body += bytes([op]) + packed(len(raw_path)) + raw_path
        if op != 2:
            raw = H.encode_doc(value)
            body += packed(len(raw)) + raw
    return struct.pack("<I", len(body)) + bytes(body)


# =========================================================================================
# Paths
# =========================================================================================


@pytest.mark.parametrize(
    "path, legs",
    [
        ("$", []),
        ("  $  ", []),
        ("$.a", ["a"]),
        ("$.age", ["age"]),
        ("$.a.b_c.$d", ["a", "b_c", "$d"]),
        ('$."a b"', ["a b"]),
        ('$."with \\"quote\\" and \\\\ back"', ['with "quote" and \\ back']),
        ('$."\\u00e9t\\u00e9"', ["été"]),
        ('$."a.b[0]"', ["a.b[0]"]),
        ("$.ключ", ["ключ"]),
        ('$.""', [""]),
        ("$[0]", [0]),
        ("$[ 12 ]", [12]),
        ("$[last]", [-1]),
        ("$[last-0]", [-1]),
        ("$[last-3]", [-4]),
        ("$[ last - 2 ]", [-3]),
        ("$.a[1].b[last].c", ["a", 1, "b", -1, "c"]),
        ("$ . a [ 0 ]", ["a", 0]),
        ('$."0"[0]', ["0", 0]),
    ],
)
def test_parse_json_path(path: str, legs: list[str | int]) -> None:
    assert parse_json_path(path) == legs
    assert [type(x) for x in parse_json_path(path)] == [type(x) for x in legs]


@pytest.mark.parametrize(
    "path",
    ["", "a", ".a", "$.", "$.*", "$[*]", "$**.a", "$[1 to 2]", "$[", "$[1", "$[-1]",
     "$[last-]", "$[lastx]", '$."unterminated', '$.a"b', "$.a b", "$a", "$[1]x", "$.[0]"],
)
def test_parse_json_path_rejects(path: str) -> None:
    with pytest.raises(DecodeError, match="invalid JSON path"):
        parse_json_path(path)


@settings(max_examples=1000, deadline=200)
@given(st.text(alphabet='$.[]"\\ *-last0123456789abc\u00e9', max_size=30))
def test_parse_json_path_only_decode_error(path: str) -> None:
    try:
        legs = parse_json_path(path)
    except DecodeError:
        return
    assert all(isinstance(leg, (str, int)) for leg in legs)


# =========================================================================================
# Wire format
# =========================================================================================


def test_parse_json_diffs_all_operations() -> None:
    raw = encode_diffs([
        (0, "$.a", 5),
        (1, "$.b[last]", {"k": [True, None]}),
        (2, '$."x y"', None),
        (1, "$.n", None),  # inserting JSON null is not "no value"
    ])
    data = b"junk" + raw + b"tail"
    diffs, end = parse_json_diffs(data, 4)
    assert end == 4 + len(raw)
    assert data[end:] == b"tail"
    assert diffs == [
        JsonDiff("replace", "$.a", 5),
        JsonDiff("insert", "$.b[last]", {"k": [True, None]}),
        JsonDiff("remove", '$."x y"', None),
        JsonDiff("insert", "$.n", None),
    ]
    # memoryview input works the same.
    assert parse_json_diffs(memoryview(data), 4) == (diffs, end)


def test_parse_json_diffs_empty_vector() -> None:
    assert parse_json_diffs(b"\x00\x00\x00\x00") == ([], 4)


def test_parse_json_diffs_long_path_and_value() -> None:
    key = "k" * 300  # path length needs the 0xfc two-byte packed form
    big = "v" * 70_000  # value length needs 0xfd
    raw = encode_diffs([(0, f"$.{key}", big)])
    assert b"\xfc" in raw[:8] and b"\xfd" in raw
    diffs, end = parse_json_diffs(raw)
    assert end == len(raw)
    assert diffs == [JsonDiff("replace", f"$.{key}", big)]


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x05\x00\x00",                                      # length truncated
        b"\x05\x00\x00\x00\x00\x03$.a",                       # vector longer than data
        b"\x05\x00\x00\x00\x03\x03$.a",                       # op 3
        b"\x05\x00\x00\x00\x02\x09$.a",                       # path overruns vector
        b"\x04\x00\x00\x00\x02\x02$x",                        # invalid path
        b"\x04\x00\x00\x00\x02\x02\xff\xfe",                  # path not UTF-8
        b"\x03\x00\x00\x00\x02\xfb\x00",                      # 0xfb is not a length
        b"\x03\x00\x00\x00\x02\xfc\x01",                      # truncated packed length
        b"\x05\x00\x00\x00\x00\x03$.a",                       # value length missing
        b"\x07\x00\x00\x00\x00\x03$.a\x05\x04",               # value overruns vector
        b"\x06\x00\x00\x00\x00\x03$.a\x00",                   # empty value
        b"\x08\x00\x00\x00\x00\x03$.a\x02\x04\x09",           # corrupt value (literal 9)
        b"\x09\x00\x00\x00\x00\x03$.a\x03\x0c\x05a",          # corrupt value (short string)
    ],
)
def test_parse_json_diffs_rejects(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        parse_json_diffs(raw)


def test_parse_json_diffs_bad_start_position() -> None:
    with pytest.raises(DecodeError):
        parse_json_diffs(b"\x00\x00\x00\x00", 2)


@settings(max_examples=1500, deadline=200)
@given(st.binary(max_size=120))
def test_random_diff_vectors_only_decode_error(body: bytes) -> None:
    raw = struct.pack("<I", len(body)) + body
    try:
        diffs, end = parse_json_diffs(raw)
    except DecodeError:
        return
    assert end == len(raw)
    assert all(d.op in ("replace", "insert", "remove") for d in diffs)


# =========================================================================================
# Applying (MySQL's apply_json_diff semantics)
# =========================================================================================

BEFORE = {
    "a": 1,
    "arr": [10, 20, 30],
    "obj": {"x": {"deep": [1, {"z": 0}]}, "key with space": "s", 'q"uote': 1},
    "k": None,
}


def apply(doc: object, *diffs: JsonDiff) -> object:
    """apply_json_diffs, also checking that the input was not modified."""
    snapshot = copy.deepcopy(doc)
    out = apply_json_diffs(doc, list(diffs))
    assert doc == snapshot
    return out


def test_replace_in_object_keeps_key_position() -> None:
    out = apply(BEFORE, JsonDiff("replace", "$.a", "new"))
    assert out["a"] == "new"
    assert list(out) == list(BEFORE)
    assert out["arr"] is BEFORE["arr"]  # untouched subtrees are shared, not copied


def test_replace_nested_and_in_array() -> None:
    out = apply(
        BEFORE,
        JsonDiff("replace", "$.obj.x.deep[1].z", [1, 2]),
        JsonDiff("replace", "$.arr[0]", 11),
        JsonDiff("replace", "$.arr[last]", 33),
        JsonDiff("replace", "$.arr[last-1]", 22),
    )
    assert out["obj"]["x"]["deep"] == [1, {"z": [1, 2]}]
    assert out["arr"] == [11, 22, 33]
    assert BEFORE["obj"]["x"]["deep"][1] == {"z": 0}


def test_replace_with_quoted_keys() -> None:
    out = apply(
        BEFORE,
        JsonDiff("replace", '$.obj."key with space"', "t"),
        JsonDiff("replace", '$.obj."q\\"uote"', 2),
    )
    assert out["obj"]["key with space"] == "t"
    assert out["obj"]['q"uote'] == 2


def test_replace_json_null_value_and_null_target() -> None:
    out = apply(BEFORE, JsonDiff("replace", "$.k", {"now": "set"}), JsonDiff("replace", "$.a", None))
    assert out["k"] == {"now": "set"}
    assert "a" in out and out["a"] is None


def test_insert_object_member_uses_mysql_key_order() -> None:
    doc = {"b": 1, "aa": 2, "ccc": 3}
    out = apply(doc, JsonDiff("insert", "$.zz", 4), JsonDiff("insert", "$.a", 0))
    assert out == {"a": 0, "b": 1, "aa": 2, "zz": 4, "ccc": 3}
    assert list(out) == ["a", "b", "aa", "zz", "ccc"]


def test_insert_into_arrays() -> None:
    out = apply(
        {"arr": [10, 20, 30]},
        JsonDiff("insert", "$.arr[0]", 5),        # [5, 10, 20, 30]
        JsonDiff("insert", "$.arr[2]", 15),       # [5, 10, 15, 20, 30]
        JsonDiff("insert", "$.arr[99]", 99),      # past the end appends
        JsonDiff("insert", "$.arr[last]", 77),    # before the current last element
    )
    assert out == {"arr": [5, 10, 15, 20, 30, 77, 99]}
    # [last-N] beyond the start clamps to position 0, as Json_array_index does.
    assert apply([1], JsonDiff("insert", "$[last-5]", 0)) == [0, 1]


def test_insert_then_edit_the_inserted_value() -> None:
    value = {"inner": [1]}
    diff = JsonDiff("insert", "$.new", value)
    out = apply({}, diff, JsonDiff("insert", "$.new.inner[1]", 2))
    assert out == {"new": {"inner": [1, 2]}}
    assert value == {"inner": [1]}  # the diff's own value was not mutated


def test_remove_member_and_cells() -> None:
    out = apply(
        BEFORE,
        JsonDiff("remove", "$.k"),
        JsonDiff("remove", "$.arr[last]"),
        JsonDiff("remove", "$.arr[0]"),
        JsonDiff("remove", '$.obj."key with space"'),
    )
    assert "k" not in out
    assert out["arr"] == [20]
    assert "key with space" not in out["obj"]
    assert BEFORE["arr"] == [10, 20, 30]


def test_top_level_array_document() -> None:
    out = apply([[1, 2], 3], JsonDiff("replace", "$[0][1]", "x"), JsonDiff("remove", "$[1]"))
    assert out == [[1, "x"]]


def test_empty_diff_list_returns_doc() -> None:
    assert apply_json_diffs(BEFORE, []) is BEFORE


@pytest.mark.parametrize(
    "diff",
    [
        JsonDiff("replace", "$.missing", 1),
        JsonDiff("replace", "$.obj.x.nope.deeper", 1),
        JsonDiff("replace", "$.arr[3]", 1),
        JsonDiff("replace", "$.arr[last-3]", 1),
        JsonDiff("replace", "$.a.b", 1),          # through a scalar
        JsonDiff("replace", "$.arr.x", 1),        # member leg on an array
        JsonDiff("replace", "$.obj[0]", 1),       # no auto-wrapping of objects
        JsonDiff("replace", "$.a[0]", 1),         # no auto-wrapping of scalars
        JsonDiff("insert", "$.a", 1),             # key already there
        JsonDiff("insert", "$.nope.x", 1),        # parent missing
        JsonDiff("insert", "$.obj[0]", 1),
        JsonDiff("remove", "$.missing"),
        JsonDiff("remove", "$.arr[3]"),
        JsonDiff("remove", "$.arr[last-3]"),
        JsonDiff("remove", "$.obj.x.deep[5]"),
        JsonDiff("replace", "$", 1),              # MySQL never logs root diffs
    ],
)
def test_unappliable_diff_is_decode_error_naming_path(diff: JsonDiff) -> None:
    snapshot = copy.deepcopy(BEFORE)
    with pytest.raises(DecodeError) as info:
        apply_json_diffs(BEFORE, [JsonDiff("replace", "$.a", 2), diff])
    assert diff.path in str(info.value)
    assert BEFORE == snapshot


def test_diffs_on_null_document_fail() -> None:
    with pytest.raises(DecodeError, match=r"\$\.a"):
        apply_json_diffs(None, [JsonDiff("replace", "$.a", 1)])
    with pytest.raises(DecodeError):
        apply_json_diffs(5, [JsonDiff("insert", "$[0]", 1)])


json_docs = st.recursive(
    st.none() | st.booleans() | st.integers(-100, 100) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


def _paths(doc: object, prefix: str = "$") -> list[tuple[str, list[str | int]]]:
    """Every addressable location in doc, as a MySQL path text and its legs."""
    out: list[tuple[str, list[str | int]]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            text = prefix + "." + json.dumps(k, ensure_ascii=False)  # MySQL's double_quote()
            out.append((text, [k]))
            out.extend((t, [k, *legs]) for t, legs in _paths(v, text))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            text = f"{prefix}[{i}]"
            out.append((text, [i]))
            out.extend((t, [i, *legs]) for t, legs in _paths(v, text))
    return out


def _get(doc: object, legs: list[str | int]) -> object:
    for leg in legs:
        doc = doc[leg]  # type: ignore[index]
    return doc


@settings(max_examples=300, deadline=500)
@given(json_docs, st.data())
def test_replace_and_remove_anywhere(doc: object, data: st.DataObject) -> None:
    paths = _paths(doc)
    if not paths:
        return
    text, legs = data.draw(st.sampled_from(paths))
    assert parse_json_path(text) == legs
    out = apply(doc, JsonDiff("replace", text, "REPLACED"))
    assert _get(out, legs) == "REPLACED"
    removed = apply(doc, JsonDiff("remove", text))
    parent = _get(removed, legs[:-1])
    original_parent = _get(doc, legs[:-1])
    assert len(parent) == len(original_parent) - 1  # type: ignore[arg-type]


# =========================================================================================
# The real PARTIAL_UPDATE_ROWS event (MySQL 8.0.22, binlog_row_image=MINIMAL)
# =========================================================================================


def test_partial_update_event_in_json_binlog(corpus_dir: Path) -> None:
    """`UPDATE t SET json_col = JSON_REPLACE(json_col, '$.age', age + 1)`-style edit.

    Table t(id INT, json_col JSON, name AS (json_col->>'$.name'), age AS (json_col->>'$.age'));
    the event's MINIMAL before image holds only id, so the document to patch is the latest
    full after image of the same id (the UPDATE_ROWS event before it). The after image's
    generated columns are MySQL's own evaluation of the patched document.
    """
    events = H.read_rows_events(corpus_dir / "rust_mysql_common" / "json.binlog.000001")
    latest: dict[int, object] = {}
    for ev in events[:-1]:
        for _before, after in ev.rows:
            row_id = struct.unpack("<i", after.values[0])[0]
            latest[row_id] = decode_json_binary(after.values[1])
    partial = events[-1]
    assert partial.type == 39
    assert len(partial.rows) == 6
    for before, after in partial.rows:
        assert set(before.values) == {0}          # MINIMAL: primary key only
        assert set(after.values) == {1, 2, 3}     # json_col, name, age
        assert after.partial == {1}               # json_col travels as a diff vector
        raw = after.values[1]
        # The column's 4-byte length prefix is the diff vector's own length field.
        diffs, end = parse_json_diffs(struct.pack("<I", len(raw)) + raw)
        assert end == 4 + len(raw)
        assert [(d.op, d.path) for d in diffs] == [("replace", "$.age")]
        row_id = struct.unpack("<i", before.values[0])[0]
        old = latest[row_id]
        new = apply(old, *diffs)
        age = struct.unpack("<i", after.values[3])[0]
        assert new["age"] == age == old["age"] + 1
        assert new["name"] == after.values[2].decode()
        assert {k: v for k, v in new.items() if k != "age"} == {
            k: v for k, v in old.items() if k != "age"
        }
