"""Change records: one committed row change, typed, named, and pinned to its exact position.

`ChangeTracker` turns the decoder's event stream into records; it follows transaction
boundaries (GTID / BEGIN / XID / COMMIT) so every record knows its GTID and commit time.
"""
from __future__ import annotations

import base64
import re
import struct
import datetime as dt
from decimal import Decimal
from typing import Any, Callable, Iterable, Iterator, cast

from ..binlog.constants import ColumnType as T
from ..binlog.left_out import LeftOut
from ..binlog.events import (
     Event, GtidEvent, IncidentEvent, MariaGtidEvent, QueryEvent, RowsEvent, XaPrepareEvent,
     XidEvent,
 )
from ..binlog.table_map import ColumnInfo, TableMapEvent
from ..binlog.values import ABSENT, JSON_NULL, Geometry, InvalidTemporal, JsonPatch, MySQLTime
from ..errors import BinlakeError
from .._util.lazy_re import LazyPattern
from .xa import Held, PreparedRange, XaError, XaLedger, decision, xa_start, xid_text


class ChangeRecord:
    """A row change. `before`/`after` map column names to values; columns outside the row
    image (minimal images) map to `ABSENT` (never None, which means SQL NULL).

    Records are made for every row of the binlog, so the images are kept as the decoder's
    value tuples and become dicts only when read (`before`/`after`); `before_values` /
    `after_values` hand on the tuples (in TABLE_MAP column order, ABSENT for columns outside
    the image) to consumers that need no names, such as the Arrow builder.
    """

    __slots__ = ("op", "schema", "table", "_before", "_after", "primary_key", "file", "pos",
                 "end_pos", "row", "inner", "gtid", "timestamp", "table_map", "statement", "ddl")

    op: str  # insert | update | delete | truncate | ddl | statement
    schema: str
    table: str
    primary_key: tuple[str, ...] | None
    file: str | None
    pos: int
    """Start offset of the rows event (for payload-wrapped events: of the payload)."""
    end_pos: int
    row: int
    """Index of the row inside its rows event."""
    inner: int | None
    """Index of the rows event inside a TRANSACTION_PAYLOAD, if wrapped."""
    gtid: str | None
    timestamp: int
    """Event timestamp (seconds since epoch, the statement's start on the primary)."""
    table_map: TableMapEvent | None
    """The TABLE_MAP the row was decoded with (None for statement records: truncate, ddl)."""
    statement: str | None
    """For op 'truncate' and 'ddl': the statement as the primary logged it."""
    ddl: Any
    """For op 'ddl': the schema history's description of the change (new table shape)."""

    def __init__(self, op: str, schema: str, table: str,
                 before: dict[str, Any] | tuple[Any, ...] | None,
                 after: dict[str, Any] | tuple[Any, ...] | None,
                 primary_key: tuple[str, ...] | None, file: str | None, pos: int, end_pos: int,
                 row: int, inner: int | None, gtid: str | None, timestamp: int,
                 table_map: TableMapEvent | None, statement: str | None = None,
                 ddl: Any = None) -> None:
        self.op, self.schema, self.table = op, schema, table
        self._before, self._after = before, after
        self.primary_key, self.file, self.pos, self.end_pos = primary_key, file, pos, end_pos
        self.row, self.inner, self.gtid, self.timestamp = row, inner, gtid, timestamp
        self.table_map, self.statement, self.ddl = table_map, statement, ddl

    def _image(self, img: Any) -> dict[str, Any] | None:
        if img is None or type(img) is dict:
            return img
        if type(img) is bytes:  # a decoder with json_images: the CDC JSON text
            import json

            image: dict[str, Any] = json.loads(img)
            return image
        return dict(zip(self.table_map.column_names, img))  # type: ignore[union-attr]

    @property
    def raw_images(self) -> tuple[Any, Any]:
        """(before, after) as the decoder made them: value tuples, CDC JSON bytes (decoders
        with `json_images`) or dicts, None where the op has no such image."""
        return self._before, self._after

    @property
    def before(self) -> dict[str, Any] | None:
        img = self._before
        if img is not None and type(img) is not dict:
            img = self._before = self._image(img)
        return img

    @property
    def after(self) -> dict[str, Any] | None:
        img = self._after
        if img is not None and type(img) is not dict:
            img = self._after = self._image(img)
        return img

    @property
    def before_values(self) -> tuple[Any, ...] | None:
        """The before image as a value tuple in column order (ABSENT outside the image)."""
        return self._values(self._before)

    @property
    def after_values(self) -> tuple[Any, ...] | None:
        return self._values(self._after)

    def _values(self, img: Any) -> tuple[Any, ...] | None:
        if type(img) is bytes:
            img = self._image(img)
        if img is None or type(img) is not dict:
            values: tuple[Any, ...] | None = img
            return values
        names = self.table_map.column_names  # type: ignore[union-attr]
        return tuple(img.get(n, ABSENT) for n in names)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChangeRecord):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in _COMPARED)

    def __repr__(self) -> str:
        return (f"ChangeRecord(op={self.op!r}, schema={self.schema!r}, table={self.table!r}, "
                f"before={self.before!r}, after={self.after!r}, file={self.file!r}, "
                f"pos={self.pos}, row={self.row}, gtid={self.gtid!r})")

    @property
    def position(self) -> tuple[str | None, int, int, int]:
        """Sortable identity of the change within one server's binlog history."""
        return (self.file, self.pos, -1 if self.inner is None else self.inner, self.row)

    @property
    def key(self) -> dict[str, Any] | None:
        if not self.primary_key:
            return None
        image = self.after if self.op != "delete" else self.before
        assert image is not None
        return {k: image.get(k, ABSENT) for k in self.primary_key}

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": self.op, "schema": self.schema, "table": self.table,
        }
        if self.statement is not None:
            out["statement"] = self.statement
        if self.ddl is not None and hasattr(self.ddl, "to_json"):
            out["ddl"] = self.ddl.to_json()
        fmt = _formatters(self.table_map) if self.table_map is not None else {}
        if self.before is not None:
            out["before"] = _format_image(self.before, fmt)
        if self.after is not None:
            out["after"] = _format_image(self.after, fmt)
        if self.primary_key:
            out["primary_key"] = list(self.primary_key)
        out["position"] = {"file": self.file, "pos": self.pos, "end_pos": self.end_pos,
                           "row": self.row}
        if self.inner is not None:
            out["position"]["inner"] = self.inner
        out["gtid"] = self.gtid
        out["ts"] = self.timestamp
        return out


_COMPARED = ("op", "schema", "table", "before", "after", "primary_key", "file", "pos", "end_pos",
             "row", "inner", "gtid", "timestamp", "statement", "ddl")


def _format_image(image: dict[str, Any], fmt: dict[str, Callable[[Any], Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in image.items():
        if value is ABSENT:
            continue
        if value is None:
            out[name] = None
        else:
            out[name] = fmt[name](value)
    return out


# -- JSON formatting of values ------------------------------------------------------------

def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def format_decimal(d: Decimal) -> str:
    return format(d, "f")


def _fraction(micro: int, fsp: int) -> str:
    return f".{micro:06d}"[: fsp + 1] if fsp else ""


def _datetime_formatter(fsp: int, utc: bool) -> Callable[[Any], Any]:
    def f(v: Any) -> Any:
        if isinstance(v, InvalidTemporal):
            return v.text
        s = v.strftime("%Y-%m-%dT%H:%M:%S") if v.year >= 1000 else (
            f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}")
        return s + _fraction(v.microsecond, fsp) + ("Z" if utc else "")
    return f


def json_value(v: Any) -> Any:
    """Format any decoded value for JSON without column context (JSON documents, user vars)."""
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if v is JSON_NULL:  # a JSON column holding the document `null`
        return None
    if isinstance(v, Decimal):
        return format_decimal(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return _b64(bytes(v))
    if isinstance(v, dt.datetime):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, MySQLTime):
        return v.format(6 if v.microseconds else 0)
    if isinstance(v, InvalidTemporal):
        return v.text
    if isinstance(v, Geometry):
        return {"srid": v.srid, "wkb": _b64(v.wkb)}
    if isinstance(v, dict):
        return {k: json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, JsonPatch):
        return {"json_patch": [{"op": d.op, "path": d.path, "value": json_value(d.value)}
                               for d in v.diffs]}
    if hasattr(v, "type_code") and hasattr(v, "data"):  # JSON opaque value
        return {"opaque_type": v.type_code, "data": _b64(v.data)}
    return str(v)


def float32_text(v: float) -> float:
    """The shortest decimal that reads back as the same float32 (what MySQL prints)."""
    packed = struct.pack("<f", v)
    for digits in range(6, 10):
        candidate = float(f"{v:.{digits}g}")
        if struct.pack("<f", candidate) == packed:
            return candidate
    return v


def _json_document(text: str) -> Any:
    import json

    return json_value(json.loads(text))


def formatter_for(c: ColumnInfo) -> Callable[[Any], Any]:
    t = c.type
    if c.is_json:
        return _json_document  # MariaDB JSON: stored text in Python, a JSON value in output
    if t == T.FLOAT:
        return float32_text
    if t == T.NEWDECIMAL:
        return format_decimal
    if t in (T.DATETIME2, T.DATETIME):
        return _datetime_formatter(c.fsp, utc=False)
    if t in (T.TIMESTAMP2, T.TIMESTAMP):
        return _datetime_formatter(c.fsp, utc=True)
    if t in (T.TIME2, T.TIME):
        fsp = c.fsp
        return lambda v: v.format(fsp)
    if t in (T.DATE, T.NEWDATE):
        return lambda v: v.text if isinstance(v, InvalidTemporal) else v.isoformat()
    return json_value


def _formatters(tm: TableMapEvent) -> dict[str, Callable[[Any], Any]]:
    cached: dict[str, Callable[[Any], Any]] | None = tm.row_decoders.get("json-formatters")
    if cached is None:
        cached = {name: formatter_for(c) for name, c in zip(tm.column_names, tm.columns)}
        tm.row_decoders["json-formatters"] = cached
    return cached


_MODE = {"insert": 0, "delete": 1, "update": 2}
_RECORD_TEMPLATE_ORDER = ("op", "schema", "table", "_before", "_after", "primary_key", "file",
                          "pos", "end_pos", "row", "inner", "gtid", "timestamp", "table_map",
                          "statement", "ddl")


def _load_make_records() -> Callable[..., list[ChangeRecord]] | None:
    """The C record builder, told ChangeRecord's slots (None without the extension)."""
    from .._speedups.native import switches

    _speedups = switches.c
    if _speedups is None or not hasattr(_speedups, "make_records"):
        return None
    if ChangeRecord.__slots__ != _RECORD_TEMPLATE_ORDER:  # records() writes its template so
        raise RuntimeError("ChangeRecord.__slots__ changed: update the template of records()")
    _speedups.record_class(ChangeRecord, ChangeRecord.__slots__)
    make: Callable[..., list[ChangeRecord]] = _speedups.make_records
    return make


_make_records = _load_make_records()

# -- events -> records --------------------------------------------------------------------

INCIDENT_NAMES = {0: "NONE", 1: "LOST_EVENTS"}
"""MySQL's incident numbers (an INCIDENT event's post-header)."""


class IncidentError(BinlakeError):
    """The binlog holds an INCIDENT event: the primary lost changes it could not log (a MySQL
    replica stops there with error 1590). Reading on would hand out a gap as if whole."""

    def __init__(self, ev: IncidentEvent) -> None:
        self.file = ev.file
        self.offset = ev.offset
        self.incident = ev.incident
        name = INCIDENT_NAMES.get(ev.incident, f"number {ev.incident}")
        super().__init__(
            f"{ev.file} offset {ev.offset} INCIDENT: incident {name} on the primary"
            + (f" ({ev.message})" if ev.message else "")
            + ": changes may be missing from the binlog here (a MySQL replica stops with error "
              "1590)",
            hint="re-snapshot the tables; to read on past it anyway: binlake decode or "
                 "stream --skip-incidents")


def incident_line(ev: IncidentEvent) -> str:
    """The warning for an INCIDENT event read past on request (--skip-incidents)."""
    name = INCIDENT_NAMES.get(ev.incident, f"number {ev.incident}")
    return (f"binlake: warning: {ev.file} offset {ev.offset}: INCIDENT {name} passed over "
            "(--skip-incidents): changes may be missing here")


class ChangeTracker:
    """Follow transaction context across events and turn rows events into ChangeRecords.

    Rows of a prepared XA transaction are held until its XA COMMIT (see binlake.cdc.xa): `xa`
    carries the pending ones across readers, `reread` fetches the records of a PREPARE this
    tracker did not see, and the units they span (None: such a commit is an error naming the
    range).
    """

    def __init__(self, tables: Callable[[str, str], bool] | None = None, *,
                 xa: XaLedger | None = None,
                 reread: Callable[[PreparedRange, tuple[str | None, int]], Held] | None = None,
                 locate: Callable[[str, tuple[str | None, int]], PreparedRange | None] | None = None,
                 walk: bool = False,
                 on_incident: Callable[[IncidentEvent], None] | None = None) -> None:
        self.table_filter = tables
        self.on_incident = on_incident
        """Called for an INCIDENT event read as changes (None: IncidentError there)."""
        self.gtid: str | None = None
        self.xa = xa if xa is not None else XaLedger()
        self.reread = reread
        self.locate = locate
        """Finds the PREPARE of an XID committed with no range known, before (file, pos)."""
        self.walk = walk
        """Only following the binlog (looking for XA PREPAREs): an XA COMMIT of changes not
        read is no error, and hands out nothing."""
        self._group: tuple[str | None, int] | None = None
        """(file, offset) of the last GTID event: where its event group starts."""
        self._released: Held | PreparedRange | None = None
        """What the XA_PREPARE event just observed hands out (MySQL one phase): its records,
        or its range when they were not all seen here."""
        self._decided: tuple[str, bool, PreparedRange | None, Held | None] | None = None
        self.released_units = 0
        """How many units (rows and statement records, before the table filter) the XA
        records last handed out span; each record's `row` is its unit index (binlake.cdc.xa)."""

    def observe(self, ev: Event, *, keep: bool = True) -> None:
        """Follow an event without asking for its records (keep=False: the caller will not
        hand this tracker every rows event of an XA PREPARE opened here either)."""
        self._released = None  # (one left by an event nobody asked records of)
        t = type(ev)
        if t is TableMapEvent:  # (one per table per transaction: nothing to follow)
            return
        if t is XidEvent:  # (the common close, first)
            self._group = None
            return
        if isinstance(ev, (MariaGtidEvent, GtidEvent)):
            self.observe_gtid(ev, ev.gtid, keep=keep)
        elif isinstance(ev, QueryEvent):
            if ev.query[:3].upper() != "XA ":
                return
            self._decided = None  # (one left by an event nobody asked records of)
            xid = xa_start(ev.query)
            if xid is not None and not self.xa.holding:  # MySQL: XA START opens the group
                file, start = self._group if self._group is not None else (ev.file, ev.offset)
                self.xa.begin(xid, file, start, keep=keep)
            decided = decision(ev.query) if xid is None and not ev.error_code else None
            if decided is not None:  # XA COMMIT / ROLLBACK: pending no more
                self._decided = (decided[1], decided[0], *self.xa.decide(decided[1]))
        elif isinstance(ev, XaPrepareEvent):
            self._group = None
            xid = xid_text(ev.format_id, ev.gtrid, ev.bqual)
            released, rng = self.xa.prepared(xid, ev.end, ev.one_phase, ev.file)
            if ev.one_phase:
                self._released = released if released is not None else rng
        elif t is IncidentEvent:
            # Not when only walking, nor before a start position (keep=False): those
            # changes are not being read.
            if keep and not self.walk:
                incident = cast(IncidentEvent, ev)
                if self.on_incident is None:
                    raise IncidentError(incident)
                self.on_incident(incident)

    def observe_gtid(self, ev: GtidEvent | MariaGtidEvent, gtid: str | None, *,
                     keep: bool = True) -> None:
        """observe() of a GTID event, given its `gtid` text: a replica formats it once for
        this and the transaction boundaries, once per transaction."""
        self._released = None
        self.gtid = gtid
        self._group = (ev.file, ev.offset)
        if (isinstance(ev, MariaGtidEvent) and ev.flags & MariaGtidEvent.FL_PREPARED_XA
                and ev.xid is not None):
            self.xa.begin(ev.xid, ev.file, ev.offset, keep=keep)

    def records(self, ev: Event) -> list[ChangeRecord]:
        if isinstance(ev, RowsEvent):  # the hot path: nothing for observe() in a rows event
            if self.xa.holding:  # (a filtered event counts its rows when the decoder does)
                self.xa.hold(self._rows_records(ev), ev.filtered_rows if ev.filtered else len(ev.rows))
                return []
            return self._rows_records(ev)
        self.observe(ev)
        self.released_units = 0
        if isinstance(ev, QueryEvent):
            if ev.query[:3].upper() == "XA ":
                return self._xa_statement(ev)
            recs = self.statement_records(ev)
            if self.xa.holding:
                units, indexed = self.statement_units(ev, recs)
                for i, rec in indexed:
                    rec.row = i
                self.xa.hold(recs, units)
                return []
            return recs
        if self._released is not None:  # MySQL's XA COMMIT ... ONE PHASE
            out, self._released = self._released, None
            if isinstance(out, PreparedRange):  # its rows were not all seen here
                if self.walk:
                    return []
                if self.reread is None:
                    raise XaError(f"{ev.file}:{ev.offset}: XA COMMIT ... ONE PHASE of {out}: "
                                  "this reader did not read all its rows and cannot re-read them",
                                  hint="start at a transaction boundary")
                out = self.reread(out, (ev.file, ev.offset))
            recs, self.released_units = out
            return recs
        return []

    def statement_units(self, ev: QueryEvent, recs: list[ChangeRecord]
                        ) -> tuple[int, list[tuple[int, ChangeRecord]]]:
        """How many records the statement makes before the table filter, and the index of
        each kept one (`recs`) among them: a count a resume skips must not depend on the
        filter."""
        if self.table_filter is None:
            return len(recs), list(enumerate(recs))
        every = ChangeTracker().statement_records(ev)
        keep = self.table_filter
        idx = [i for i, r in enumerate(every) if keep(r.schema, r.table)]
        if len(idx) != len(recs):
            raise BinlakeError(f"{ev.file}:{ev.offset}: the statement's records do not match with "
                               f"and without the table filter ({len(recs)} of {len(every)})")
        return len(every), list(zip(idx, recs))

    def _rows_records(self, ev: RowsEvent) -> list[ChangeRecord]:
        if ev.filtered:
            return []  # (the decoder left its rows out)
        tm = ev.table
        # What a table's records share, kept with its TABLE_MAP's decoders (one lookup per
        # event, not a filter call and a key lookup), per filter: another tracker may have
        # another.
        known: tuple[bool, str, str, tuple[str, ...] | None] | None = tm.row_decoders.get(
            ("records", self.table_filter))
        if known is None:
            known = self._table_constants(tm)
        keep, schema, table, pk = known
        if not keep:
            return []
        kind, file, offset, end, inner, gtid, ts = (ev.kind, ev.file, ev.offset, ev.end,
                                                    ev.inner_index, self.gtid, ev.header.timestamp)
        if _make_records is not None:
            # C: records allocated and their slots filled directly (no __init__ per row).
            return _make_records((kind, schema, table, None, None, pk, file, offset, end, 0,
                                  inner, gtid, ts, tm, None, None), ev.rows, _MODE[kind])
        if kind == "update":
            return [ChangeRecord(kind, schema, table, row[0], row[1], pk, file, offset, end, i,
                                 inner, gtid, ts, tm) for i, row in enumerate(ev.rows)]
        if kind == "insert":
            return [ChangeRecord(kind, schema, table, None, row, pk, file, offset, end, i,
                                 inner, gtid, ts, tm) for i, row in enumerate(ev.rows)]
        return [ChangeRecord(kind, schema, table, row, None, pk, file, offset, end, i,
                             inner, gtid, ts, tm) for i, row in enumerate(ev.rows)]

    def _table_constants(self, tm: TableMapEvent) -> tuple[bool, str, str, tuple[str, ...] | None]:
        """(kept by the filter?, schema, table, key column names) of a TABLE_MAP's records."""
        keep = self.table_filter is None or bool(self.table_filter(tm.schema, tm.table))
        names = tm.column_names
        pk = tuple(names[i] for i in tm.primary_key) if tm.primary_key else None
        known = tm.row_decoders[("records", self.table_filter)] = (keep, tm.schema, tm.table, pk)
        return known

    def _xa_statement(self, ev: QueryEvent) -> list[ChangeRecord]:
        """XA COMMIT hands out the prepared records, stamped with its own place: that is
        where they are committed (a consumer that orders or dedups by position sees them
        after every transaction committed before). XA ROLLBACK drops them."""
        decided, self._decided = self._decided, None
        if decided is None:
            return []
        xid, commit, rng, held = decided
        if not commit:
            return []
        if held is None:
            if self.walk:
                return []
            if rng is None and self.locate is not None:
                rng = self.locate(xid, self._group or (ev.file, ev.offset))
            if rng is None:
                raise XaError(
                    f"{ev.file}:{ev.offset}: XA COMMIT {xid} commits changes prepared before "
                    "this reader's start; their rows were not read",
                    hint="read from a position before its XA PREPARE (e.g. the start of the "
                         "binlog file it was prepared in), or re-snapshot the tables once the "
                         "XA transaction is decided; nothing after it was handed out")
            if self.reread is None:
                raise XaError(f"{ev.file}:{ev.offset}: XA COMMIT {xid} commits changes "
                              f"{rng}, which this reader did not read and cannot re-read",
                              hint="include that binlog file in the input")
            held = self.reread(rng, (ev.file, ev.offset))  # (the COMMIT's place)
        recs, self.released_units = held
        gtid, file, pos, end, inner = self.gtid, ev.file, ev.offset, ev.end, ev.inner_index
        for rec in recs:  # (`row` stays its unit index in the group)
            rec.file, rec.pos, rec.end_pos, rec.inner, rec.gtid = file, pos, end, inner, gtid
        return recs

    def statement_records(self, ev: QueryEvent) -> list[ChangeRecord]:
        """TRUNCATE (always) and DDL (when the schema history described it) as records (the
        statement's own, whatever transaction it is in)."""
        if ev.error_code:
            return []  # a statement that failed on the primary changed nothing
        m = _TRUNCATE.match(ev.query)
        dml = _DML.match(ev.query) if m is None else None
        if m is not None:
            targets, op = [_split_name(m.group(1), ev.schema)], "truncate"
        elif dml is not None:
            # Statement-logged DML (statement/mixed binlogs, MariaDB's transaction-precise
            # system-versioned tables): the rows are not in the binlog. Handed on as a
            # 'statement' record so consumers see it; the Delta apply refuses it loudly.
            name = dml.group(2)
            targets = [_split_name(name, ev.schema) if name else (ev.schema, "")]
            op = "statement"
        elif ev.ddl is not None:
            targets, op = list(ev.ddl.tables), "ddl"
        else:
            return []
        return [ChangeRecord(op, schema, table, None, None, None, ev.file, ev.offset, ev.end, 0,
                             ev.inner_index, self.gtid, ev.timestamp, None, ev.query, ev.ddl)
                for schema, table in targets
                if self.table_filter is None or self.table_filter(schema, table)]


_TRUNCATE = LazyPattern(r"^\s*(?:/\*.*?\*/\s*)*TRUNCATE\s+(?:TABLE\s+)?((?:`[^`]+`|[\w$]+)(?:\s*\.\s*(?:`[^`]+`|[\w$]+))?)",
                        re.IGNORECASE | re.DOTALL)


_DML = LazyPattern(r"^\s*(?:/\*.*?\*/\s*)*(INSERT|REPLACE|UPDATE|DELETE|LOAD\s+DATA)\b"
                   r"(?:\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE|QUICK|CONCURRENT|LOCAL|INTO|FROM))*"
                   r"(?:\s+INFILE\s+'[^']*'(?:\s+(?:REPLACE|IGNORE))?\s+INTO\s+TABLE)?"
                   r"\s+((?:`[^`]+`|[\w$]+)(?:\s*\.\s*(?:`[^`]+`|[\w$]+))?)?",
                   re.IGNORECASE | re.DOTALL)


def _split_name(name: str, default_schema: str) -> tuple[str, str]:
    parts = [p.strip().strip("`") for p in re.split(r"\.(?=(?:[^`]*`[^`]*`)*[^`]*$)", name)]
    if len(parts) == 2:
        return parts[0], parts[1]
    return default_schema, parts[0]


class XaLeftOut(LeftOut):
    """The left-out tables' rows a reader of files needs as its tracker stands (a decoder's
    `left_out`, which it reads between events): counted only inside an open XA
    transaction, whose records are numbered whatever the filter, and elsewhere passed over
    in C, not handed out: nothing needs them there (pass_over=False: a reader that must see
    every event). For a reader of files whose decoder has a table filter."""

    def __init__(self, tracker: ChangeTracker, *, pass_over: bool = True) -> None:
        self._xa = tracker.xa
        self._pass_over = pass_over

    @property
    def count(self) -> bool:  # type: ignore[override]  # (read from the tracker)
        return self._xa.holding

    @property
    def skip(self) -> bool:  # type: ignore[override]
        return self._pass_over and not self._xa.holding


def iter_changes(events: Iterable[Event], tables: Callable[[str, str], bool] | None = None
                 ) -> Iterator[ChangeRecord]:
    tracker = ChangeTracker(tables)
    for ev in events:
        yield from tracker.records(ev)


def prepared_records(events: Iterable[Event], rng: PreparedRange,
                     tables: Callable[[str, str], bool] | None = None) -> Held:
    """The records of one XA PREPARE group, from the events of its range (a re-read), and
    the units they span (the events' decoder should count filtered rows: LeftOut(count=True))."""
    tracker = ChangeTracker(tables)
    released: list[ChangeRecord] = []
    for ev in events:
        released += tracker.records(ev)  # (a one-phase group's come out at its XA_PREPARE)
    return tracker.xa.reread_records(rng, released)


def no_table(schema: str, table: str) -> bool:
    """A table filter that keeps no table (walks that need event groups, not rows)."""
    return False


def table_filter(spec: str | None, option: str = "--tables") -> Callable[[str, str], bool] | None:
    """`db.table,db2.*` -> predicate; None when no filter was given. A pattern that can
    match no table is a ConfigError naming it (and `option`, the argument it came from)."""
    if spec is None:
        return None
    import fnmatch

    from .table_patterns import parse_patterns

    patterns = parse_patterns(spec, option)
    seen: dict[tuple[str, str], bool] = {}  # asked for every rows event: answered once per table

    def match(schema: str, table: str) -> bool:
        key = (schema, table)
        hit = seen.get(key)
        if hit is None:
            if len(seen) > 65536:
                seen.clear()
            name = f"{schema}.{table}"
            hit = seen[key] = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        return hit

    return match


def is_transaction_end(ev: Event) -> bool:
    """XID, COMMIT/ROLLBACK queries and DDL end a transaction in the binlog."""
    if isinstance(ev, XidEvent):
        return True
    if isinstance(ev, QueryEvent):
        q = ev.query.lstrip().upper()
        return not q.startswith("BEGIN") and not q.startswith("XA START") and not q.startswith("SAVEPOINT")
    return False
