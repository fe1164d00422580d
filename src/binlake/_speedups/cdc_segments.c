/* CdcSegments: the per-event side of a CDC batch (the Arrow/Spark path): a tuple of fields
 * per segment (a rows event, the part of one in the batch, or a single record), the run
 * ends that spread them over their rows, and each row's number in its event.
 *
 * Why: in Python this is a dozen attribute reads, a tuple, the image columns' calls and
 * two array appends per segment. A rows event holds one row when the row is big
 * (binlog_row_event_max_size is 8 KiB) and a one-row transaction is one record: there
 * that Python would weigh as much as the decoding itself. event() and record() take those whole
 * in one call: the fields read at their slots, the images copied into the ImageColumns
 * while still in cache. They return None/False for what they do not take (values not yet
 * JSON, a statement record, columns kept as Python lists), which the builder's Python
 * takes as before; segment() and segment_rows() record what that Python adds.
 *
 * A compilation unit; arrow.h declares what it gives the others. */
#include "common.h"
#include <structmember.h>
#include "arrow.h"
#include "records.h"


static int i32_room(I32s *a, Py_ssize_t k) {
    if (a->n + k <= a->cap) return 0;
    int32_t *p = grow_array(a->p, &a->cap, a->n + k, 256, sizeof(int32_t));
    if (p == NULL) return -1;
    a->p = p;
    return 0;
}

/* The int32 items as bytes; the array starts empty (its memory kept for the next batch). */
static PyObject *i32_take(I32s *a) {
    PyObject *b = PyBytes_FromStringAndSize((const char *)a->p, a->n * 4);
    if (b != NULL) a->n = 0;
    return b;
}

/* Offsets of object slots by name, looked up once per class (a class without such a slot,
   or with it computed, is not taken: its objects go the Python way). */
#define SLOTS_MAX 16
typedef struct { PyTypeObject *tp; int ok; Py_ssize_t off[SLOTS_MAX]; } SlotCache;

static int slots_find(SlotCache *c, PyTypeObject *tp, const char *const *names, int k) {
    if (c->tp == tp) return c->ok;
    int ok = 1;
    for (int i = 0; i < k && ok; i++) {
        PyObject *name = PyUnicode_InternFromString(names[i]);
        if (name == NULL) return -1;
        Py_ssize_t off = object_slot_offset(tp, name);
        Py_DECREF(name);
        if (off < 0) ok = 0;
        else c->off[i] = off;
    }
    Py_INCREF(tp);  /* held: a freed class's address may come back as another class */
    Py_XSETREF(c->tp, tp);
    c->ok = ok;
    return ok;
}

/* obj's slot at `off` (borrowed), or NULL with AttributeError when it was never set. */
static inline PyObject *slot_get(PyObject *obj, Py_ssize_t off, const char *name) {
    PyObject *v = *(PyObject **)((char *)obj + off);
    if (v == NULL) PyErr_Format(PyExc_AttributeError, "%.100s has no %s", Py_TYPE(obj)->tp_name, name);
    return v;
}

enum { EV_KIND, EV_ROWS, EV_TABLE, EV_FILE, EV_OFFSET, EV_END, EV_INNER, EV_HEADER, EV_N };
static const char *const EV_NAMES[EV_N] = {"kind", "rows", "table", "file", "offset", "end",
                                           "inner_index", "header"};
enum { TM_SCHEMA, TM_TABLE, TM_N };
static const char *const TM_NAMES[TM_N] = {"schema", "table"};
static const char *const HD_NAMES[1] = {"timestamp"};
enum { RC_OP, RC_SCHEMA, RC_TABLE, RC_FILE, RC_POS, RC_END, RC_INNER, RC_GTID, RC_TS, RC_ROW,
       RC_BEFORE, RC_AFTER, RC_TM, RC_N };
static const char *const RC_NAMES[RC_N] = {"op", "schema", "table", "file", "pos", "end_pos",
                                           "inner", "gtid", "timestamp", "row", "_before",
                                           "_after", "table_map"};
static SlotCache g_ev_slots, g_tm_slots, g_hd_slots, g_rc_slots;


static PyObject *CdcSegments_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *fidx, *file_index;
    static char *kw[] = {"fidx", "file_index", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O:CdcSegments", kw, &PyDict_Type, &fidx,
                                     &file_index)) return NULL;
    CdcSegments *self = (CdcSegments *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->segs = PyList_New(0);
    if (self->segs == NULL) { Py_DECREF(self); return NULL; }
    self->fidx = Py_NewRef(fidx);
    self->file_index = Py_NewRef(file_index);
    return (PyObject *)self;
}

static void CdcSegments_dealloc(CdcSegments *self) {
    Py_XDECREF(self->segs);
    Py_XDECREF(self->fidx);
    Py_XDECREF(self->file_index);
    PyMem_Free(self->ends.p);
    PyMem_Free(self->rows.p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t CdcSegments_len(CdcSegments *self) { return self->rows.n; }

/* The file's index (a new reference): the builder's dict, else its file_index(file). */
static PyObject *seg_file_index(CdcSegments *self, PyObject *file) {
    PyObject *v = PyDict_GetItemWithError(self->fidx, file);
    if (v != NULL) return Py_NewRef(v);
    if (PyErr_Occurred()) return NULL;
    v = PyObject_CallOneArg(self->file_index, file);
    if (v != NULL && PyDict_SetItem(self->fidx, file, v) < 0) Py_CLEAR(v);
    return v;
}

/* A segment of `count` rows numbered first.. (count > 0); steals nothing. */
static int seg_add(CdcSegments *self, PyObject *seg, long long first, Py_ssize_t count) {
    if (count <= 0 || first < 0 || first + count > INT32_MAX
        || self->rows.n + count > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a segment needs rows, numbered within int32");
        return -1;
    }
    if (i32_room(&self->rows, count) < 0 || i32_room(&self->ends, 1) < 0
        || PyList_Append(self->segs, seg) < 0) return -1;
    for (Py_ssize_t i = 0; i < count; i++) self->rows.p[self->rows.n++] = (int32_t)(first + i);
    self->ends.p[self->ends.n++] = (int32_t)self->rows.n;
    return 0;
}

/* segment(fields, first, count): a segment of count rows numbered first, first + 1, ... */
static PyObject *CdcSegments_segment(CdcSegments *self, PyObject *args) {
    PyObject *seg;
    long long first;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "O!Ln", &PyTuple_Type, &seg, &first, &count)) return NULL;
    if (seg_add(self, seg, first, count) < 0) return NULL;
    Py_RETURN_NONE;
}

/* segment_rows(fields, rows): a segment whose rows have these numbers. */
static PyObject *CdcSegments_segment_rows(CdcSegments *self, PyObject *args) {
    PyObject *seg, *rows;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &seg, &rows)) return NULL;
    PyObject *fast = PySequence_Fast(rows, "rows must be a sequence of ints");
    if (fast == NULL) return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
    if (k == 0 || i32_room(&self->rows, k) < 0 || i32_room(&self->ends, 1) < 0
        || self->rows.n + k > INT32_MAX) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a segment needs rows, within int32");
        Py_DECREF(fast);
        return NULL;
    }
    Py_ssize_t at = self->rows.n;
    for (Py_ssize_t i = 0; i < k; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if ((v == -1 && PyErr_Occurred()) || v < 0 || v > INT32_MAX) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "row number out of int32");
            Py_DECREF(fast);
            return NULL;
        }
        self->rows.p[at + i] = (int32_t)v;
    }
    Py_DECREF(fast);
    if (PyList_Append(self->segs, seg) < 0) return NULL;
    self->rows.n = at + k;
    self->ends.p[self->ends.n++] = (int32_t)self->rows.n;
    Py_RETURN_NONE;
}

/* The 12 fields of a segment (a new tuple): file's index looked up, query and ddl None. */
static PyObject *seg_fields(CdcSegments *self, PyObject *op, PyObject *schema, PyObject *table,
                            PyObject *file, PyObject *pos, PyObject *end, PyObject *inner,
                            PyObject *gtid, PyObject *ts) {
    PyObject *fi = seg_file_index(self, file);
    if (fi == NULL) return NULL;
    PyObject *t = PyTuple_New(12);
    if (t == NULL) { Py_DECREF(fi); return NULL; }
    PyObject *items[9] = {op, schema, table, file, pos, end, inner, gtid, ts};
    for (int i = 0; i < 9; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(items[i]));
    PyTuple_SET_ITEM(t, 9, fi);
    PyTuple_SET_ITEM(t, 10, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(t, 11, Py_NewRef(Py_None));
    return t;
}

/* Rows [start, stop) of a rows event's packed images as one segment (kind 0 insert,
   1 update, 2 delete; `op` its name): the images into their columns, the segment's fields
   once. The bytes of images added, or -1. Shared by event() and the RowsScanner's segments
   mode (event_rows.c), which adds rows events without making event objects. */
Py_ssize_t seg_rows(CdcSegments *self, ImageColumn *before, ImageColumn *after,
                    ImageRows *rows, int kind, Py_ssize_t start, Py_ssize_t stop,
                    PyObject *op, PyObject *schema, PyObject *table, PyObject *file,
                    PyObject *pos, PyObject *end, PyObject *inner, PyObject *gtid,
                    PyObject *ts) {
    if (kind == 1 && rows->sides != 2) {
        PyErr_SetString(PyExc_ValueError, "an update's images come in two sides");
        return -1;
    }
    PyObject *seg = seg_fields(self, op, schema, table, file, pos, end, inner, gtid, ts);
    if (seg == NULL) return -1;
    Py_ssize_t k = stop - start, b = 0, a = 0;
    if (kind == 1) {
        b = col_run(before, rows, 0, start, stop);
        a = b < 0 ? -1 : col_run(after, rows, 1, start, stop);
    } else if (kind == 0) {
        b = col_nulls(before, k);
        a = b < 0 ? -1 : col_run(after, rows, 0, start, stop);
    } else {
        b = col_run(before, rows, 0, start, stop);
        a = b < 0 ? -1 : col_nulls(after, k);
    }
    if (a < 0 || seg_add(self, seg, start, k) < 0) { Py_DECREF(seg); return -1; }
    Py_DECREF(seg);
    self->nbytes += a + b;
    return a + b;
}

/* event(ev, gtid, before, after, start, stop) -> bytes of images added, or None: rows
   [start, stop) of a rows event whose images are packed (ImageRows) as one segment, as the
   builder's add_rows would add them; None (nothing added) for any other event or columns. */
static PyObject *CdcSegments_event(CdcSegments *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "event(ev, gtid, before, after, start, stop)");
        return NULL;
    }
    PyObject *ev = args[0], *gtid = args[1];
    if (!Py_IS_TYPE(args[2], &ImageColumnType) || !Py_IS_TYPE(args[3], &ImageColumnType))
        Py_RETURN_NONE;
    ImageColumn *before = (ImageColumn *)args[2], *after = (ImageColumn *)args[3];
    int got = slots_find(&g_ev_slots, Py_TYPE(ev), EV_NAMES, EV_N);
    if (got <= 0) { if (got < 0) return NULL; Py_RETURN_NONE; }
    const Py_ssize_t *o = g_ev_slots.off;
    PyObject *rows_obj = slot_get(ev, o[EV_ROWS], "rows");
    if (rows_obj == NULL) return NULL;
    if (!Py_IS_TYPE(rows_obj, &ImageRowsType)) Py_RETURN_NONE;
    ImageRows *rows = (ImageRows *)rows_obj;
    Py_ssize_t start = PyLong_AsSsize_t(args[4]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t stop = args[5] == Py_None ? rows->n : PyLong_AsSsize_t(args[5]);
    if (stop == -1 && PyErr_Occurred()) return NULL;
    if (stop > rows->n) stop = rows->n;
    if (start < 0) { PyErr_SetString(PyExc_ValueError, "negative start row"); return NULL; }
    if (stop <= start) return PyLong_FromLong(0);
    PyObject *kind = slot_get(ev, o[EV_KIND], "kind"), *tm = slot_get(ev, o[EV_TABLE], "table");
    PyObject *file = slot_get(ev, o[EV_FILE], "file"), *pos = slot_get(ev, o[EV_OFFSET], "offset");
    PyObject *end = slot_get(ev, o[EV_END], "end"), *inner = slot_get(ev, o[EV_INNER], "inner_index");
    PyObject *header = slot_get(ev, o[EV_HEADER], "header");
    if (!kind || !tm || !file || !pos || !end || !inner || !header) return NULL;
    if ((got = slots_find(&g_tm_slots, Py_TYPE(tm), TM_NAMES, TM_N)) <= 0
        || (got = slots_find(&g_hd_slots, Py_TYPE(header), HD_NAMES, 1)) <= 0) {
        if (got < 0) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *schema = slot_get(tm, g_tm_slots.off[TM_SCHEMA], "schema");
    PyObject *table = slot_get(tm, g_tm_slots.off[TM_TABLE], "table");
    PyObject *ts = slot_get(header, g_hd_slots.off[0], "timestamp");
    if (!schema || !table || !ts) return NULL;
    int update = PyUnicode_CompareWithASCIIString(kind, "update") == 0;
    int insert = !update && PyUnicode_CompareWithASCIIString(kind, "insert") == 0;
    if (!update && !insert && PyUnicode_CompareWithASCIIString(kind, "delete") != 0) Py_RETURN_NONE;
    Py_ssize_t added = seg_rows(self, before, after, rows, insert ? 0 : update ? 1 : 2, start, stop,
                                kind, schema, table, file, pos, end, inner, gtid, ts);
    return added < 0 ? NULL : PyLong_FromSsize_t(added);
}

/* record(rec, before, after) -> True if the record went in as a segment of one row (its
   images JSON bytes or None), False (nothing added) if the builder's Python must take it. */
static PyObject *CdcSegments_record(CdcSegments *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "record(rec, before, after)");
        return NULL;
    }
    PyObject *rec = args[0];
    if (!Py_IS_TYPE(args[1], &ImageColumnType) || !Py_IS_TYPE(args[2], &ImageColumnType))
        Py_RETURN_FALSE;
    int got = slots_find(&g_rc_slots, Py_TYPE(rec), RC_NAMES, RC_N);
    if (got <= 0) { if (got < 0) return NULL; Py_RETURN_FALSE; }
    const Py_ssize_t *o = g_rc_slots.off;
    PyObject *v[RC_N];
    for (int i = 0; i < RC_N; i++)
        if ((v[i] = slot_get(rec, o[i], RC_NAMES[i])) == NULL) return NULL;
    PyObject *b = v[RC_BEFORE], *a = v[RC_AFTER];
    if (v[RC_TM] == Py_None || (b != Py_None && !PyBytes_CheckExact(b))
        || (a != Py_None && !PyBytes_CheckExact(a))) Py_RETURN_FALSE;
    long long row = PyLong_AsLongLong(v[RC_ROW]);
    if (row == -1 && PyErr_Occurred()) return NULL;
    PyObject *seg = seg_fields(self, v[RC_OP], v[RC_SCHEMA], v[RC_TABLE], v[RC_FILE], v[RC_POS],
                               v[RC_END], v[RC_INNER], v[RC_GTID], v[RC_TS]);
    if (seg == NULL) return NULL;
    int bad = col_append((ImageColumn *)args[1], b) < 0 || col_append((ImageColumn *)args[2], a) < 0
              || seg_add(self, seg, row, 1) < 0;
    Py_DECREF(seg);
    if (bad) return NULL;
    self->nbytes += (b == Py_None ? 0 : PyBytes_GET_SIZE(b)) + (a == Py_None ? 0 : PyBytes_GET_SIZE(a));
    Py_RETURN_TRUE;
}

/* finish() -> (segments, ends, rows): the batch's segment fields (a list of tuples), run ends
   and row numbers (int32 bytes); everything starts empty, nbytes 0. */
static PyObject *CdcSegments_finish(CdcSegments *self, PyObject *unused) {
    PyObject *fresh = PyList_New(0);
    if (fresh == NULL) return NULL;
    PyObject *ends = i32_take(&self->ends);
    PyObject *rows = ends == NULL ? NULL : i32_take(&self->rows);
    if (rows == NULL) { Py_DECREF(fresh); Py_XDECREF(ends); return NULL; }
    PyObject *segs = self->segs;
    self->segs = fresh;
    self->nbytes = 0;
    return Py_BuildValue("(NNN)", segs, ends, rows);
}

static PyObject *CdcSegments_count(CdcSegments *self, void *closure) {
    return PyLong_FromSsize_t(PyList_GET_SIZE(self->segs));
}

static PyMethodDef CdcSegments_methods[] = {
    {"segment", (PyCFunction)CdcSegments_segment, METH_VARARGS,
     "segment(fields, first, count): a segment of count rows numbered first, first + 1, ..."},
    {"segment_rows", (PyCFunction)CdcSegments_segment_rows, METH_VARARGS,
     "segment_rows(fields, rows): a segment whose rows have these numbers."},
    {"event", (PyCFunction)(void (*)(void))CdcSegments_event, METH_FASTCALL,
     "event(ev, gtid, before, after, start, stop) -> image bytes added, or None: rows "
     "[start, stop) of a rows event with packed images (ImageRows), images and segment."},
    {"record", (PyCFunction)(void (*)(void))CdcSegments_record, METH_FASTCALL,
     "record(rec, before, after) -> bool: a change record with JSON images (bytes or None), "
     "images and a one-row segment; False: not taken."},
    {"finish", (PyCFunction)CdcSegments_finish, METH_NOARGS,
     "finish() -> (segments, ends, rows): the fields, run ends and row numbers (int32 "
     "bytes) so far; starts empty."},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef CdcSegments_members[] = {
    {"nbytes", T_PYSSIZET, offsetof(CdcSegments, nbytes), 0,
     "Bytes of images added (the builder adds what its Python writes)."},
    {NULL, 0, 0, 0, NULL}
};

static PyGetSetDef CdcSegments_getset[] = {
    {"count", (getter)CdcSegments_count, NULL, "Segments so far.", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PySequenceMethods CdcSegments_as_sequence = {.sq_length = (lenfunc)CdcSegments_len};

PyTypeObject CdcSegmentsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.CdcSegments",
    .tp_basicsize = sizeof(CdcSegments),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CdcSegments(fidx, file_index): a CDC batch's per-event fields, run ends and "
              "row numbers; len() is its rows.",
    .tp_new = CdcSegments_new,
    .tp_dealloc = (destructor)CdcSegments_dealloc,
    .tp_methods = CdcSegments_methods,
    .tp_members = CdcSegments_members,
    .tp_getset = CdcSegments_getset,
    .tp_as_sequence = &CdcSegments_as_sequence,
};

