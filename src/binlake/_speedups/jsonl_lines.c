/* Change records -> JSON lines, as `binlake decode` and `binlake stream` print them.
 *
 * Why: in Python each record becomes a dict of formatted values (changes.to_json_dict),
 * then json.dumps runs on it, per record: that costs more than decoding the record. Here a
 * list of records becomes the UTF-8 bytes of their lines in one call, from the records'
 * value tuples (or the CDC JSON text of their images, made by a decoder with
 * json_images="lines", copied as it is), with a per-table plan (cdcjson.jsonl_plan: each column's JSON key and how
 * its values are written) made once per TABLE_MAP.
 *
 * The value rules are those of changes.formatter_for and json.dumps (ensure_ascii=False,
 * separators (",", ":")), which stay the reference (cdcjson.record_line, the pure-Python
 * twin): a value whose Python type is not the common one of its column (a zero date's
 * InvalidTemporal, a non-finite float, a JSON document ...) is written by the plan's Python
 * formatter for that column, and a record that is not the common shape (a statement or DDL
 * record, images already turned into dicts, no TABLE_MAP) by the twin itself, whole.
 *
 * A compilation unit; records.h declares what it gives the others. */
#include "common.h"
#include <datetime.h>
#include <math.h>
#include "text.h"
#include "utf8.h"
#include "records.h"

int jsonl_init(void) {
    PyDateTime_IMPORT;
    return PyDateTimeAPI == NULL ? -1 : 0;
}

/* A plan's value kinds (cdcjson.jsonl_plan), one byte per column */
enum { JK_GENERIC = 0, JK_ANY = 1, JK_FLOAT = 2, JK_DECIMAL = 3, JK_DATE = 4, JK_DATETIME = 5,
       JK_TIMESTAMP = 6, JK_TIME = 7 };

/* changes._RECORD_TEMPLATE_ORDER */
enum { JR_OP, JR_SCHEMA, JR_TABLE, JR_BEFORE, JR_AFTER, JR_PK, JR_FILE, JR_POS, JR_END, JR_ROW,
       JR_INNER, JR_GTID, JR_TS, JR_TM, JR_STMT, JR_DDL, JR_N };

static Py_ssize_t jl_hint = 1 << 16;  /* the size of the last list's lines: the next buffer's */
static PyObject *jl_fmt_f;  /* "f": format(Decimal, "f") */

/* A str as a JSON string (encode_basestring's escapes). 1: written, 0: not a str this
   writer takes (nothing written, no error), -1: error. */
static int jl_str(Buf *o, PyObject *s) {
    if (!PyUnicode_CheckExact(s)) return 0;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {  /* lone surrogates: the twin's path says what happens */
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t at = o->len;
    if (putch(o, '"') < 0) return -1;
    int ok = put_utf8_escaped(o, (const unsigned char *)u, n);
    if (ok <= 0) {  /* (Python's UTF-8 is valid: only no memory) */
        o->len = at;
        return ok;
    }
    return putch(o, '"') < 0 ? -1 : 1;
}

/* An exact int. 1, or -1 on an error. */
static int jl_int(Buf *o, PyObject *v) {
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow) {
        if (x == -1 && PyErr_Occurred()) return -1;
        return put_int(o, x) < 0 ? -1 : 1;
    }
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (!(u == (unsigned long long)-1 && PyErr_Occurred())) return put_uint(o, u) < 0 ? -1 : 1;
        PyErr_Clear();
    }
    PyObject *t = PyObject_Str(v);
    if (t == NULL) return -1;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(t, &n);
    int rc = u == NULL ? -1 : put(o, u, n) < 0 ? -1 : 1;
    Py_DECREF(t);
    return rc;
}

/* The column's Python formatter (value -> JSON text). */
static int jl_generic(Buf *o, PyObject *fmt, PyObject *v) {
    PyObject *text = PyObject_CallOneArg(fmt, v);
    if (text == NULL) return -1;
    Py_ssize_t n;
    const char *u = PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &n) : NULL;
    if (u == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "a JSON lines formatter must return str");
    int rc = u == NULL ? -1 : put(o, u, n);
    Py_DECREF(text);
    return rc;
}

/* One value that is neither None nor ABSENT. 1: written, 0: for the Python formatter
   (nothing written), -1: error. */
static int jl_value(Buf *o, int kind, int arg, PyObject *v) {
    switch (kind) {
    case JK_ANY:  /* changes.json_value: str, int and float as they are */
        if (PyUnicode_CheckExact(v)) return jl_str(o, v);
        if (PyLong_CheckExact(v)) return jl_int(o, v);
        if (PyFloat_CheckExact(v)) {
            double d = PyFloat_AS_DOUBLE(v);
            if (!isfinite(d)) return 0;
            return put_repr(o, d) < 0 ? -1 : 1;
        }
        if (PyBytes_CheckExact(v))
            return put_base64(o, (const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v)) < 0 ? -1 : 1;
        return 0;
    case JK_FLOAT: {  /* changes.float32_text */
        if (!PyFloat_CheckExact(v)) return 0;
        double d = PyFloat_AS_DOUBLE(v);
        float f = (float)d;
        if (!isfinite(d) || (double)f != d) return 0;
        return put_float32(o, f) < 0 ? -1 : 1;
    }
    case JK_DECIMAL: {  /* changes.format_decimal */
        if (g_decimal == NULL || (PyObject *)Py_TYPE(v) != g_decimal) return 0;
        PyObject *t = PyObject_Format(v, jl_fmt_f);
        if (t == NULL) return -1;
        int rc = jl_str(o, t);
        Py_DECREF(t);
        return rc;
    }
    case JK_DATE: {
        if (!PyDate_CheckExact(v)) return 0;
        char t[16], *d = t;
        *d++ = '"';
        d = digits_n(d, PyDateTime_GET_YEAR(v), 4); *d++ = '-';
        d = digits_n(d, PyDateTime_GET_MONTH(v), 2); *d++ = '-';
        d = digits_n(d, PyDateTime_GET_DAY(v), 2);
        *d++ = '"';
        return put(o, t, d - t) < 0 ? -1 : 1;
    }
    case JK_DATETIME:
    case JK_TIMESTAMP: {  /* changes._datetime_formatter: the fields, as strftime has them */
        if (!PyDateTime_CheckExact(v) || arg < 0 || arg > 6) return 0;
        char t[48], *d = t;
        *d++ = '"';
        d = digits_n(d, PyDateTime_GET_YEAR(v), 4); *d++ = '-';
        d = digits_n(d, PyDateTime_GET_MONTH(v), 2); *d++ = '-';
        d = digits_n(d, PyDateTime_GET_DAY(v), 2); *d++ = 'T';
        d = digits_n(d, PyDateTime_DATE_GET_HOUR(v), 2); *d++ = ':';
        d = digits_n(d, PyDateTime_DATE_GET_MINUTE(v), 2); *d++ = ':';
        d = digits_n(d, PyDateTime_DATE_GET_SECOND(v), 2);
        d = fraction_text(d, PyDateTime_DATE_GET_MICROSECOND(v), arg);
        if (kind == JK_TIMESTAMP) *d++ = 'Z';
        *d++ = '"';
        return put(o, t, d - t) < 0 ? -1 : 1;
    }
    case JK_TIME: {  /* MySQLTime.format(fsp) */
        if (g_mysqltime == NULL || (PyObject *)Py_TYPE(v) != g_mysqltime || arg < 0 || arg > 6)
            return 0;
        long f[5];
        for (int i = 0; i < 5; i++) {
            PyObject *x = PyObject_GetAttr(v, g_time_fields[i]);
            if (x == NULL) return -1;
            int exact = PyLong_Check(x);  /* bool too: `negative` */
            f[i] = exact ? PyLong_AsLong(x) : -1;
            Py_DECREF(x);
            if (f[i] == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
            if (!exact) return 0;
        }
        if (f[0] < 0 || f[0] > 1 || f[1] < 0 || f[1] > 9999 || f[2] < 0 || f[2] > 99
            || f[3] < 0 || f[3] > 99 || f[4] < 0 || f[4] > 999999) return 0;
        char t[40], *d = t;
        *d++ = '"';
        if (f[0]) *d++ = '-';
        d = digits_n(d, f[1], f[1] >= 1000 ? 4 : f[1] >= 100 ? 3 : 2); *d++ = ':';
        d = digits_n(d, f[2], 2); *d++ = ':';
        d = digits_n(d, f[3], 2);
        d = fraction_text(d, f[4], arg);
        *d++ = '"';
        return put(o, t, d - t) < 0 ? -1 : 1;
    }
    default:
        return 0;
    }
}

/* A plan: (keys, kinds, args, formatters), see cdcjson.jsonl_plan. */
typedef struct {
    PyObject *keys, *fmts;
    const unsigned char *kinds, *args;
    Py_ssize_t n;
    int text_ok;  /* no JK_GENERIC column: an image's CDC JSON bytes are its JSON here too */
} JlPlan;

static int jl_plan(PyObject *plan, JlPlan *p) {
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4) return 0;
    PyObject *keys = PyTuple_GET_ITEM(plan, 0), *kinds = PyTuple_GET_ITEM(plan, 1);
    PyObject *args = PyTuple_GET_ITEM(plan, 2), *fmts = PyTuple_GET_ITEM(plan, 3);
    if (!PyTuple_Check(keys) || !PyBytes_Check(kinds) || !PyBytes_Check(args) || !PyTuple_Check(fmts))
        return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (PyBytes_GET_SIZE(kinds) != n || PyBytes_GET_SIZE(args) != n || PyTuple_GET_SIZE(fmts) != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyBytes_Check(PyTuple_GET_ITEM(keys, i))) return 0;
    p->keys = keys;
    p->fmts = fmts;
    p->kinds = (const unsigned char *)PyBytes_AS_STRING(kinds);
    p->args = (const unsigned char *)PyBytes_AS_STRING(args);
    p->n = n;
    p->text_ok = memchr(p->kinds, JK_GENERIC, n) == NULL;
    return 1;
}

/* An image (a value tuple in column order) as a JSON object, or with `text` as the lines
   of --output text (the plan's keys then start each line). 1, 0 (not this writer's: a
   tuple of another length, or JSON text for text lines), -1. */
static int jl_image(Buf *o, const JlPlan *p, PyObject *img, int text) {
    if (PyBytes_CheckExact(img)) {  /* a decoder's CDC JSON text (json_images="lines") */
        if (!p->text_ok || text) return 0;
        return put(o, PyBytes_AS_STRING(img), PyBytes_GET_SIZE(img)) < 0 ? -1 : 1;
    }
    if (!PyTuple_CheckExact(img) || PyTuple_GET_SIZE(img) != p->n) return 0;
    if (!text && putch(o, '{') < 0) return -1;
    int first = 1;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        PyObject *v = PyTuple_GET_ITEM(img, i);
        if (v == g_absent) continue;
        if (!first && !text && putch(o, ',') < 0) return -1;
        first = 0;
        PyObject *key = PyTuple_GET_ITEM(p->keys, i);
        if (put(o, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)) < 0) return -1;
        if (v == Py_None) {
            if (put(o, "null", 4) < 0 || (text && putch(o, '\n') < 0)) return -1;
            continue;
        }
        Py_ssize_t at = o->len;
        int rc = jl_value(o, p->kinds[i], p->args[i], v);
        if (rc < 0) return -1;
        if (rc == 0) {
            o->len = at;
            if (jl_generic(o, PyTuple_GET_ITEM(p->fmts, i), v) < 0) return -1;
        }
        if (text && putch(o, '\n') < 0) return -1;
    }
    return text || putch(o, '}') >= 0 ? 1 : -1;
}

static inline int jl_lit(Buf *o, const char *s) { return put(o, s, (Py_ssize_t)strlen(s)); }

/* A str or None (null). 1, 0, -1 as jl_str. */
static int jl_str_or_null(Buf *o, PyObject *v) {
    if (v == Py_None) return put(o, "null", 4) < 0 ? -1 : 1;
    return jl_str(o, v);
}

static int jl_int_field(Buf *o, PyObject *v) {
    return PyLong_CheckExact(v) ? jl_int(o, v) : 0;
}

/* A record's slots into f, and its table's plan. 1, 0 (the twin writes it), -1. The plan
   cache (*tm_last, *plan_last) is the caller's, over one list. */
static int jl_fields(PyObject *rec, PyObject **f, PyObject *plan_for, PyObject **tm_last,
                     PyObject **plan_last, JlPlan *plan) {
    if (Py_TYPE(rec) != g_rec_type || g_rec_nslots != JR_N) return 0;
    for (int i = 0; i < JR_N; i++) {
        f[i] = *(PyObject **)((char *)rec + g_rec_off[i]);
        if (f[i] == NULL) return 0;
    }
    if (f[JR_STMT] != Py_None || f[JR_DDL] != Py_None || f[JR_TM] == Py_None) return 0;
    PyObject *before = f[JR_BEFORE], *after = f[JR_AFTER];
    if ((before != Py_None && !PyTuple_CheckExact(before) && !PyBytes_CheckExact(before))
        || (after != Py_None && !PyTuple_CheckExact(after) && !PyBytes_CheckExact(after)))
        return 0;
    if (f[JR_TM] != *tm_last) {
        PyObject *pl = PyObject_CallOneArg(plan_for, f[JR_TM]);
        if (pl == NULL) return -1;
        Py_INCREF(f[JR_TM]);
        Py_XSETREF(*tm_last, f[JR_TM]);
        Py_XSETREF(*plan_last, pl);
        if (!jl_plan(pl, plan)) plan->keys = NULL;
    }
    return plan->keys != NULL;
}

/* One record's JSON line (with its newline). 1, 0 (the twin writes it: `o` as it was), -1. */
static int jl_record(Buf *o, PyObject *rec, PyObject *plan_for, PyObject **tm_last,
                     PyObject **plan_last, JlPlan *plan) {
    PyObject *f[JR_N];
    int rc = jl_fields(rec, f, plan_for, tm_last, plan_last, plan);
    if (rc <= 0) return rc;
    PyObject *before = f[JR_BEFORE], *after = f[JR_AFTER];
    Py_ssize_t start = o->len;
    for (int i = 0; i < JR_N; i++) Py_INCREF(f[i]);  /* held while formatters run */
#define STEP(x) do { rc = (x); if (rc <= 0) goto out; } while (0)
#define LIT(s) STEP(jl_lit(o, s) < 0 ? -1 : 1)
    LIT("{\"op\":");
    STEP(jl_str(o, f[JR_OP]));
    LIT(",\"schema\":");
    STEP(jl_str(o, f[JR_SCHEMA]));
    LIT(",\"table\":");
    STEP(jl_str(o, f[JR_TABLE]));
    if (before != Py_None) { LIT(",\"before\":"); STEP(jl_image(o, plan, before, 0)); }
    if (after != Py_None) { LIT(",\"after\":"); STEP(jl_image(o, plan, after, 0)); }
    PyObject *pk = f[JR_PK];
    if (pk != Py_None) {
        if (!PyTuple_CheckExact(pk)) { rc = 0; goto out; }
        Py_ssize_t k = PyTuple_GET_SIZE(pk);
        if (k) {
            LIT(",\"primary_key\":[");
            for (Py_ssize_t i = 0; i < k; i++) {
                if (i) LIT(",");
                STEP(jl_str(o, PyTuple_GET_ITEM(pk, i)));
            }
            LIT("]");
        }
    }
    LIT(",\"position\":{\"file\":");
    STEP(jl_str_or_null(o, f[JR_FILE]));
    LIT(",\"pos\":");
    STEP(jl_int_field(o, f[JR_POS]));
    LIT(",\"end_pos\":");
    STEP(jl_int_field(o, f[JR_END]));
    LIT(",\"row\":");
    STEP(jl_int_field(o, f[JR_ROW]));
    if (f[JR_INNER] != Py_None) { LIT(",\"inner\":"); STEP(jl_int_field(o, f[JR_INNER])); }
    LIT("},\"gtid\":");
    STEP(jl_str_or_null(o, f[JR_GTID]));
    LIT(",\"ts\":");
    STEP(jl_int_field(o, f[JR_TS]));
    LIT("}\n");
#undef LIT
#undef STEP
out:
    for (int i = 0; i < JR_N; i++) Py_DECREF(f[i]);
    if (rc <= 0) o->len = start;
    return rc;
}

/* A str's UTF-8 as it is (an f-string's {x}). 1, 0 (not a str, lone surrogates), -1. */
static int jl_raw(Buf *o, PyObject *s) {
    if (!PyUnicode_CheckExact(s)) return 0;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) { PyErr_Clear(); return 0; }
    return put(o, u, n) < 0 ? -1 : 1;
}

/* One record's lines of --output text (cdcjson.record_text), each with its newline: the
   plan's keys are '###     name=' and its formatters json.dumps' default separators. */
static int tl_record(Buf *o, PyObject *rec, PyObject *plan_for, PyObject **tm_last,
                     PyObject **plan_last, JlPlan *plan) {
    PyObject *f[JR_N];
    int rc = jl_fields(rec, f, plan_for, tm_last, plan_last, plan);
    if (rc <= 0) return rc;
    static const char *const OPS[3][2] = {{"insert", "INSERT"}, {"update", "UPDATE"},
                                          {"delete", "DELETE"}};
    const char *op = NULL;
    if (!PyUnicode_CheckExact(f[JR_OP])) return 0;
    for (int i = 0; i < 3; i++)
        if (PyUnicode_CompareWithASCIIString(f[JR_OP], OPS[i][0]) == 0) op = OPS[i][1];
    if (op == NULL) return 0;
    PyObject *gtid = f[JR_GTID];
    if (gtid != Py_None && !PyUnicode_CheckExact(gtid)) return 0;
    Py_ssize_t start = o->len;
    for (int i = 0; i < JR_N; i++) Py_INCREF(f[i]);  /* held while formatters run */
#define STEP(x) do { rc = (x); if (rc <= 0) goto out; } while (0)
#define LIT(s) STEP(jl_lit(o, s) < 0 ? -1 : 1)
    LIT("### ");
    LIT(op);
    LIT(" ");
    STEP(jl_raw(o, f[JR_SCHEMA]));
    LIT(".");
    STEP(jl_raw(o, f[JR_TABLE]));
    LIT("  at ");
    if (f[JR_FILE] == Py_None) LIT("None");
    else STEP(jl_raw(o, f[JR_FILE]));
    LIT(":");
    STEP(jl_int_field(o, f[JR_POS]));
    LIT(" row ");
    STEP(jl_int_field(o, f[JR_ROW]));
    if (gtid != Py_None && PyUnicode_GET_LENGTH(gtid)) { LIT(" gtid "); STEP(jl_raw(o, gtid)); }
    LIT("\n");
    if (f[JR_BEFORE] != Py_None) { LIT("###   before:\n"); STEP(jl_image(o, plan, f[JR_BEFORE], 1)); }
    if (f[JR_AFTER] != Py_None) { LIT("###   after:\n"); STEP(jl_image(o, plan, f[JR_AFTER], 1)); }
#undef LIT
#undef STEP
out:
    for (int i = 0; i < JR_N; i++) Py_DECREF(f[i]);
    if (rc <= 0) o->len = start;
    return rc;
}

typedef int (*jl_writer)(Buf *, PyObject *, PyObject *, PyObject **, PyObject **, JlPlan *);

static PyObject *jl_records(PyObject *args, jl_writer write);

/* jsonl_records(records, plan_for, line_of) -> bytes: the records' JSON lines, UTF-8. */
PyObject *jsonl_records(PyObject *mod, PyObject *args) {
    return jl_records(args, jl_record);
}

/* text_records(records, plan_for, line_of) -> bytes: their lines of --output text. */
PyObject *text_records(PyObject *mod, PyObject *args) {
    return jl_records(args, tl_record);
}

static PyObject *jl_records(PyObject *args, jl_writer write) {
    PyObject *records, *plan_for, *line_of;
    if (!PyArg_ParseTuple(args, "OOO", &records, &plan_for, &line_of)) return NULL;
    if (jl_fmt_f == NULL && (jl_fmt_f = PyUnicode_InternFromString("f")) == NULL) return NULL;
    /* a tuple of our own: formatters are Python code and must not change the list under us */
    PyObject *seq = PySequence_Tuple(records);
    if (seq == NULL) return NULL;
    /* A buffer of this call's own: the formatters are Python code, during which another
       thread may write another list. */
    Buf buf = {NULL, 0, 0}, *o = &buf;
    PyObject *tm_last = NULL, *plan_last = NULL, *res = NULL;
    if (buf_reserve(o, jl_hint) < 0) { Py_DECREF(seq); return NULL; }
    JlPlan plan = {0};
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PyTuple_GET_ITEM(seq, i);
        int rc = write(o, rec, plan_for, &tm_last, &plan_last, &plan);
        if (rc < 0) goto done;
        if (rc == 0) {  /* the twin's line */
            PyObject *line = PyObject_CallOneArg(line_of, rec);
            if (line == NULL) goto done;
            Py_ssize_t k;
            const char *u = PyUnicode_Check(line) ? PyUnicode_AsUTF8AndSize(line, &k) : NULL;
            if (u == NULL && !PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "line_of must return str");
            int bad = u == NULL || put(o, u, k) < 0 || putch(o, '\n') < 0;
            Py_DECREF(line);
            if (bad) goto done;
        }
    }
    res = PyBytes_FromStringAndSize(o->p, o->len);
    jl_hint = o->len < 256 ? 256 : o->len > (8 << 20) ? (8 << 20) : o->len;
done:
    Py_XDECREF(tm_last);
    Py_XDECREF(plan_last);
    Py_DECREF(seq);
    PyMem_Free(o->p);
    return res;
}

