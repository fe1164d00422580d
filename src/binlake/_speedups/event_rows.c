/* RowsScanner: the common rows event framed, checked and decoded in one C call.
 *
 * Why: most events of a busy binlog are small rows events, and the Python steps around
 * their rows (frame, checksum call, header object, post-header unpack, table and decoder
 * lookups, the table filter, the event object) cost more than decoding a
 * narrow event's rows, and most of a run that filters a table out. Here those steps are one
 * C call per event, and a file's run of such events is one C iterator; so is a run of them
 * in a replica's receive buffer, where each event is a packet (scan_packets: the packet's
 * header, sequence id and status byte checked here, anything else left to the caller).
 *
 * The events around them are taken too: XID and MariaDB GTID (scan_group_event) and a
 * TABLE_MAP whose bytes the decoder has parsed before (scan_table_map), in a file's run,
 * one(), and a run of received packets given a `maps` argument. Such a run hands out the
 * events that open and close transactions, so the replica's loop sets `skip` between them
 * (it may pass left-out tables' rows over only inside a transaction); a run without `maps`
 * takes rows events only.
 *
 * Records mode (`records`, `merge`, `gtid`: set by the caller for a run): the kept rows
 * events become change records here, as changes.ChangeTracker makes them, and the run hands
 * out lists of them, several events' at a time, with the TABLE_MAPs between them taken
 * (scan_records). For the replica's loop inside a transaction and for `binlake decode`
 * (cdc/runs.py's RecordRuns, through decoder.py's RunMerge);
 * with value tuples, or with the CDC JSON images of json_images="lines" (JSON lines).
 *
 * Segments mode (`segments`, `merge`, `gtid`: set by the caller for a run, with JSON
 * images): the kept rows events go straight into the Arrow batch being built (a
 * CdcSegments and its two image columns, as CdcSegments.event adds them), with the
 * TABLE_MAPs between them taken, and the run hands out how many events it took, when the
 * batch is full or the run ends (scan_segments). For the Arrow path's file_batches
 * (cdc/arrow.py, through decoder.py's RunMerge).
 *
 * Semantics are those of decoder.py's _fast_rows and rows.fast_rows (the reference and the
 * fallback): the same checks, the same event. Anything they would hand to the general path
 * (an unknown table, a decoder shape not built yet, a bad checksum, a malformed image) stops
 * the scan at that event without an error, so the general path decodes it and names the
 * fault. The table filter's answer is kept per table (a filter is a pure function of schema
 * and table).
 *
 * A compilation unit; framing.h declares what it gives the others. */
#include "common.h"
#include <structmember.h>
#include "crc.h"
#include "rows.h"
#include "arrow.h"
#include "records.h"
#include "framing.h"

#define EV_HEADER_LEN 19

typedef struct {
    PyObject_HEAD
    PyObject *make_header;  /* EventHeader(timestamp, type_code, server_id, size, log_pos, flags) */
    PyObject *make_rows;    /* RowsEvent(...) positionally, as rows.make_rows_event */
    PyObject *make_xid;     /* XidEvent(header, file, offset, end, inner_index, xid) */
    PyObject *make_gtid;    /* MariaGtidEvent(header, file, offset, end, inner_index, domain_id,
                               server_id, seq_no, flags, commit_id, xid, flags_extra,
                               extra_engines, sa_seq_no, thread_id) */
    PyObject *make_map;     /* TableMapEvent's SlotMaker: header, file, offset, end first */
    PyObject *maps;         /* this scan's TABLE_MAP cache (body bytes -> TableMapEvent), or
                               NULL: TABLE_MAPs go the general way */
    PyObject *resolve;      /* a schema resolver's resolve(map) -> map, called on each map
                               taken from the cache (as _dispatch does), or NULL */
    PyObject *kinds;        /* ("insert", "update", "delete") */
    PyObject *tables;       /* the decoder's table id -> TableMapEvent (its own dict) */
    PyObject *phl;          /* the decoder's rows type code -> post-header length */
    PyObject *verdicts;     /* id(table) -> (table, kept?) under verdict_filter */
    PyObject *verdict_filter;
    /* one scan (file mode): what scan() was given */
    PyObject *buf, *file, *filter;
    Py_ssize_t pos;
    long long base;
    int tail, verify, count_filtered, json, skip;
    long long verified;     /* file offset below which checksums were checked (crc_ahead.c) */
    Py_ssize_t scanned, skipped, skipped_rows;
    /* a scan of received packets (scan_packets): where the received bytes end, the sequence
       id the next packet must have */
    int packets, seq;
    Py_ssize_t limit;
    int group;              /* scan_packets: XID, MariaDB GTID and cached TABLE_MAPs too */
    /* records mode (set after scan_packets or scan; see scan_records): */
    PyObject *records;      /* the key of each TABLE_MAP's record constants in its
                               row_decoders, ("records", filter); NULL or None: off */
    int merge;              /* the events still to come may be made records (the caller
                               says so as transactions open and close: not inside an XA
                               PREPARE, whose records are held) */
    PyObject *gtid;         /* the open transaction's GTID text for the records (NULL: None) */
    PyObject *batch;        /* the list being filled, during a call of next() */
    Py_ssize_t batch_events, batch_rows;  /* of the last list handed out */
    /* segments mode (set after scan; see scan_segments): */
    PyObject *segments;     /* (CdcSegments, before ImageColumn, after ImageColumn, most rows,
                               most bytes) of the Arrow batch being built; NULL or None: off */
    int seg_on;             /* during a call of next(): the mode is on, with these: */
    CdcSegments *seg;
    ImageColumn *seg_before, *seg_after;
    Py_ssize_t seg_max_rows, seg_max_bytes;
} RowsScanner;

/* Records mode: a list ends once it has this many records, or after the events of this
   many bytes (an event is never cut). Why so few: a list's records and their values are
   alive together until it is dropped. A list of a few large rows keeps them in the CPU's
   cache and in the heap's top, which the allocator otherwise gives back to the system and
   faults in again for each list; a list of thousands of small records survives the
   collector's young generations and is walked again. Lists of a few dozen records keep
   what the Python loop saved. */
#define SCAN_BATCH_RECORDS 64
#define SCAN_BATCH_BYTES (64 * 1024)

static PyObject *s_columns, *s_row_decoders, *s_schema, *s_table, *s_table_id, *g_empty_bytes;

/* 0 insert, 1 update, 2 delete for the v1/v2 rows types the scanner takes; -1 otherwise */
static inline int scan_kind(int code) {
    switch (code) {
    case 23: case 30: return 0;
    case 24: case 31: return 1;
    case 25: case 32: return 2;
    default: return -1;
    }
}

/* 1: the filter keeps the table, 0: it leaves it out, -1: error. Answers are kept per table
   object (held, so its id is not reused) while the filter is the same one, at most 4096. */
static int scan_keeps(RowsScanner *s, PyObject *filter, PyObject *table) {
    if (s->verdict_filter != filter || PyDict_GET_SIZE(s->verdicts) >= 4096) {
        PyDict_Clear(s->verdicts);
        Py_INCREF(filter);
        Py_XSETREF(s->verdict_filter, filter);
    }
    PyObject *id = PyLong_FromVoidPtr(table);
    if (id == NULL) return -1;
    PyObject *v = PyDict_GetItemWithError(s->verdicts, id);  /* borrowed: (table, verdict) */
    if (v != NULL) {
        Py_DECREF(id);
        return PyTuple_GET_ITEM(v, 1) == Py_True;
    }
    int keep = -1;
    PyObject *schema = NULL, *name = NULL, *r = NULL, *entry = NULL;
    if (PyErr_Occurred() || (schema = PyObject_GetAttr(table, s_schema)) == NULL
        || (name = PyObject_GetAttr(table, s_table)) == NULL
        || (r = PyObject_CallFunctionObjArgs(filter, schema, name, NULL)) == NULL) goto out;
    int truth = PyObject_IsTrue(r);
    if (truth < 0 || (entry = PyTuple_Pack(2, table, truth ? Py_True : Py_False)) == NULL
        || PyDict_SetItem(s->verdicts, id, entry) < 0) goto out;
    keep = truth;
out:
    Py_DECREF(id);
    Py_XDECREF(schema);
    Py_XDECREF(name);
    Py_XDECREF(r);
    Py_XDECREF(entry);
    return keep;
}

/* Where the event at e (size bytes) starts and ends: offset < 0 is a stream, where the
   header's log_pos says where the event ends. */
static inline void scan_span(const unsigned char *e, Py_ssize_t size, long long offset,
                             long long *start_at, long long *end_at) {
    uint32_t log_pos = (uint32_t)le(e + 13, 4);
    if (offset < 0) {
        *end_at = log_pos;
        *start_at = log_pos ? (long long)log_pos - size : 0;
    } else {
        *start_at = offset;
        *end_at = offset + size;
    }
}

/* The EventHeader of the event at e (size bytes), and where the event starts and ends:
   offset < 0 is a stream, where the header's log_pos says where the event ends. NULL with
   an exception set when out of memory. */
static PyObject *scan_header(RowsScanner *s, const unsigned char *e, Py_ssize_t size,
                             long long offset, long long *start_at, long long *end_at) {
    uint32_t log_pos = (uint32_t)le(e + 13, 4);
    scan_span(e, size, offset, start_at, end_at);
    PyObject *hv[6] = {PyLong_FromUnsignedLong((unsigned long)le(e, 4)), PyLong_FromLong(e[4]),
                       PyLong_FromUnsignedLong((unsigned long)le(e + 5, 4)),
                       PyLong_FromSsize_t(size), PyLong_FromUnsignedLong(log_pos),
                       PyLong_FromLong((long)le(e + 17, 2))};
    int ok = hv[0] && hv[1] && hv[2] && hv[3] && hv[4] && hv[5];
    PyObject *header = ok ? PyObject_Vectorcall(s->make_header, hv, 6, NULL) : NULL;
    for (int i = 0; i < 6; i++) Py_XDECREF(hv[i]);
    return header;
}

/* An int, or None when `present` is 0 (a part the event does not have). */
static inline PyObject *scan_opt(int present, uint64_t v) {
    if (!present) { Py_INCREF(Py_None); return Py_None; }
    return PyLong_FromUnsignedLongLong(v);
}

/* tables[tid] = map as the last one mapped (deleted first if there), as decoder.py's
   _map_table: the decoder bounds `tables` by dropping the ids mapped longest ago, so a repeat
   must count as recent. (Only the general path adds new ids and makes room: this one maps
   ids of cached bodies, no more of them than the cache holds.) 0, or -1 with an error. */
static int map_last(PyObject *tables, PyObject *tid, PyObject *map) {
    if (PyDict_DelItem(tables, tid) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
        PyErr_Clear();
    }
    return PyDict_SetItem(tables, tid, map);
}

/* A TABLE_MAP (19) seen before in this decoder: its bytes (the body) are the key of the
   decoder's cache of parsed maps, and the event is the cached map moved to this place, as
   decoder.py's _dispatch does (TableMapEvent.moved: a copy sharing the parse and compiled
   decoders), given to the schema resolver if there is one, made the decoder's map of its
   table id. A map not in the cache goes the general way, which parses and caches it. Why:
   a small transaction has one per table, and the Python way is slow for each (slower with
   a resolver). 1 and *out, 0: the general path, -1: an error (the resolver's too: a map
   that does not match the schema history fails here as it would there). */
static int scan_table_map(RowsScanner *s, const unsigned char *b, Py_ssize_t pos,
                          Py_ssize_t size, long long offset, PyObject *file, int tail,
                          int verify, PyObject **out) {
    const unsigned char *e = b + pos;
    if (s->maps == NULL || s->make_map == NULL || size < EV_HEADER_LEN + tail) return 0;
    PyObject *key = PyBytes_FromStringAndSize((const char *)e + EV_HEADER_LEN,
                                              size - EV_HEADER_LEN - tail);
    if (key == NULL) return -1;
    PyObject *cached = PyDict_GetItemWithError(s->maps, key);  /* borrowed */
    Py_DECREF(key);
    if (cached == NULL) return PyErr_Occurred() ? -1 : 0;
    if (tail && verify && (offset < 0 || offset + size > s->verified)
        && crc32_update(0, e, (size_t)(size - 4)) != (uint32_t)le(e + size - 4, 4))
        return 0;  /* the general path says so */
    Py_INCREF(cached);  /* held while objects are made (the GC may run) */
    long long start_at, end_at;
    int rc = -1;
    PyObject *tid = NULL, *header = scan_header(s, e, size, offset, &start_at, &end_at);
    PyObject *first[4] = {header, file, PyLong_FromLongLong(start_at), PyLong_FromLongLong(end_at)};
    if (header != NULL && first[2] != NULL && first[3] != NULL) {
        *out = slot_copy((SlotMaker *)s->make_map, cached, first, 4);
        if (*out != NULL && s->resolve != NULL && s->resolve != Py_None)
            Py_SETREF(*out, PyObject_CallOneArg(s->resolve, *out));
        if (*out == NULL) {
            rc = PyErr_Occurred() ? -1 : 0;
        } else if ((tid = PyObject_GetAttr(*out, s_table_id)) == NULL
                   || map_last(s->tables, tid, *out) < 0) {
            Py_CLEAR(*out);
        } else {
            rc = 1;
        }
    }
    Py_XDECREF(tid);
    Py_XDECREF(header);
    Py_XDECREF(first[2]);
    Py_XDECREF(first[3]);
    Py_DECREF(cached);
    return rc;
}

/* XID (16) and MariaDB's GTID (162) at b[pos, pos + size): the two events around every
   transaction, made as control.decode_xid and gtid.decode_maria_gtid make them (the
   reference, and the general path for whatever is left to it: a body of the wrong size,
   a bad checksum, MariaDB's XA flags). Why: with a TABLE_MAP they are most of a small
   transaction's events, and the Python way costs more for each than a one-row rows event
   here. 1 and *out, 0 for the general path (no exception set), -1: no memory. */
static int scan_group_event(RowsScanner *s, const unsigned char *b, Py_ssize_t pos,
                            Py_ssize_t size, long long offset, PyObject *file, int tail,
                            int verify, PyObject **out) {
    const unsigned char *e = b + pos, *body = e + EV_HEADER_LEN;
    int code = e[4];
    if (code == 19) return scan_table_map(s, b, pos, size, offset, file, tail, verify, out);
    if ((code == 16 ? s->make_xid : s->make_gtid) == NULL || size < EV_HEADER_LEN + tail)
        return 0;
    Py_ssize_t n = size - EV_HEADER_LEN - tail;
    if (code == 16 ? n != 8 : n < 19) return 0;
    /* MariaDB GTID: seq_no 8, domain_id 4, flags 1; commit_id 8 with FL_GROUP_COMMIT_ID;
       then, when bytes remain, flags_extra 1 and the parts it flags (see decode_maria_gtid) */
    uint64_t seq = 0, commit = 0, sa = 0, thread = 0, engines = 0, domain = 0;
    int flags = 0, fx = -1;
    if (code == 162) {
        Py_ssize_t p = 13;
        seq = le(body, 8);
        domain = le(body + 8, 4);
        flags = body[12];
        if (flags & 0xC0) return 0;  /* FL_PREPARED_XA / FL_COMPLETED_XA: an XID to read */
        if (flags & 0x02) {
            if (n - p < 8) return 0;
            commit = le(body + p, 8);
            p += 8;
        }
        if (p < n) {
            fx = body[p++];
            if (fx & 0x01) { if (n - p < 1) return 0; engines = body[p++]; }
            if (fx & 0x0C) { if (n - p < 8) return 0; sa = le(body + p, 8); p += 8; }
            if (fx & 0x10) { if (n - p < 4) return 0; thread = le(body + p, 4); p += 4; }
        }
    }
    if (tail && verify && (offset < 0 || offset + size > s->verified)
        && crc32_update(0, e, (size_t)(size - 4)) != (uint32_t)le(e + size - 4, 4))
        return 0;  /* the general path says so */
    long long start_at, end_at;
    PyObject *header = scan_header(s, e, size, offset, &start_at, &end_at);
    if (header == NULL) return -1;
    PyObject *v[15] = {header, file, PyLong_FromLongLong(start_at), PyLong_FromLongLong(end_at),
                       Py_None};
    int nv, own_from = 5;
    if (code == 16) {
        v[5] = PyLong_FromUnsignedLongLong(le(body, 8));
        nv = 6;
    } else {
        v[5] = PyLong_FromUnsignedLongLong(domain);
        v[6] = PyLong_FromUnsignedLong((unsigned long)le(e + 5, 4));  /* the header's server_id */
        v[7] = PyLong_FromUnsignedLongLong(seq);
        v[8] = PyLong_FromLong(flags);
        v[9] = scan_opt(flags & 0x02, commit);
        v[10] = scan_opt(0, 0);  /* xid: only with the XA flags, left to the general path */
        v[11] = scan_opt(fx >= 0, (uint64_t)fx);
        v[12] = scan_opt(fx >= 0 && (fx & 0x01), engines);
        v[13] = scan_opt(fx >= 0 && (fx & 0x0C), sa);
        v[14] = scan_opt(fx >= 0 && (fx & 0x10), thread);
        nv = 15;
    }
    int ok = v[2] != NULL && v[3] != NULL;
    for (int i = own_from; i < nv; i++) ok = ok && v[i] != NULL;
    *out = ok ? PyObject_Vectorcall(code == 16 ? s->make_xid : s->make_gtid, v, nv, NULL) : NULL;
    Py_DECREF(header);
    Py_XDECREF(v[2]);
    Py_XDECREF(v[3]);
    for (int i = own_from; i < nv; i++) Py_XDECREF(v[i]);
    return *out == NULL ? -1 : 1;
}

/* Records mode: the rows of a kept rows event at e (size bytes) made change records, as
   changes.ChangeTracker._rows_records makes them (the same template: its table's constants
   from the TABLE_MAP's row_decoders under s->records, the transaction's GTID from s->gtid),
   appended to s->batch; the event's rows count in s->batch_rows. Why: a large row is one
   event, and the Python steps per event (the event and header objects, the replica's loop,
   the tracker) weigh on a stream of such events. 1: done, 0: the
   constants are not made yet (the event goes out as an event; Python makes them), -1: an
   error. */
static int scan_records(RowsScanner *s, PyObject *decoders, PyObject *table, PyObject *rows,
                        int kind, const unsigned char *e, Py_ssize_t size, long long offset,
                        PyObject *file) {
    PyObject *known = PyDict_GetItemWithError(decoders, s->records);  /* borrowed */
    if (known == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 4
        || !(PyList_Check(rows) || Py_IS_TYPE(rows, &ImageRowsType))
        || g_rec_type == NULL || g_rec_nslots != 16) return 0;
    if (Py_IS_TYPE(rows, &ImageRowsType)) {  /* JSON images: bytes (pairs) per row */
        PyObject *list = PySequence_List(rows);
        if (list == NULL) return -1;
        int rc = scan_records(s, decoders, table, list, kind, e, size, offset, file);
        Py_DECREF(list);
        return rc;
    }
    PyObject *keep = PyTuple_GET_ITEM(known, 0);
    Py_ssize_t n = PyList_GET_SIZE(rows);
    if (keep != Py_True) {  /* the records' filter leaves the table out: only counted */
        if (keep != Py_False) return 0;
        s->batch_rows += n;
        s->batch_events++;
        return 1;
    }
    PyObject *gtid = s->gtid != NULL ? s->gtid : Py_None;
    Py_INCREF(known);  /* both held while records are made (the GC may run Python code) */
    Py_INCREF(gtid);
    long long start_at, end_at;
    scan_span(e, size, offset, &start_at, &end_at);
    PyObject *start_obj = PyLong_FromLongLong(start_at), *end_obj = PyLong_FromLongLong(end_at);
    PyObject *ts = PyLong_FromUnsignedLong((unsigned long)le(e, 4));
    int rc = -1;
    if (start_obj != NULL && end_obj != NULL && ts != NULL) {
        /* changes._RECORD_TEMPLATE_ORDER: op, schema, table, _before, _after, primary_key,
           file, pos, end_pos, row, inner, gtid, timestamp, table_map, statement, ddl */
        PyObject *tmpl[16] = {PyTuple_GET_ITEM(s->kinds, kind), PyTuple_GET_ITEM(known, 1),
                              PyTuple_GET_ITEM(known, 2), Py_None, Py_None,
                              PyTuple_GET_ITEM(known, 3), file, start_obj, end_obj, Py_None,
                              Py_None, gtid, ts, table, Py_None,
                              Py_None};
        /* kinds: 0 insert, 1 update, 2 delete; records_into: 0 insert, 1 delete, 2 update */
        if (records_into(s->batch, tmpl, &PyList_GET_ITEM(rows, 0), n,
                         kind == 0 ? 0 : kind == 1 ? 2 : 1) == 0) {
            s->batch_rows += n;
            s->batch_events++;
            rc = 1;
        }
    }
    Py_XDECREF(start_obj);
    Py_XDECREF(end_obj);
    Py_XDECREF(ts);
    Py_DECREF(gtid);
    Py_DECREF(known);
    return rc;
}

/* Segments mode: the rows of a kept rows event at e, its images packed as JSON by the scan
   (ImageRows), added to the Arrow batch being built (s->seg), as CdcSegments.event adds an
   event: one segment with its fields once, the images into their columns, the open
   transaction's GTID (s->gtid). Why: on the Arrow path a big row is an event of its own,
   and the event object and the Python loop around it weigh on a one-table run. 1: added
   (or no rows), 0: not taken (it would take the batch past its rows, so it goes out as an
   event that Python cuts), -1: an error. */
static int scan_segments(RowsScanner *s, PyObject *table, PyObject *rows, int kind,
                         const unsigned char *e, Py_ssize_t size, long long offset,
                         PyObject *file) {
    if (!Py_IS_TYPE(rows, &ImageRowsType)) return 0;
    ImageRows *ir = (ImageRows *)rows;
    if (s->seg->rows.n + ir->n > s->seg_max_rows) return 0;
    if (ir->n == 0) {  /* as event(): nothing to add */
        s->batch_events++;
        return 1;
    }
    PyObject *gtid = s->gtid != NULL ? s->gtid : Py_None;
    Py_INCREF(gtid);  /* held while Python code may run (the collector) */
    long long start_at, end_at;
    scan_span(e, size, offset, &start_at, &end_at);
    PyObject *schema = PyObject_GetAttr(table, s_schema);
    PyObject *name = schema != NULL ? PyObject_GetAttr(table, s_table) : NULL;
    PyObject *start_obj = PyLong_FromLongLong(start_at), *end_obj = PyLong_FromLongLong(end_at);
    PyObject *ts = PyLong_FromUnsignedLong((unsigned long)le(e, 4));
    int rc = -1;
    if (schema != NULL && name != NULL && start_obj != NULL && end_obj != NULL && ts != NULL
        && seg_rows(s->seg, s->seg_before, s->seg_after, ir, kind, 0, ir->n,
                    PyTuple_GET_ITEM(s->kinds, kind), schema, name, file, start_obj, end_obj,
                    Py_None, gtid, ts) >= 0) {
        s->batch_events++;
        s->batch_rows += ir->n;
        rc = 1;
    }
    Py_XDECREF(schema);
    Py_XDECREF(name);
    Py_XDECREF(start_obj);
    Py_XDECREF(end_obj);
    Py_XDECREF(ts);
    Py_DECREF(gtid);
    return rc;
}

/* The event at b[pos, pos + size): 1 and *out (a RowsEvent), 2 when `skip` is set and the
   filter leaves its table out (checked, its rows counted in s->skipped_rows if
   count_filtered, not handed out), 3 when records mode (s->batch set) made its records
   (scan_records) or segments mode (s->seg_on) added it to the batch (scan_segments), 0
   when the general path must
   decode it (no exception set), -1 on an error that is not the event's (the filter raised,
   no memory). offset < 0: a stream, where the header's log_pos says where the event ends. */
static int scan_event(RowsScanner *s, PyObject *bufobj, const unsigned char *b, Py_ssize_t pos,
                      Py_ssize_t size, long long offset, PyObject *file, PyObject *filter,
                      int tail, int verify, int count_filtered, int json, int skip, int group,
                      PyObject **out) {
    const unsigned char *e = b + pos;
    int code = e[4], kind = scan_kind(code);
    if (kind < 0)
        return group && (code == 16 || code == 162 || code == 19)
               ? scan_group_event(s, b, pos, size, offset, file, tail, verify, out) : 0;
    if (size < EV_HEADER_LEN + tail) return 0;
    Py_ssize_t p = pos + EV_HEADER_LEN, end = pos + size - tail;
    /* (an event a CrcAhead thread already checked, wholly below `verified`, is not again) */
    if (tail && verify && (offset < 0 || offset + size > s->verified)
        && crc32_update(0, e, (size_t)(size - 4)) != (uint32_t)le(e + size - 4, 4))
        return 0;  /* the general path says so */
    PyObject *code_obj = PyLong_FromLong(code);  /* a cached small int */
    PyObject *phl_obj = PyDict_GetItemWithError(s->phl, code_obj);
    if (phl_obj == NULL) { Py_DECREF(code_obj); return PyErr_Occurred() ? -1 : 0; }
    long phl = PyLong_AsLong(phl_obj);
    uint64_t table_id;
    int flags;
    if (phl == 8) {
        if (end - p < 9) { Py_DECREF(code_obj); return 0; }
    } else if (phl == 10) {
        if (end - p < 11 || le(b + p + 8, 2) != 2) { Py_DECREF(code_obj); return 0; }
    } else {
        Py_DECREF(code_obj);
        return 0;
    }
    table_id = le(b + p, 6);
    flags = (int)le(b + p + 6, 2);
    p += phl;
    Py_ssize_t ncols = b[p++];
    Py_ssize_t nbm = (ncols + 7) >> 3;
    if (kind == 1) nbm += nbm;
    if (ncols >= 251 || end - p < nbm) { Py_DECREF(code_obj); return 0; }

    int rc = 0;
    PyObject *tid = NULL, *table = NULL, *decoders = NULL, *key = NULL, *pair = NULL;
    PyObject *rows = NULL, *header = NULL, *n_obj = NULL;
    Py_ssize_t nrows = 0;
    tid = PyLong_FromUnsignedLongLong(table_id);
    if (tid == NULL) goto error;
    table = PyDict_GetItemWithError(s->tables, tid);
    if (table == NULL) { if (PyErr_Occurred()) goto error; goto done; }
    Py_INCREF(table);  /* held: the filter is Python code */
    PyObject *columns = PyObject_GetAttr(table, s_columns);
    if (columns == NULL) goto error;
    Py_ssize_t have = PyObject_Length(columns);
    Py_DECREF(columns);
    if (have < 0) goto error;
    if (have != ncols) goto done;
    if (skip && !count_filtered && filter != Py_None) {  /* left out: nothing to build or hand out */
        int keep = scan_keeps(s, filter, table);
        if (keep < 0) goto error;
        if (!keep) { rc = 2; goto done; }
    }
    decoders = PyObject_GetAttr(table, s_row_decoders);
    if (decoders == NULL) goto error;
    if (!PyDict_Check(decoders)) goto done;
    PyObject *bitmaps = PyBytes_FromStringAndSize((const char *)b + p, nbm);
    if (bitmaps == NULL) goto error;
    key = PyTuple_Pack(3, code_obj, bitmaps, json ? Py_True : Py_False);
    Py_DECREF(bitmaps);
    if (key == NULL) goto error;
    pair = PyDict_GetItemWithError(decoders, key);
    if (pair == NULL) { if (PyErr_Occurred()) goto error; goto done; }  /* not built yet */
    Py_INCREF(pair);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 4) goto done;
    p += nbm;
    PyObject *before = PyTuple_GET_ITEM(pair, 0), *after = PyTuple_GET_ITEM(pair, 1);
    if (!Py_IS_TYPE(before, &RowDecoderType)
        || (kind == 1 ? !Py_IS_TYPE(after, &RowDecoderType) : after != Py_None)) goto done;
    RowDecoder *dec = (RowDecoder *)before, *adec = kind == 1 ? (RowDecoder *)after : NULL;
    int filtered = 0;
    if (filter != Py_None) {
        int keep = scan_keeps(s, filter, table);
        if (keep < 0) goto error;
        filtered = !keep;
    }
    if (dec->npresent == 0 && p < end) goto done;  /* as rows_view(): the general path says why */
    if (filtered) {
        if (count_filtered) {
            nrows = count_rows(dec, adec, bufobj, b, &p, end);
            if (nrows < 0) goto decode_failed;
        } else {
            p = end;
        }
        if (skip) {  /* counted, not handed out */
            if (p != end) goto done;
            s->skipped_rows += nrows;
            rc = 2;
            goto done;
        }
        rows = PyList_New(0);
        if (rows == NULL) goto error;
    } else if (json && PyTuple_GET_ITEM(pair, 2) != Py_None) {  /* (None: values, see below) */
        PyObject *jb = PyTuple_GET_ITEM(pair, 2), *ja = PyTuple_GET_ITEM(pair, 3);
        if (!Py_IS_TYPE(jb, &RowDecoderType) || !((RowDecoder *)jb)->json) goto done;
        PyObject *args = kind == 1 ? Py_BuildValue("(OnnO)", bufobj, p, end, ja)
                                   : Py_BuildValue("(Onn)", bufobj, p, end);
        if (args == NULL) goto error;
        PyObject *res = RowDecoder_json_rows((RowDecoder *)jb, args);
        Py_DECREF(args);
        if (res == NULL) goto decode_failed;
        if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) { Py_DECREF(res); goto done; }
        rows = PyTuple_GET_ITEM(res, 0);
        Py_INCREF(rows);
        p = PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1));
        Py_DECREF(res);
        if (p == -1 && PyErr_Occurred()) goto error;
    } else {
        rows = PyList_New(0);
        if (rows == NULL) goto error;
        p = many_into(dec, adec, decode_row, bufobj, b, p, end, rows);
        if (p < 0) goto decode_failed;
    }
    if (p != end) goto done;
    if (s->seg_on && !filtered && json) {
        int made = scan_segments(s, table, rows, kind, e, size, offset, file);
        if (made < 0) goto error;
        if (made) { rc = 3; goto done; }
    }
    if (s->batch != NULL && !filtered && json != 1) {
        int made = scan_records(s, decoders, table, rows, kind, e, size, offset, file);
        if (made < 0) goto error;
        if (made) { rc = 3; goto done; }
    }

    long long start_at, end_at;
    header = scan_header(s, e, size, offset, &start_at, &end_at);
    if (header == NULL) goto error;
    n_obj = PyLong_FromSsize_t(nrows);
    PyObject *start_obj = PyLong_FromLongLong(start_at), *end_obj = PyLong_FromLongLong(end_at);
    PyObject *flags_obj = PyLong_FromLong(flags);
    PyObject *version = PyLong_FromLong(code >= 30 ? 2 : 1);
    if (n_obj && start_obj && end_obj && flags_obj && version) {
        PyObject *ev_args[14] = {header, file, start_obj, end_obj, Py_None,
                                 PyTuple_GET_ITEM(s->kinds, kind), tid, flags_obj, table, rows,
                                 g_empty_bytes, version, filtered ? Py_True : Py_False, n_obj};
        *out = PyObject_Vectorcall(s->make_rows, ev_args, 14, NULL);
    }
    Py_XDECREF(start_obj);
    Py_XDECREF(end_obj);
    Py_XDECREF(flags_obj);
    Py_XDECREF(version);
    if (*out == NULL) goto error;
    rc = 1;
    goto done;
decode_failed:  /* a malformed image: the general path decodes it again and names the fault */
    if (!PyErr_ExceptionMatches(PyExc_Exception)) goto error;
    PyErr_Clear();
    goto done;
error:
    rc = -1;
done:
    Py_DECREF(code_obj);
    Py_XDECREF(tid);
    Py_XDECREF(table);
    Py_XDECREF(decoders);
    Py_XDECREF(key);
    Py_XDECREF(pair);
    Py_XDECREF(rows);
    Py_XDECREF(header);
    Py_XDECREF(n_obj);
    return rc;
}

static int RowsScanner_init(RowsScanner *self, PyObject *args, PyObject *kw) {
    PyObject *mh, *mr, *kinds, *tables, *phl, *mx = NULL, *mg = NULL, *mm = NULL;
    if (!PyArg_ParseTuple(args, "OOO!O!O!|OOO", &mh, &mr, &PyTuple_Type, &kinds,
                          &PyDict_Type, &tables, &PyDict_Type, &phl, &mx, &mg, &mm)) return -1;
    if (mm != NULL && !Py_IS_TYPE(mm, &SlotMakerType)) {
        PyErr_SetString(PyExc_TypeError, "make_table_map must be a SlotMaker");
        return -1;
    }
    if (PyTuple_GET_SIZE(kinds) != 3) {
        PyErr_SetString(PyExc_TypeError, "kinds must be (insert, update, delete)");
        return -1;
    }
#define KEEP(f, v) do { Py_INCREF(v); Py_XSETREF(self->f, v); } while (0)
    KEEP(make_header, mh); KEEP(make_rows, mr); KEEP(kinds, kinds);
    KEEP(tables, tables); KEEP(phl, phl);
    if (mx != NULL && mg != NULL) { KEEP(make_xid, mx); KEEP(make_gtid, mg); }
    if (mm != NULL) KEEP(make_map, mm);
#undef KEEP
    Py_XSETREF(self->verdicts, PyDict_New());
    if (self->verdicts == NULL) return -1;
    return 0;
}

/* json_images as the scan keeps it: 0 values, 1 CDC JSON images (the Arrow path), 2 the
   same for JSON lines ("lines": records mode takes those events too). */
static int scan_json_mode(PyObject *v) {
    if (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "lines") == 0) return 2;
    return PyObject_IsTrue(v);
}

/* Sets the TABLE_MAP cache a scan may take maps from: a dict, or None for none. */
static int scan_set_maps(RowsScanner *self, PyObject *maps) {
    if (maps == Py_None) { Py_CLEAR(self->maps); return 0; }
    if (!PyDict_Check(maps)) { PyErr_SetString(PyExc_TypeError, "maps must be a dict or None"); return -1; }
    Py_INCREF(maps);
    Py_XSETREF(self->maps, maps);
    return 0;
}

/* one(event, file, tail, verify, filter, count_filtered, json_images[, maps]) -> the event
   (a common rows event, XID, MariaDB GTID, or with `maps` a TABLE_MAP found in it) | None */
static PyObject *RowsScanner_one(RowsScanner *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 && nargs != 8) { PyErr_SetString(PyExc_TypeError, "one() takes 7 or 8 arguments"); return NULL; }
    if (self->verdicts == NULL) { PyErr_SetString(PyExc_TypeError, "RowsScanner not set"); return NULL; }
    if (scan_set_maps(self, nargs == 8 ? args[7] : Py_None) < 0) return NULL;
    int tail = PyObject_IsTrue(args[2]) ? 4 : 0, verify = PyObject_IsTrue(args[3]);
    int count = PyObject_IsTrue(args[5]), json = scan_json_mode(args[6]);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *ev = NULL;
    int rc = 0;
    if (view.len >= EV_HEADER_LEN && (Py_ssize_t)le((const unsigned char *)view.buf + 9, 4) == view.len)
        rc = scan_event(self, args[0], view.buf, 0, view.len, -1, args[1], args[4], tail, verify,
                        count, json, 0, 1, &ev);
    PyBuffer_Release(&view);
    if (rc < 0) return NULL;
    if (rc == 0) Py_RETURN_NONE;
    return ev;
}

/* scan(buf, pos, base, file, tail, verify, filter, count_filtered, json_images,
   skip_filtered[, verified[, maps]]) -> self: an iterator over the common rows events (and
   XID and MariaDB GTID events, and with `maps` the TABLE_MAPs found in it) lying whole in
   buf from pos (base: the file offset of buf[0]); `pos` follows it. It stops at the first
   event it does not take. skip_filtered: the events of tables the filter leaves out are
   checked and passed over (counted in `skipped`), not handed out. verified: the file offset
   below which a CrcAhead thread has checked every event's CRC32 (not checked again). */
static PyObject *RowsScanner_scan(RowsScanner *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 10 || nargs > 12) { PyErr_SetString(PyExc_TypeError, "scan() takes 10 to 12 arguments"); return NULL; }
    if (self->verdicts == NULL) { PyErr_SetString(PyExc_TypeError, "RowsScanner not set"); return NULL; }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long long base = PyLong_AsLongLong(args[2]);
    long long verified = nargs >= 11 ? PyLong_AsLongLong(args[10]) : -1;
    if (PyErr_Occurred()) return NULL;
    if (scan_set_maps(self, nargs == 12 ? args[11] : Py_None) < 0) return NULL;
    Py_INCREF(args[0]); Py_XSETREF(self->buf, args[0]);
    Py_INCREF(args[3]); Py_XSETREF(self->file, args[3]);
    Py_INCREF(args[6]); Py_XSETREF(self->filter, args[6]);
    self->pos = pos;
    self->base = base;
    self->tail = PyObject_IsTrue(args[4]) ? 4 : 0;
    self->verify = PyObject_IsTrue(args[5]);
    self->count_filtered = PyObject_IsTrue(args[7]);
    self->json = scan_json_mode(args[8]);
    self->skip = PyObject_IsTrue(args[9]);
    self->verified = verified;
    self->packets = 0;
    Py_CLEAR(self->records);
    Py_CLEAR(self->segments);
    self->merge = 0;
    Py_INCREF(self);
    return (PyObject *)self;
}

/* scan_packets(buf, start, end, seq, file, tail, verify, filter, count_filtered, json_images,
   skip_filtered[, maps]) -> self: an iterator over the common rows events of a replica's
   received packets, whole in buf[start:end], each an event packet (4-byte header with
   sequence id `seq` counting on, status byte 0x00, one event). It stops at the first packet
   it does not take (cut by `end`, 16 MiB or more, out of sequence, not 0x00, an event it
   does not take), which the caller's general path reads; `pos` and `seq` follow it. With
   `maps` (a dict, or None for no TABLE_MAPs) it takes XID and MariaDB GTID events too, and
   the TABLE_MAPs found in `maps`, as scan() does. Why: in a stream each event is a packet,
   and framing each in Python costs more than decoding a one-row event; a small
   transaction's four events would be four trips through the general path. */
static PyObject *RowsScanner_scan_packets(RowsScanner *self, PyObject *const *args,
                                          Py_ssize_t nargs) {
    if (nargs != 11 && nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "scan_packets() takes 11 or 12 arguments");
        return NULL;
    }
    if (self->verdicts == NULL) { PyErr_SetString(PyExc_TypeError, "RowsScanner not set"); return NULL; }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), limit = PyLong_AsSsize_t(args[2]);
    long seq = PyLong_AsLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (seq < 0 || seq > 255) { PyErr_SetString(PyExc_ValueError, "seq must be 0-255"); return NULL; }
    if (scan_set_maps(self, nargs == 12 ? args[11] : Py_None) < 0) return NULL;
    self->group = nargs == 12;
    Py_INCREF(args[0]); Py_XSETREF(self->buf, args[0]);
    Py_INCREF(args[4]); Py_XSETREF(self->file, args[4]);
    Py_INCREF(args[7]); Py_XSETREF(self->filter, args[7]);
    self->pos = pos;
    self->limit = limit;
    self->seq = (int)seq;
    self->base = -1;
    self->tail = PyObject_IsTrue(args[5]) ? 4 : 0;
    self->verify = PyObject_IsTrue(args[6]);
    self->count_filtered = PyObject_IsTrue(args[8]);
    self->json = scan_json_mode(args[9]);
    self->skip = PyObject_IsTrue(args[10]);
    self->verified = -1;
    self->packets = 1;
    Py_CLEAR(self->records);  /* records and segments modes are asked for run by run */
    Py_CLEAR(self->segments);
    self->merge = 0;
    Py_INCREF(self);
    return (PyObject *)self;
}

/* 1 for the event types a records-mode list goes on over: the v1/v2 rows events and
   TABLE_MAP (the others end the list before them, undecoded). */
static inline int scan_goes_on(int code) {
    return scan_kind(code) >= 0 || code == 19;
}

static PyObject *RowsScanner_next(RowsScanner *self) {
    if (self->buf == NULL) return NULL;
    /* The buffer is taken for this call only: nothing holds the caller's memory between
       events (it is refilled once the decoder has moved on). */
    Py_buffer view;
    if (PyObject_GetBuffer(self->buf, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t pos, size;
    PyObject *ev = NULL;
    int rc;
    /* Records mode, while the caller says `merge` (a replica: inside a transaction whose
       left-out tables are passed over; a file: outside XA PREPAREs): the kept rows events
       become records in one list, the TABLE_MAPs between them are taken (as the caller's
       loop would: nothing to follow), until an event of another type, one the scan does
       not take, or the list is long enough. */
    Py_ssize_t pos0 = self->pos;
    int seq0 = self->seq;
    Py_ssize_t batch_bytes = 0;
    if (self->merge && (self->group || !self->packets) && self->json != 1
        && self->records != NULL && self->records != Py_None) {
        if ((self->batch = PyList_New(0)) == NULL) { PyBuffer_Release(&view); return NULL; }
    }
    /* Segments mode, while the caller says `merge`: the kept rows events (JSON images) go
       into the Arrow batch being built, the TABLE_MAPs between them are taken, until an
       event of another type, one the scan does not take, or the batch is full; then the
       count of events taken is handed out. What is added stays added, even if an error
       comes after it: `pos` is past it. */
    PyObject *segments = NULL;
    if (self->merge && (self->group || !self->packets) && self->json && self->segments != NULL
        && self->segments != Py_None) {
        segments = self->segments;
        Py_INCREF(segments);  /* held: the caller could set another during the call */
        if (!PyTuple_Check(segments) || PyTuple_GET_SIZE(segments) != 5
            || !Py_IS_TYPE(PyTuple_GET_ITEM(segments, 0), &CdcSegmentsType)
            || !Py_IS_TYPE(PyTuple_GET_ITEM(segments, 1), &ImageColumnType)
            || !Py_IS_TYPE(PyTuple_GET_ITEM(segments, 2), &ImageColumnType)) {
            PyErr_SetString(PyExc_TypeError, "segments must be (CdcSegments, ImageColumn, "
                            "ImageColumn, most rows, most bytes)");
            Py_DECREF(segments);
            PyBuffer_Release(&view);
            return NULL;
        }
        self->seg = (CdcSegments *)PyTuple_GET_ITEM(segments, 0);
        self->seg_before = (ImageColumn *)PyTuple_GET_ITEM(segments, 1);
        self->seg_after = (ImageColumn *)PyTuple_GET_ITEM(segments, 2);
        self->seg_max_rows = PyLong_AsSsize_t(PyTuple_GET_ITEM(segments, 3));
        self->seg_max_bytes = PyLong_AsSsize_t(PyTuple_GET_ITEM(segments, 4));
        if (PyErr_Occurred()) { Py_DECREF(segments); PyBuffer_Release(&view); return NULL; }
        self->seg_on = 1;
    }
    self->batch_events = self->batch_rows = 0;
    for (;;) {  /* until an event to hand out, or one the scan does not take */
        pos = self->pos;
        size = 0;
        rc = 0;
        int code = -1;
        if (self->packets) {
            /* header (length, sequence id), 0x00, the event: its size is the rest of the packet */
            Py_ssize_t lim = self->limit < view.len ? self->limit : view.len, len;
            if (pos >= 0 && lim - pos >= 5 + EV_HEADER_LEN
                && (len = (Py_ssize_t)le(b + pos, 3)) < 0xFFFFFF && len <= lim - pos - 4
                && b[pos + 3] == self->seq && b[pos + 4] == 0
                && (size = len - 1) >= EV_HEADER_LEN && (Py_ssize_t)le(b + pos + 5 + 9, 4) == size) {
                code = b[pos + 5 + 4];
                if (self->batch_events == 0 || scan_goes_on(code))
                    rc = scan_event(self, self->buf, b, pos + 5, size, -1, self->file, self->filter,
                                    self->tail, self->verify, self->count_filtered, self->json,
                                    self->skip, self->group, &ev);
            }
            size += 5;
        } else if (pos >= 0 && view.len - pos >= EV_HEADER_LEN
                   && (size = (Py_ssize_t)le(b + pos + 9, 4)) >= EV_HEADER_LEN
                   && size <= view.len - pos) {
            code = b[pos + 4];
            if (self->batch_events == 0 || scan_goes_on(code))
                rc = scan_event(self, self->buf, b, pos, size, self->base + pos, self->file,
                                self->filter, self->tail, self->verify, self->count_filtered,
                                self->json, self->skip, 1, &ev);
        }
        if (rc == 1 && (self->batch != NULL || self->seg_on) && code == 19) {
            /* a TABLE_MAP inside the list: mapped (scan_table_map), nothing to hand out */
            Py_CLEAR(ev);
            self->batch_events++;
            rc = 3;
        }
        if (rc == 2 || rc == 3) {
            self->pos = pos + size;
            if (self->packets) self->seq = (self->seq + 1) & 0xFF;
            if (rc == 2) {
                self->skipped++;
                continue;
            }
            self->scanned++;
            batch_bytes += size;
            if (self->seg_on) {
                if (self->seg->rows.n >= self->seg_max_rows || self->seg->nbytes >= self->seg_max_bytes)
                    break;  /* the batch is full: the caller flushes it */
                continue;
            }
            if (PyList_GET_SIZE(self->batch) >= SCAN_BATCH_RECORDS || batch_bytes >= SCAN_BATCH_BYTES)
                break;
            continue;
        }
        break;
    }
    PyBuffer_Release(&view);
    if (segments != NULL) {
        self->seg_on = 0;
        self->seg = NULL;
        self->seg_before = self->seg_after = NULL;
        Py_DECREF(segments);
        if (rc < 0) {  /* the events before it stay in the batch, and `pos` past them */
            Py_XDECREF(ev);
            return NULL;
        }
        if (self->batch_events > 0) {
            /* their count first; the event it stopped at, if any, is scanned again next time
               (a rows event that did not fit the batch is decoded twice) */
            Py_XDECREF(ev);
            return PyLong_FromSsize_t(self->batch_events);
        }
    }
    PyObject *batch = self->batch;
    self->batch = NULL;
    if (batch != NULL) {
        if (rc < 0) {  /* nothing of the list is handed out: the scan stands before it */
            self->pos = pos0;
            self->seq = seq0;
            Py_DECREF(batch);
            Py_XDECREF(ev);
            return NULL;
        }
        if (self->batch_events > 0) {
            /* the list first; the event it stopped at, if any, is scanned again next time
               (only a rows event whose records the list could not make is decoded twice) */
            Py_XDECREF(ev);
            return batch;
        }
        Py_DECREF(batch);
    }
    if (rc == 1) {
        self->pos = pos + size;
        if (self->packets) self->seq = (self->seq + 1) & 0xFF;
        self->scanned++;
        return ev;
    }
    if (rc < 0) return NULL;
    Py_CLEAR(self->buf);  /* done: an event it does not take, or the chunk's end */
    return NULL;
}

static int RowsScanner_traverse(RowsScanner *self, visitproc visit, void *arg) {
    Py_VISIT(self->make_header); Py_VISIT(self->make_rows); Py_VISIT(self->kinds);
    Py_VISIT(self->make_xid); Py_VISIT(self->make_gtid); Py_VISIT(self->make_map);
    Py_VISIT(self->maps); Py_VISIT(self->resolve);
    Py_VISIT(self->tables); Py_VISIT(self->phl);
    Py_VISIT(self->buf); Py_VISIT(self->file); Py_VISIT(self->filter);
    Py_VISIT(self->verdicts); Py_VISIT(self->verdict_filter);
    Py_VISIT(self->records); Py_VISIT(self->gtid); Py_VISIT(self->batch);
    Py_VISIT(self->segments);
    return 0;
}

static int RowsScanner_clear(RowsScanner *self) {
    Py_CLEAR(self->make_header); Py_CLEAR(self->make_rows); Py_CLEAR(self->kinds);
    Py_CLEAR(self->make_xid); Py_CLEAR(self->make_gtid); Py_CLEAR(self->make_map);
    Py_CLEAR(self->maps); Py_CLEAR(self->resolve);
    Py_CLEAR(self->tables); Py_CLEAR(self->phl);
    Py_CLEAR(self->buf); Py_CLEAR(self->file); Py_CLEAR(self->filter);
    Py_CLEAR(self->verdicts); Py_CLEAR(self->verdict_filter);
    Py_CLEAR(self->records); Py_CLEAR(self->gtid); Py_CLEAR(self->batch);
    Py_CLEAR(self->segments);
    return 0;
}

static void RowsScanner_dealloc(RowsScanner *self) {
    PyObject_GC_UnTrack(self);
    RowsScanner_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef RowsScanner_members[] = {
    {"resolve", T_OBJECT, offsetof(RowsScanner, resolve), 0,
     "a schema resolver's resolve(table_map), called on every TABLE_MAP taken from the cache "
     "(None: none)"},
    {"pos", T_PYSSIZET, offsetof(RowsScanner, pos), READONLY,
     "where the scan stands: the end of the last event it handed out"},
    {"scanned", T_PYSSIZET, offsetof(RowsScanner, scanned), READONLY,
     "events handed out by scans so far"},
    {"skipped", T_PYSSIZET, offsetof(RowsScanner, skipped), READONLY,
     "events of left-out tables passed over by scans so far (skip_filtered)"},
    {"skipped_rows", T_PYSSIZET, offsetof(RowsScanner, skipped_rows), READONLY,
     "their rows, when counted (count_filtered)"},
    {"seq", T_INT, offsetof(RowsScanner, seq), READONLY,
     "scan_packets: the sequence id of the next packet"},
    {"records", T_OBJECT, offsetof(RowsScanner, records), 0,
     "records mode for this run (set after scan_packets or scan, which clear it): the key "
     "(\"records\", filter) of each TABLE_MAP's record constants; while `merge`, next() "
     "hands out lists of change records"},
    {"merge", T_INT, offsetof(RowsScanner, merge), 0,
     "records and segments modes: the events still to come may be made records or added to "
     "the batch (the caller's loop sets it as transactions open and close)"},
    {"gtid", T_OBJECT, offsetof(RowsScanner, gtid), 0,
     "records and segments modes: the open transaction's GTID text, for its rows"},
    {"segments", T_OBJECT, offsetof(RowsScanner, segments), 0,
     "segments mode for this run (set after scan or scan_packets, which clear it): "
     "(CdcSegments, before ImageColumn, after ImageColumn, most rows, most bytes) of the Arrow "
     "batch being built; while `merge`, with JSON images, next() adds the kept rows events "
     "to it and hands out how many events it took"},
    {"batch_events", T_PYSSIZET, offsetof(RowsScanner, batch_events), READONLY,
     "records mode: the events (rows and TABLE_MAP) behind the last list handed out; "
     "segments mode: the events behind the last count"},
    {"batch_rows", T_PYSSIZET, offsetof(RowsScanner, batch_rows), READONLY,
     "records mode: their rows (an UPDATE's pair counts once)"},
    {"skip", T_INT, offsetof(RowsScanner, skip), 0,
     "skip_filtered for the events still to come (a replica's run sets it as transactions "
     "open and close)"},
    {NULL, 0, 0, 0, NULL}
};

static PyMethodDef RowsScanner_methods[] = {
    {"one", (PyCFunction)(void (*)(void))RowsScanner_one, METH_FASTCALL,
     "one(event, file, crc32_tail, verify, filter, count_filtered, json_images) -> RowsEvent or "
     "None: one whole event of a stream (its offset from the header's log_pos)."},
    {"scan", (PyCFunction)(void (*)(void))RowsScanner_scan, METH_FASTCALL,
     "scan(buf, pos, base, file, crc32_tail, verify, filter, count_filtered, json_images, "
     "skip_filtered[, verified]) -> self, an iterator of the common rows events from buf[pos] "
     "on; .pos follows it. Checksums of events below the file offset `verified` are not "
     "checked again (CrcAhead checked them)."},
    {"scan_packets", (PyCFunction)(void (*)(void))RowsScanner_scan_packets, METH_FASTCALL,
     "scan_packets(buf, start, end, seq, file, crc32_tail, verify, filter, count_filtered, "
     "json_images, skip_filtered[, maps]) -> self, an iterator of the common rows events of the "
     "event packets in buf[start:end] (with `maps`, XID, MariaDB GTID and the TABLE_MAPs found "
     "in maps too); .pos and .seq follow it."},
    {NULL, NULL, 0, NULL}
};

PyTypeObject RowsScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.RowsScanner",
    .tp_basicsize = sizeof(RowsScanner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "RowsScanner(make_header, make_rows_event, kinds, tables, post_header_lens"
              "[, make_xid, make_maria_gtid[, make_table_map]]): common rows events (and, given "
              "the makers, XID, MariaDB GTID and already parsed TABLE_MAP events) framed, "
              "checked and decoded in C (see event_rows.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RowsScanner_init,
    .tp_dealloc = (destructor)RowsScanner_dealloc,
    .tp_traverse = (traverseproc)RowsScanner_traverse,
    .tp_clear = (inquiry)RowsScanner_clear,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)RowsScanner_next,
    .tp_members = RowsScanner_members,
    .tp_methods = RowsScanner_methods,
};

int event_rows_init(void) {
    s_columns = PyUnicode_InternFromString("columns");
    s_row_decoders = PyUnicode_InternFromString("row_decoders");
    s_schema = PyUnicode_InternFromString("schema");
    s_table = PyUnicode_InternFromString("table");
    s_table_id = PyUnicode_InternFromString("table_id");
    g_empty_bytes = PyBytes_FromStringAndSize(NULL, 0);
    if (!s_columns || !s_row_decoders || !s_schema || !s_table || !s_table_id || !g_empty_bytes)
        return -1;
    return PyType_Ready(&RowsScannerType);
}

