"""WRITE/UPDATE/DELETE rows events (v0, v1, v2, MariaDB compressed, MySQL PARTIAL_UPDATE).

Layout: post-header (table id, flags, v2 extra data), column count, presence bitmap(s),
then rows: each row image is a null bitmap over the present columns plus the values.
"""
from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any, Callable, Sequence

from ...errors import DecodeError
from ..values import ABSENT, JSON_NULL, JsonPatch
from ..columns.rowcodec import compile_json_row_decoder, compile_row_decoder
from ..constants import ColumnType, EventType as E
from ..events import EventBase, RowsEvent
from ..header import EventHeader
from ..makers import slot_maker
from ..table_map import TableMapEvent
from ..wire import bitmap_bits, packed_int, raw, uint_n

KIND: dict[int, str] = {
    E.WRITE_ROWS_V0: "insert", E.UPDATE_ROWS_V0: "update", E.DELETE_ROWS_V0: "delete",
    E.WRITE_ROWS_V1: "insert", E.UPDATE_ROWS_V1: "update", E.DELETE_ROWS_V1: "delete",
    E.WRITE_ROWS_V2: "insert", E.UPDATE_ROWS_V2: "update", E.DELETE_ROWS_V2: "delete",
    E.PARTIAL_UPDATE_ROWS: "update",
    E.MARIADB_WRITE_ROWS_COMPRESSED_V1: "insert", E.MARIADB_UPDATE_ROWS_COMPRESSED_V1: "update",
    E.MARIADB_DELETE_ROWS_COMPRESSED_V1: "delete", E.MARIADB_WRITE_ROWS_COMPRESSED: "insert",
    E.MARIADB_UPDATE_ROWS_COMPRESSED: "update", E.MARIADB_DELETE_ROWS_COMPRESSED: "delete",
}
VERSION: dict[int, int] = {E.WRITE_ROWS_V0: 0, E.UPDATE_ROWS_V0: 0, E.DELETE_ROWS_V0: 0,
           E.WRITE_ROWS_V1: 1, E.UPDATE_ROWS_V1: 1, E.DELETE_ROWS_V1: 1,
           E.MARIADB_WRITE_ROWS_COMPRESSED_V1: 1, E.MARIADB_UPDATE_ROWS_COMPRESSED_V1: 1,
           E.MARIADB_DELETE_ROWS_COMPRESSED_V1: 1}

# RowsEvent(header, file, offset, end, inner_index, kind, table_id, flags, table, rows,
#           extra_data, version, filtered, filtered_rows), positionally: one per rows event.
make_rows_event: Callable[[EventHeader, str | None, int, int, int | None, str, int, int,
                           TableMapEvent, Sequence[Any], bytes, int, bool, int],
                          RowsEvent] = slot_maker(RowsEvent)

PARTIAL_JSON_UPDATES = 1  # value_options bit in PARTIAL_UPDATE_ROWS


@lru_cache(maxsize=4096)
def _present(bitmap: bytes, ncols: int) -> tuple[bool, ...]:
    """Columns-present bitmap -> tuple (the same few bitmaps come in every event)."""
    return tuple(bitmap_bits(bitmap, ncols))


def parse_rows_header(body: bytes, post_header_len: int, start: int = 0) -> tuple[int, int, bytes, int]:
    """(table_id, flags, extra_data, position of the column count); the body starts at
    `start` (the decoder hands whole events, header included, to spare a copy)."""
    id_len = 4 if post_header_len == 6 else 6
    table_id, pos = uint_n(body, start, id_len, "table id")
    flags, pos = uint_n(body, pos, 2, "rows flags")
    extra = b""
    if post_header_len == 10:  # v2: extra data length includes its own 2 bytes
        extra_len, pos = uint_n(body, pos, 2, "extra data length")
        if extra_len < 2:
            raise DecodeError(f"rows event extra data length {extra_len} < 2")
        extra, pos = raw(body, pos, extra_len - 2, "extra data")
    elif post_header_len > pos - start:
        pos = start + post_header_len
    return table_id, flags, extra, pos


def decode_rows(type_code: int, body: bytes, base: EventBase, post_header_len: int,
                table: TableMapEvent, json_diff_apply: Callable[..., Any] | None = None,
                json_images: bool | str = False,
                header: tuple[int, int, bytes, int] | None = None,
                start: int = 0, end: int | None = None, count_only: bool = False) -> RowsEvent:
    """Rows of one event: value tuples (ABSENT outside the image), or with `json_images`
    (and the C extension) each image as its CDC JSON text in UTF-8 bytes. The body is
    body[start:end] (the decoder passes the whole event: no copy of a 32 MiB body).
    `count_only`: a filtered event whose rows are counted (walked in C), not kept."""
    kind = KIND[type_code]
    end = len(body) if end is None else end
    table_id, flags, extra, pos = header or parse_rows_header(body, post_header_len, start)
    ncols, pos = packed_int(body, pos)
    if ncols != len(table.columns):
        raise DecodeError(
            f"rows event for {table.qualified_name} has {ncols} columns, its TABLE_MAP has "
            f"{len(table.columns)}")
    bm_len = (ncols + 7) // 8
    present_b, pos = raw(body, pos, bm_len, "columns-present bitmap")
    present = _present(present_b, ncols)  # masked by count: MySQL sets unused high bits
    present_after = present
    if kind == "update":
        after_b, pos = raw(body, pos, bm_len, "columns-present-after bitmap")
        present_after = _present(after_b, ncols)
    if pos < end and not any(present) and not any(present_after):
        # Images of no columns take no bytes: the rows could never be delimited.
        raise DecodeError(f"rows event for {table.qualified_name} has row data but no columns "
                          "in its images")

    dec_before = table.row_decoders.get(present)
    if dec_before is None:
        dec_before = table.row_decoders[present] = compile_row_decoder(table.columns, present)
    rows: list[Any] = []
    partial = type_code == E.PARTIAL_UPDATE_ROWS
    counted = None
    try:
        if count_only:
            counted = _count(body, pos, end, table, kind, partial, dec_before, present_after)
        if counted is not None:
            pos = counted[1]
        else:
            pos = _decode_images(body, pos, end, rows, table, kind, partial, dec_before,
                                 present, present_after, json_images, json_diff_apply)
    except DecodeError as exc:
        raise DecodeError(f"{table.qualified_name} row {len(rows)}: {exc.reason}") from None
    except (IndexError, struct.error, ValueError, UnicodeDecodeError, OverflowError) as exc:
        raise DecodeError(f"{table.qualified_name} row {len(rows)}: malformed row image "
                          f"({type(exc).__name__}: {exc})") from None
    if pos != end:
        raise DecodeError(f"{table.qualified_name}: row data overruns the event by {pos - end} "
                          "bytes (truncated event or wrong column metadata)")
    if count_only:  # counted in C, or (no C counter) decoded, then dropped
        return rows_event(base, kind, table_id, flags, table, [], extra, type_code,
                          filtered_rows=counted[0] if counted is not None else len(rows))
    return rows_event(base, kind, table_id, flags, table, rows, extra, type_code)


_HEAD_V1 = struct.Struct("<IHH")  # table id (low 4 bytes, high 2), flags
_HEAD_V2 = struct.Struct("<IHHH")  # ... and the extra data's length (2: none)
# type code -> (kind, version, update): the rows events fast_rows() takes
_FAST: dict[int, tuple[str, int, bool]] = {code: (KIND[code], VERSION.get(code, 2), KIND[code] == "update")
         for code in (E.WRITE_ROWS_V1, E.UPDATE_ROWS_V1, E.DELETE_ROWS_V1,
                      E.WRITE_ROWS_V2, E.UPDATE_ROWS_V2, E.DELETE_ROWS_V2)}
FAST_TYPES = frozenset(_FAST)


def fast_rows(code: int, body: bytes | bytearray | memoryview, header: EventHeader, file: str | None, offset: int,
              end_pos: int, post_header_len: int, tables: dict[int, TableMapEvent],
              start: int, end: int,
              table_filter: Callable[[str, str], bool] | None, count_filtered: bool,
              json_images: bool | str = False) -> RowsEvent | None:
    """The common rows event (v1/v2 without extra data, a known table, C decoders) in one
    call: most events of a busy binlog are small, and the general path's layers cost as much
    as their rows. None: anything else, or anything wrong, goes the general way (which names
    the fault)."""
    kind, version, update = _FAST[code]
    if post_header_len == 8:
        if end - start < 9:
            return None
        low, high, flags = _HEAD_V1.unpack_from(body, start)
        pos = start + 8
    elif post_header_len == 10:
        if end - start < 11:
            return None
        low, high, flags, extra_len = _HEAD_V2.unpack_from(body, start)
        if extra_len != 2:
            return None
        pos = start + 10
    else:
        return None
    table_id = low | high << 32
    table = tables.get(table_id)
    ncols = body[pos]
    if table is None or ncols >= 251 or ncols != len(table.columns):
        return None
    pos += 1
    nbm = (ncols + 7) >> 3
    if update:
        nbm += nbm
    if end - pos < nbm:
        return None
    decoders = table.row_decoders
    # (the scanner's key: json_images as a bool; the body may be a memoryview)
    key = (code, bytes(body[pos:pos + nbm]), bool(json_images))
    pair = decoders.get(key)
    if pair is None:
        pair = _fast_decoders(table, update, key[1], ncols, json_images)
        if pair is None:
            return None
        decoders[key] = pair
    pos += nbm
    dec_before, dec_after, json_before, json_after = pair
    if table_filter is not None and not table_filter(table.schema, table.table):
        if not count_filtered:
            return make_rows_event(header, file, offset, end_pos, None, kind, table_id,
                                   flags, table, [], b"", version, True, 0)
        try:
            n, pos = (dec_before.count(body, pos, end, dec_after) if update
                      else dec_before.count(body, pos, end))
        except Exception:
            return None
        if pos != end:
            return None
        return make_rows_event(header, file, offset, end_pos, None, kind, table_id,
                               flags, table, [], b"", version, True, n)
    rows: Any
    try:
        if json_images and json_before is not None:  # packed: one buffer per side, as rows
            rows, pos = json_before.json_rows(body, pos, end, json_after)
        else:
            rows = []
            pos = (dec_before.many(body, pos, end, rows, dec_after) if update
                   else dec_before.many(body, pos, end, rows))
    except Exception:
        return None
    if pos != end:
        return None
    return make_rows_event(header, file, offset, end_pos, None, kind, table_id, flags,
                           table, rows, b"", version, False, 0)


def _fast_decoders(table: TableMapEvent, update: bool, bitmaps: bytes, ncols: int,
                   json_images: bool | str) -> tuple[Any, Any, Any, Any] | None:
    """(before, after, JSON before, JSON after) C decoders of an event's presence bitmaps
    (after: None unless an update; JSON: only with json_images, and None with "lines" for a
    table whose rows are decoded to values: see _json_decoders); None where the general path
    must decode (no C decoder, images of no columns)."""
    nbm = (ncols + 7) >> 3
    present = _present(bitmaps[:nbm], ncols)
    present_after = _present(bitmaps[nbm:], ncols) if update else present
    if not any(present) and not any(present_after):
        return None
    decoders = table.row_decoders
    before = decoders.get(present)
    if before is None:
        before = decoders[present] = compile_row_decoder(table.columns, present)
    after = None
    if update:
        key_a = ("after", present_after)
        after = decoders.get(key_a)
        if after is None:
            after = decoders[key_a] = compile_row_decoder(table.columns, present_after)
    if not hasattr(before, "many") or (after is not None and not hasattr(after, "many")):
        return None
    if not json_images:
        return before, after, None, None
    lines = json_images == "lines"
    jdec = _json_decoders(table, "update" if update else "insert", present, present_after,
                          lines)
    if jdec is None:
        return (before, after, None, None) if lines else None
    return before, after, jdec[0], jdec[1] if update else None


def rows_event(base: EventBase, kind: str, table_id: int, flags: int, table: TableMapEvent,
               rows: list[Any], extra: bytes, type_code: int,
               filtered_rows: int | None = None) -> RowsEvent:
    """The RowsEvent (made without __init__: one per rows event); `filtered_rows` set means
    a filtered event whose rows were not kept."""
    return make_rows_event(base["header"], base["file"], base["offset"], base["end"], None, kind,
                           table_id, flags, table, rows, extra, VERSION.get(type_code, 2),
                           filtered_rows is not None, filtered_rows or 0)


def _decode_images(body: bytes, pos: int, end: int, rows: list[Any], table: TableMapEvent,
                   kind: str, partial: bool, dec_before: Any, present: tuple[bool, ...],
                   present_after: tuple[bool, ...], json_images: bool | str,
                   json_diff_apply: Callable[..., Any] | None) -> int:
    """Append the row images of [pos, end) to `rows` (pairs for updates); returns the end."""
    decoders = table.row_decoders
    jdec = (_json_decoders(table, kind, present, present_after, json_images == "lines")
            if json_images and not partial else None)
    if jdec is not None:
        # Row bytes -> JSON images in C, no Python values (the Arrow path).
        pos = jdec[0].json_many(body, pos, end, rows, *jdec[1:])
    many = getattr(dec_before, "many", None)  # the C decoder: the whole event in one call
    if kind != "update":
        if many is not None:
            pos = many(body, pos, end, rows)
        while pos < end:
            row, pos = dec_before(body, pos)
            rows.append(row)
        return pos
    key_a = ("after", present_after)
    dec_after = decoders.get(key_a)
    if dec_after is None:
        dec_after = decoders[key_a] = compile_row_decoder(table.columns, present_after)
    if many is not None and not partial and hasattr(dec_after, "many"):
        pos = many(body, pos, end, rows, dec_after)
    while pos < end:
        before, pos = dec_before(body, pos)
        if partial:
            after, pos = _partial_after(body, pos, table, present_after, before,
                                        dec_after, json_diff_apply)
        else:
            after, pos = dec_after(body, pos)
        rows.append((before, after))
    return pos


def _count(body: bytes, pos: int, end: int, table: TableMapEvent, kind: str, partial: bool,
           dec_before: Any, present_after: tuple[bool, ...]) -> tuple[int, int] | None:
    """(rows, pos) by the C decoders' count(), or None where only decoding can tell."""
    counter = getattr(dec_before, "count", None)
    if counter is None or partial:
        return None
    if kind != "update":
        counted: tuple[int, int] = counter(body, pos, end)
        return counted
    key_a = ("after", present_after)
    dec_after = table.row_decoders.get(key_a)
    if dec_after is None:
        dec_after = table.row_decoders[key_a] = compile_row_decoder(table.columns, present_after)
    if not hasattr(dec_after, "count"):
        return None
    counted = counter(body, pos, end, dec_after)
    return counted


def _json_decoders(table: TableMapEvent, kind: str, present: Sequence[bool],
                   present_after: Sequence[bool], lines: bool = False) -> tuple[Any, ...] | None:
    """The C decoders writing an event's images as CDC JSON text, or None. `lines`: for JSON
    lines (json_images="lines"), where the text must also be the image of `binlake decode`'s
    lines: None for a table with JSON columns (the CDC JSON has their text as a string, the
    lines the document), whose rows are then decoded to values."""
    decoders = table.row_decoders
    if lines:
        plain = decoders.get("lines-text")
        if plain is None:
            plain = decoders["lines-text"] = not any(
                c.is_json or c.type == ColumnType.JSON for c in table.columns)
        if not plain:
            return None
    flavor = "jsonl" if lines else "json"
    key = (flavor, tuple(present))
    jb = decoders.get(key)
    if jb is None:
        jb = decoders[key] = compile_json_row_decoder(table.columns, table.column_names, present,
                                                      lines)
    if jb is None or kind != "update":
        return None if jb is None else (jb,)
    key_a = (flavor, tuple(present_after))
    ja = decoders.get(key_a)
    if ja is None:
        ja = decoders[key_a] = compile_json_row_decoder(table.columns, table.column_names,
                                                        present_after, lines)
    return jb, ja


def _partial_after(body: bytes, pos: int, table: TableMapEvent, present_after: Sequence[bool],
                   before: tuple[Any, ...], dec_after: Callable[..., Any],
                   json_diff_apply: Callable[..., Any] | None) -> tuple[tuple[Any, ...], int]:
    """PARTIAL_UPDATE_ROWS after image: value_options, then a bit per JSON column saying
    whether its value is a diff vector; diffs are applied to the before image."""
    from ..columns.json_diff import apply_json_diffs, parse_json_diffs
    from ..columns.json_binary import decode_json_column

    options, pos = packed_int(body, pos)
    # One bit per JSON column of the table (in or out of the after image).
    all_json = [c.index for c in table.columns if c.type == 245]
    json_cols = [i for i in all_json if present_after[i]]
    partial_cols: set[int] = set()
    if options & PARTIAL_JSON_UPDATES:
        nb = (len(all_json) + 7) // 8
        bits_b, pos = raw(body, pos, nb, "partial-JSON bitmap")
        for idx, on in zip(all_json, bitmap_bits(bits_b, len(all_json))):
            if on:
                partial_cols.add(idx)
    key = ("partial", tuple(present_after), frozenset(json_cols))
    dec = table.row_decoders.get(key)
    if dec is None:
        dec = table.row_decoders[key] = compile_row_decoder(
            table.columns, present_after, partial_json=frozenset(json_cols))
    after_raw, pos = dec(body, pos)
    after = list(after_raw)
    for idx in json_cols:
        value = after[idx]
        if value is None or value is ABSENT:
            continue
        if idx in partial_cols:
            base_doc = before[idx]
            # The row decoder consumed the 4-byte length that heads the diff vector.
            diffs, _ = parse_json_diffs(len(value).to_bytes(4, "little") + value)
            if base_doc is ABSENT or base_doc is None:
                # MINIMAL image: the document is not in the event; hand on the diffs.
                after[idx] = JsonPatch(tuple(diffs))
            else:
                doc = apply_json_diffs(None if base_doc is JSON_NULL else base_doc, diffs)
                after[idx] = JSON_NULL if doc is None else doc
        else:
            after[idx] = decode_json_column(value)
    return tuple(after), pos
