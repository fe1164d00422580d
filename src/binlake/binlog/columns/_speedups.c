/* binlake row-image decoder in C: the hot loop of every rows event.
 *
 * Why C: a row image is a null bitmap plus packed values; in pure Python each value costs
 * a few bytecodes plus an object, and a wide table spends most of its time in the
 * interpreter. Here a table shape becomes an array of column ops (built once per TABLE_MAP
 * shape by rowcodec.py) and a row is one pass over the bytes.
 *
 * Semantics are exactly those of the generated Python decoders in rowcodec.py (which stay
 * the reference and the fallback): the same Python objects, the same fallbacks for zero
 * dates (the Python helpers build InvalidTemporal values), and any column type not handled
 * here is decoded by a per-column Python function (OP_POSCALL). Errors are raised as
 * ValueError (truncated or malformed image), UnicodeDecodeError or binlake's DecodeError;
 * rows.py adds the table and the row number.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "binlake._speedups assumes a little-endian host (the pure-Python decoder is used otherwise)"
#endif

enum {
    OP_ABSENT = 0, OP_INT = 1, OP_FLOAT = 2, OP_DOUBLE = 3, OP_YEAR = 4, OP_STR = 5,
    OP_ENUM = 6, OP_SET = 7, OP_BIT = 8, OP_DATE = 9, OP_DATETIME2 = 10, OP_TIMESTAMP2 = 11,
    OP_TIME2 = 12, OP_DECIMAL = 13, OP_LENCALL = 14, OP_NONE = 15, OP_POSCALL = 16
};
enum { TXT_BYTES = 0, TXT_UTF8 = 1, TXT_CODEC = 2, TXT_UTF8_OR_BYTES = 3, TXT_CHARMAP = 4 };

typedef struct {
    int op, a, b, c;
    PyObject *obj;       /* labels tuple, callable or codec name (owned) */
    const char *codec;   /* borrowed from obj when c == TXT_CODEC */
    /* JSON images (optional): */
    PyObject *fmt;       /* value -> JSON text (str), for anything not written directly */
    PyObject *key;       /* bytes: the JSON object key and colon, '"name":' */
    PyObject *jlabels;   /* ENUM/SET: tuple of bytes, each label JSON-escaped (no quotes) */
    uint32_t *charmap;   /* TXT_CHARMAP: byte -> code point (0xFFFE: undefined) */
} ColOp;

typedef struct { char *p; Py_ssize_t len, cap; } Buf;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ncols;
    Py_ssize_t npresent;
    ColOp *ops;
    int json;            /* built with fmt/key per column: json() and json_many() work */
    Buf out;
} RowDecoder;

/* configured once from Python: see configure() */
static PyObject *g_absent, *g_decimal, *g_mysqltime, *g_decode_error;
static PyObject *g_date_fb, *g_dt2_fb, *g_ts2_fb, *g_empty, *g_comma;
static PyObject *g_time_fields[5];

static const int FRAC_BYTES[7] = {0, 1, 1, 2, 2, 3, 3};
static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                   100000000, 1000000000};

static int truncated(Py_ssize_t need, Py_ssize_t at, Py_ssize_t len) {
    PyErr_Format(PyExc_ValueError, "row image truncated: %zd bytes needed at offset %zd, %zd left",
                 need, at, len - at < 0 ? 0 : len - at);
    return -1;
}

#define NEEDI(k) do { if ((k) < 0 || p + (Py_ssize_t)(k) > n) { truncated((k), p, n); return -1; } } while (0)
#define NEED(k) do { if ((k) < 0 || p + (Py_ssize_t)(k) > n) { truncated((k), p, n); return NULL; } } while (0)

static inline uint64_t le(const unsigned char *s, int k) {
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--) v = (v << 8) | s[i];
    return v;
}

static inline uint64_t be(const unsigned char *s, int k) {
    uint64_t v = 0;
    for (int i = 0; i < k; i++) v = (v << 8) | s[i];
    return v;
}

static inline int frac_us(const unsigned char *s, int fsp) {
    switch (FRAC_BYTES[fsp]) {
    case 1: return s[0] * 10000;
    case 2: return ((s[0] << 8) | s[1]) * 100;
    case 3: return (s[0] << 16) | (s[1] << 8) | s[2];
    default: return 0;
    }
}

static inline int leap(long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static inline int days_in_month(long y, long m) {
    static const int d[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : d[m];
}

static inline int valid_date(long y, long m, long d) {
    return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= days_in_month(y, m);
}

static PyObject *decode_text(const ColOp *op, const char *s, Py_ssize_t len) {
    PyObject *v;
    switch (op->c) {
    case TXT_UTF8:
        return PyUnicode_DecodeUTF8(s, len, NULL);
    case TXT_CODEC:
        return PyUnicode_Decode(s, len, op->codec, NULL);
    case TXT_CHARMAP:  /* single-byte charsets: their codec's decoding table, no codec call */
        return PyUnicode_DecodeCharmap(s, len, op->obj, NULL);
    case TXT_UTF8_OR_BYTES:
        v = PyUnicode_DecodeUTF8(s, len, NULL);
        if (v == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            return PyBytes_FromStringAndSize(s, len);
        }
        return v;
    default:
        return PyBytes_FromStringAndSize(s, len);
    }
}

/* Calendar fields of a temporal value; `ok` is 0 when Python's datetime cannot hold it
   (zero dates, zero-in-date parts, corrupt bytes): callers defer to the Python helpers. */
typedef struct { long Y, M, D; int h, mi, s, ok; } Civil;

static Civil datetime2_fields(uint64_t intpart, int us) {
    Civil c = {0, 0, 0, 0, 0, 0, 0};
    int64_t x = (int64_t)intpart - 0x8000000000LL;
    if (x < 0) return c;
    int64_t ymd = x >> 17, ym = ymd >> 5, hms = x & 0x1FFFF;
    c.Y = (long)(ym / 13); c.M = (long)(ym % 13); c.D = (long)(ymd & 31);
    c.h = (int)(hms >> 12); c.mi = (int)((hms >> 6) & 63); c.s = (int)(hms & 63);
    c.ok = valid_date(c.Y, c.M, c.D) && c.h < 24 && c.mi < 60 && c.s < 60 && us < 1000000;
    return c;
}

static Civil epoch_fields(uint64_t secs) {
    /* days since 1970-01-01 -> civil date (proleptic Gregorian) */
    Civil c;
    int64_t days = (int64_t)(secs / 86400), rem = (int64_t)(secs % 86400);
    int64_t z = days + 719468, era = z / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2) y++;
    c.Y = (long)y; c.M = (long)m; c.D = (long)d;
    c.h = (int)(rem / 3600); c.mi = (int)(rem / 60 % 60); c.s = (int)(rem % 60); c.ok = 1;
    return c;
}

/* DECIMAL(p,s) bytes at s -> its p decimal digits (with leading zeros) and sign; -1 on
   a digit group beyond its digits. The caller checked the metadata and the length. */
static int decimal_digits(const ColOp *op, const unsigned char *s, char *digits, int *neg) {
    int prec = op->a, scale = op->b;
    int intg = prec - scale, intg0 = intg / 9, intg0x = intg % 9;
    int frac0 = scale / 9, frac0x = scale % 9;
    int size = DIG2BYTES[intg0x] + 4 * (intg0 + frac0) + DIG2BYTES[frac0x];
    unsigned char tmp[40];
    int nd = 0, at = 0;
    memcpy(tmp, s, size);
    *neg = !(tmp[0] & 0x80);
    if (*neg) for (int i = 0; i < size; i++) tmp[i] = (unsigned char)~tmp[i];
    tmp[0] &= 0x7F;
    /* groups: leading partial integer group, full groups, trailing partial fraction group */
    int ngroups = (intg0x ? 1 : 0) + intg0 + frac0 + (frac0x ? 1 : 0);
    for (int g = 0; g < ngroups; g++) {
        int nbytes = 4, ndig = 9;
        if (g == 0 && intg0x) { nbytes = DIG2BYTES[intg0x]; ndig = intg0x; }
        else if (g == ngroups - 1 && frac0x) { nbytes = DIG2BYTES[frac0x]; ndig = frac0x; }
        uint32_t v = (uint32_t)be(tmp + at, nbytes);
        at += nbytes;
        if (v >= POW10[ndig]) {
            PyErr_Format(g_decode_error, "DECIMAL(%d,%d) has a digit group beyond its digits",
                         prec, scale);
            return -1;
        }
        for (int k = ndig - 1; k >= 0; k--) { digits[nd + k] = (char)('0' + v % 10); v /= 10; }
        nd += ndig;
    }
    return nd;
}

static PyObject *decode_decimal(const ColOp *op, const unsigned char *s) {
    int scale = op->b, neg;
    char digits[100];
    int nd = decimal_digits(op, s, digits, &neg);
    if (nd < 0) return NULL;
    int first = 0;
    while (first < nd - 1 && digits[first] == '0') first++;
    char text[128];
    int len = 0;
    int zero = nd == 0 || (first == nd - 1 && digits[first] == '0');
    if (neg && !zero) text[len++] = '-';
    if (nd == 0) text[len++] = '0';
    else { memcpy(text + len, digits + first, nd - first); len += nd - first; }
    len += snprintf(text + len, sizeof(text) - len, "E-%d", scale);
    PyObject *str = PyUnicode_FromStringAndSize(text, len);
    if (str == NULL) return NULL;
    PyObject *res = PyObject_CallOneArg(g_decimal, str);
    Py_DECREF(str);
    return res;
}

static PyObject *timestamp_utc(uint64_t secs, int us) {
    Civil c = epoch_fields(secs);
    return PyDateTimeAPI->DateTime_FromDateAndTime(
        (int)c.Y, (int)c.M, (int)c.D, c.h, c.mi, c.s, us,
        PyDateTime_TimeZone_UTC, PyDateTimeAPI->DateTimeType);
}

static void time2_parts(const unsigned char *s, int fsp, int *negp, int64_t *hmsp, int64_t *microp) {
    int64_t packed;
    if (fsp >= 5) {
        packed = (int64_t)be(s, 6) - 0x800000000000LL;
    } else {
        int64_t intpart = (int64_t)be(s, 3) - 0x800000LL, frac = 0;
        if (fsp == 0) {
            frac = 0;
        } else if (fsp <= 2) {
            frac = s[3];
            if (intpart < 0 && frac) { intpart += 1; frac -= 0x100; }
            frac *= 10000;
        } else {
            frac = (int64_t)be(s + 3, 2);
            if (intpart < 0 && frac) { intpart += 1; frac -= 0x10000; }
            frac *= 100;
        }
        packed = intpart * 16777216LL + frac;
    }
    int neg = packed < 0;
    if (neg) packed = -packed;
    *negp = neg;
    *hmsp = packed >> 24;
    *microp = packed & 0xFFFFFF;
}

static PyObject *decode_time2(const unsigned char *s, int fsp) {
    int neg;
    int64_t hms, micro;
    time2_parts(s, fsp, &neg, &hms, &micro);
    /* MySQLTime is a frozen slots dataclass: fill its slots directly (its __init__ goes
       through object.__setattr__ five times, which costs more than the rest of the row). */
    PyTypeObject *tp = (PyTypeObject *)g_mysqltime;
    PyObject *o = tp->tp_alloc(tp, 0);
    if (o == NULL) return NULL;
    long vals[4] = {(long)((hms >> 12) & 0x3FF), (long)((hms >> 6) & 0x3F), (long)(hms & 0x3F),
                    (long)micro};
    if (PyObject_GenericSetAttr(o, g_time_fields[0], neg ? Py_True : Py_False) < 0) goto fail;
    for (int i = 0; i < 4; i++) {
        PyObject *v = PyLong_FromLong(vals[i]);
        if (v == NULL) goto fail;
        int rc = PyObject_GenericSetAttr(o, g_time_fields[i + 1], v);
        Py_DECREF(v);
        if (rc < 0) goto fail;
    }
    return o;
fail:
    Py_DECREF(o);
    return NULL;
}

static PyObject *decode_set(const ColOp *op, uint64_t mask) {
    Py_ssize_t n = PyTuple_GET_SIZE(op->obj);
    if (n < 64 && (mask >> n)) {
        PyErr_Format(g_decode_error, "SET bitmask 0x%llx has bits beyond its %zd values",
                     (unsigned long long)mask, n);
        return NULL;
    }
    PyObject *parts = PyList_New(0);
    if (parts == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n && i < 64; i++) {
        if ((mask >> i) & 1) {
            if (PyList_Append(parts, PyTuple_GET_ITEM(op->obj, i)) < 0) { Py_DECREF(parts); return NULL; }
        }
    }
    PyObject *res = PyUnicode_Join(g_comma, parts);
    Py_DECREF(parts);
    return res;
}

/* One present, non-NULL value at *pp; advances *pp. */
static PyObject *decode_value(const ColOp *op, PyObject *bufobj, const unsigned char *b,
                              Py_ssize_t n, Py_ssize_t *pp) {
    Py_ssize_t p = *pp;
    PyObject *v = NULL;
    switch (op->op) {
    case OP_INT: {
        int k = op->a;
        NEED(k);
        uint64_t u = le(b + p, k);
        p += k;
        if (op->b) v = PyLong_FromUnsignedLongLong(u);
        else {
            int64_t sv;
            if (k == 8) sv = (int64_t)u;
            else { uint64_t sign = 1ULL << (8 * k - 1); sv = (int64_t)((u ^ sign)) - (int64_t)sign; }
            v = PyLong_FromLongLong(sv);
        }
        break;
    }
    case OP_FLOAT: { float f; NEED(4); memcpy(&f, b + p, 4); p += 4; v = PyFloat_FromDouble(f); break; }
    case OP_DOUBLE: { double d; NEED(8); memcpy(&d, b + p, 8); p += 8; v = PyFloat_FromDouble(d); break; }
    case OP_YEAR: { NEED(1); int y = b[p]; p += 1; v = PyLong_FromLong(y ? 1900 + y : 0); break; }
    case OP_STR: {
        NEED(op->a);
        Py_ssize_t len = (Py_ssize_t)le(b + p, op->a);
        p += op->a;
        NEED(len);
        if (op->b && len < op->b) {   /* BINARY(n): stored without its trailing zero bytes */
            v = PyBytes_FromStringAndSize(NULL, op->b);
            if (v != NULL) {
                memcpy(PyBytes_AS_STRING(v), b + p, len);
                memset(PyBytes_AS_STRING(v) + len, 0, op->b - len);
            }
        } else {
            v = decode_text(op, (const char *)b + p, len);
        }
        p += len;
        break;
    }
    case OP_ENUM: {
        NEED(op->a);
        uint64_t idx = le(b + p, op->a);
        p += op->a;
        if (op->obj == Py_None) { v = PyLong_FromUnsignedLongLong(idx); break; }
        Py_ssize_t cnt = PyTuple_GET_SIZE(op->obj);
        if (idx >= 1 && idx <= (uint64_t)cnt) { v = PyTuple_GET_ITEM(op->obj, idx - 1); Py_INCREF(v); }
        else if (idx == 0) { v = g_empty; Py_INCREF(v); }
        else PyErr_Format(g_decode_error, "ENUM index %llu beyond its %zd values",
                          (unsigned long long)idx, cnt);
        break;
    }
    case OP_SET: {
        NEED(op->a);
        uint64_t mask = le(b + p, op->a);
        p += op->a;
        v = op->obj == Py_None ? PyLong_FromUnsignedLongLong(mask) : decode_set(op, mask);
        break;
    }
    case OP_BIT: { NEED(op->a); v = PyLong_FromUnsignedLongLong(be(b + p, op->a)); p += op->a; break; }
    case OP_DATE: {
        NEED(3);
        long x = (long)le(b + p, 3);
        p += 3;
        long y = x >> 9, m = (x >> 5) & 15, d = x & 31;
        if (valid_date(y, m, d)) v = PyDate_FromDate((int)y, (int)m, (int)d);
        else v = PyObject_CallFunction(g_date_fb, "l", x);
        break;
    }
    case OP_DATETIME2: {
        int fsp = op->a, fb = FRAC_BYTES[fsp];
        NEED(5 + fb);
        uint64_t intpart = be(b + p, 5);
        int us = frac_us(b + p + 5, fsp);
        p += 5 + fb;
        Civil c = datetime2_fields(intpart, us);
        if (c.ok) {
            v = PyDateTime_FromDateAndTime((int)c.Y, (int)c.M, (int)c.D, c.h, c.mi, c.s, us);
            break;
        }
        v = PyObject_CallFunction(g_dt2_fb, "Kii", (unsigned long long)intpart, us, fsp);
        break;
    }
    case OP_TIMESTAMP2: {
        int fsp = op->a, fb = FRAC_BYTES[fsp];
        NEED(4 + fb);
        uint64_t secs = be(b + p, 4);
        int us = frac_us(b + p + 4, fsp);
        p += 4 + fb;
        if (secs && us < 1000000) v = timestamp_utc(secs, us);
        else v = PyObject_CallFunction(g_ts2_fb, "Kii", (unsigned long long)secs, us, fsp);
        break;
    }
    case OP_TIME2: {
        int fsp = op->a, size = 3 + FRAC_BYTES[fsp];
        NEED(size);
        v = decode_time2(b + p, fsp);
        p += size;
        break;
    }
    case OP_DECIMAL: {
        int prec = op->a, scale = op->b;
        int intg = prec - scale;
        int size = DIG2BYTES[intg % 9] + 4 * (intg / 9 + scale / 9) + DIG2BYTES[scale % 9];
        NEED(size);
        v = decode_decimal(op, b + p);
        p += size;
        break;
    }
    case OP_LENCALL: {
        NEED(op->a);
        Py_ssize_t len = (Py_ssize_t)le(b + p, op->a);
        p += op->a;
        NEED(len);
        PyObject *raw = PyBytes_FromStringAndSize((const char *)b + p, len);
        p += len;
        if (raw == NULL) return NULL;
        v = op->obj == Py_None ? raw : PyObject_CallOneArg(op->obj, raw);
        if (op->obj != Py_None) Py_DECREF(raw);
        break;
    }
    case OP_NONE: v = Py_None; Py_INCREF(v); break;
    case OP_POSCALL: {
        PyObject *pos = PyLong_FromSsize_t(p);
        if (pos == NULL) return NULL;
        PyObject *res = PyObject_CallFunctionObjArgs(op->obj, bufobj, pos, NULL);
        Py_DECREF(pos);
        if (res == NULL) return NULL;
        if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
            Py_DECREF(res);
            PyErr_SetString(PyExc_TypeError, "column decoder must return (value, pos)");
            return NULL;
        }
        Py_ssize_t np = PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1));
        if (np == -1 && PyErr_Occurred()) { Py_DECREF(res); return NULL; }
        if (np < p || np > n) {  /* Python slices past the end without complaint */
            Py_DECREF(res);
            truncated(np - p, p, n);
            return NULL;
        }
        v = PyTuple_GET_ITEM(res, 0);
        Py_INCREF(v);
        Py_DECREF(res);
        p = np;
        break;
    }
    default:
        PyErr_Format(PyExc_ValueError, "unknown column op %d", op->op);
        return NULL;
    }
    if (v != NULL) *pp = p;
    return v;
}

/* One row image at *pp -> tuple over all columns; advances *pp. */
static PyObject *decode_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                            Py_ssize_t n, Py_ssize_t *pp) {
    Py_ssize_t p = *pp, nb = (self->npresent + 7) / 8;
    NEED(nb);
    const unsigned char *nulls = b + p;
    p += nb;
    PyObject *row = PyTuple_New(self->ncols);
    if (row == NULL) return NULL;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        const ColOp *op = &self->ops[i];
        PyObject *v;
        if (op->op == OP_ABSENT) { v = g_absent; Py_INCREF(v); }
        else {
            if (nulls[k >> 3] & (1 << (k & 7))) { v = Py_None; Py_INCREF(v); }
            else {
                v = decode_value(op, bufobj, b, n, &p);
                if (v == NULL) { Py_DECREF(row); return NULL; }
            }
            k++;
        }
        PyTuple_SET_ITEM(row, i, v);
    }
    *pp = p;
    return row;
}


/* ---- JSON images: row bytes -> the CDC JSON text of arrow.py, without Python values ---- */

static int buf_reserve(Buf *o, Py_ssize_t extra) {
    if (o->len + extra <= o->cap) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + extra) cap *= 2;
    char *np = PyMem_Realloc(o->p, cap);
    if (np == NULL) { PyErr_NoMemory(); return -1; }
    o->p = np;
    o->cap = cap;
    return 0;
}

static inline int put(Buf *o, const char *s, Py_ssize_t n) {
    if (buf_reserve(o, n) < 0) return -1;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    return 0;
}

static inline int putch(Buf *o, char c) {
    if (o->len >= o->cap && buf_reserve(o, 1) < 0) return -1;
    o->p[o->len++] = c;
    return 0;
}

static const char HEX[] = "0123456789abcdef";

/* JSON string body of UTF-8 bytes, escaped as json.encoder.encode_basestring does. */
static int put_escaped(Buf *o, const unsigned char *s, Py_ssize_t n) {
    if (buf_reserve(o, n + 2) < 0) return -1;
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t j = i;
        while (j < n && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\') j++;
        if (put(o, (const char *)s + i, j - i) < 0) return -1;
        if (j >= n) break;
        unsigned char c = s[j];
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        int k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default: esc[1] = 'u'; esc[2] = '0'; esc[3] = '0'; esc[4] = HEX[c >> 4]; esc[5] = HEX[c & 15]; k = 6;
        }
        if (put(o, esc, k) < 0) return -1;
        i = j + 1;
    }
    return 0;
}

/* Validate strict UTF-8, then write it JSON-escaped; 0 if the bytes are not valid UTF-8
   (nothing is written then), -1 on memory errors.

   The buffer always has room for the rest of the input copied as is plus 16 bytes (one
   vector store); ROOM(extra) keeps that true before an escape writes `extra` bytes, so the
   buffer grows with what is written, not by 6x the input up front. */
#define ROOM(extra) do { \
        Py_ssize_t used_ = (char *)d - o->p; \
        if (o->cap - used_ < (n - i) + 16 + (extra)) { \
            o->len = used_; \
            if (buf_reserve(o, (n - i) + 64 + (extra)) < 0) return -1; \
            d = (unsigned char *)o->p + o->len; \
        } \
    } while (0)

/* Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF, as Python's
   decoder) as a shift-based DFA: each state is a bit offset, and utf8_dfa[byte] holds the
   next state for every current state, so a byte costs one load and one shift with no branch.
   Text with an accent or emoji every few bytes then costs what ASCII does; a byte loop with
   a branch per sequence was mispredicted on most of them. */
enum { U_OK, U_ERR, U_T1, U_T2, U_T3, U_E0, U_ED, U_F0, U_F4, U_NSTATES };
static uint64_t utf8_dfa[256];

static void utf8_dfa_build(void) {
    for (int b = 0; b < 256; b++) {
        uint64_t row = 0;
        int cont = b >= 0x80 && b <= 0xBF;
        for (int st = 0; st < U_NSTATES; st++) {
            int nx = U_ERR;
            switch (st) {
            case U_OK:
                if (b < 0x80) nx = U_OK;
                else if (b >= 0xC2 && b <= 0xDF) nx = U_T1;
                else if (b == 0xE0) nx = U_E0;
                else if (b == 0xED) nx = U_ED;
                else if (b >= 0xE1 && b <= 0xEF) nx = U_T2;
                else if (b == 0xF0) nx = U_F0;
                else if (b >= 0xF1 && b <= 0xF3) nx = U_T3;
                else if (b == 0xF4) nx = U_F4;
                break;
            case U_T1: if (cont) nx = U_OK; break;
            case U_T2: if (cont) nx = U_T1; break;
            case U_T3: if (cont) nx = U_T2; break;
            case U_E0: if (b >= 0xA0 && b <= 0xBF) nx = U_T1; break;  /* no overlongs */
            case U_ED: if (b >= 0x80 && b <= 0x9F) nx = U_T1; break;  /* no surrogates */
            case U_F0: if (b >= 0x90 && b <= 0xBF) nx = U_T2; break;  /* no overlongs */
            case U_F4: if (b >= 0x80 && b <= 0x8F) nx = U_T2; break;  /* <= U+10FFFF */
            }
            row |= (uint64_t)(nx * 6) << (st * 6);
        }
        utf8_dfa[b] = row;
    }
}

static int utf8_valid(const unsigned char *s, Py_ssize_t n) {
    if (utf8_dfa[0] == 0) utf8_dfa_build();  /* byte 0 leads every state but U_OK to U_ERR */
    uint64_t st = 0;
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        if (st == 0 && _mm_movemask_epi8(v) == 0) continue;  /* ASCII between characters */
        for (int k = 0; k < 16; k++) st = utf8_dfa[s[i + k]] >> (st & 63);
    }
#endif
    for (; i < n; i++) st = utf8_dfa[s[i]] >> (st & 63);
    return (st & 63) == 6 * U_OK;
}

/* A byte of valid UTF-8 copied as is: anything but control characters, '"' and '\\'. */
#define PLAIN(c) ((c) >= 0x20 && (c) != '"' && (c) != '\\')

/* The one-letter escapes of json.dumps ('\\n' ...); 0: written as \\u00XX. */
static const char SHORT_ESCAPE[128] = {
    ['"'] = '"', ['\\'] = '\\', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't', ['\b'] = 'b', ['\f'] = 'f',
};

static int put_utf8_escaped(Buf *o, const unsigned char *s, Py_ssize_t n) {
    if (!utf8_valid(s, n)) return 0;
    if (buf_reserve(o, n + 16) < 0) return -1;
    unsigned char *d = (unsigned char *)o->p + o->len;
    Py_ssize_t i = 0;
    for (;;) {
#if defined(__SSE2__)
        /* 16 bytes at a time: store all of them, then advance past the plain ones before the
           first byte to escape. JSON documents inside a text have a '"' every few bytes:
           storing first and counting after costs the same for a run of 3 as for 16. */
        const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
        const __m128i ctl = _mm_set1_epi8(0x1F);
        while (i + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            _mm_storeu_si128((__m128i *)d, v);
            /* unsigned v <= 0x1F as min(v, 0x1F) == v: bytes >= 0x80 are plain here */
            __m128i m = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
                                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
            unsigned mask = (unsigned)_mm_movemask_epi8(m);
            if (mask == 0) { i += 16; d += 16; continue; }
            unsigned k = (unsigned)__builtin_ctz(mask);
            i += k;
            d += k;
            break;
        }
#endif
        while (i < n && PLAIN(s[i])) *d++ = s[i++];  /* the tail, or without SSE2 */
        if (i >= n) break;
        unsigned char c = s[i];  /* a control character, '"' or '\\' */
        ROOM(6);
        *d++ = '\\';
        /* a table, not a switch: the switch's indirect jump was mispredicted on each '"' */
        char e = SHORT_ESCAPE[c];
        if (e) *d++ = e;
        else { *d++ = 'u'; *d++ = '0'; *d++ = '0'; *d++ = HEX[c >> 4]; *d++ = HEX[c & 15]; }
        i++;
    }
    o->len = (char *)d - o->p;
    return 1;
}

static int put_base64(Buf *o, const unsigned char *s, Py_ssize_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (buf_reserve(o, (n + 2) / 3 * 4 + 2) < 0) return -1;
    char *d = o->p + o->len;
    *d++ = '"';
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (s[i] << 16) | (s[i + 1] << 8) | s[i + 2];
        *d++ = A[v >> 18]; *d++ = A[(v >> 12) & 63]; *d++ = A[(v >> 6) & 63]; *d++ = A[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = s[i] << 16;
        *d++ = A[v >> 18]; *d++ = A[(v >> 12) & 63]; *d++ = '='; *d++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (s[i] << 16) | (s[i + 1] << 8);
        *d++ = A[v >> 18]; *d++ = A[(v >> 12) & 63]; *d++ = A[(v >> 6) & 63]; *d++ = '=';
    }
    *d++ = '"';
    o->len = d - o->p;
    return 0;
}

/* A value's JSON text from the column's Python formatter (fallback paths). */
static int put_fmt(Buf *o, const ColOp *op, PyObject *value) {
    if (value == NULL) return -1;
    PyObject *text = PyObject_CallOneArg(op->fmt, value);
    Py_DECREF(value);
    if (text == NULL) return -1;
    if (!PyUnicode_Check(text)) {
        Py_DECREF(text);
        PyErr_SetString(PyExc_TypeError, "column formatter must return str");
        return -1;
    }
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(text, &n);
    int rc = u == NULL ? -1 : put(o, u, n);
    Py_DECREF(text);
    return rc;
}

static int put_fmt_decoded(Buf *o, const ColOp *op, PyObject *bufobj, const unsigned char *b,
                           Py_ssize_t n, Py_ssize_t *pp) {
    return put_fmt(o, op, decode_value(op, bufobj, b, n, pp));
}

static int put_utf8_code(Buf *o, uint32_t cp) {
    char t[4];
    int k;
    if (cp < 0x80) { t[0] = (char)cp; k = 1; }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | (cp >> 6)); t[1] = (char)(0x80 | (cp & 63)); k = 2; }
    else if (cp < 0x10000) {
        t[0] = (char)(0xE0 | (cp >> 12)); t[1] = (char)(0x80 | ((cp >> 6) & 63));
        t[2] = (char)(0x80 | (cp & 63)); k = 3;
    } else {
        t[0] = (char)(0xF0 | (cp >> 18)); t[1] = (char)(0x80 | ((cp >> 12) & 63));
        t[2] = (char)(0x80 | ((cp >> 6) & 63)); t[3] = (char)(0x80 | (cp & 63)); k = 4;
    }
    return put(o, t, k);
}

static int put_text(Buf *o, const ColOp *op, PyObject *bufobj, const unsigned char *b,
                    Py_ssize_t n, Py_ssize_t *pp, const unsigned char *s, Py_ssize_t len) {
    switch (op->c) {
    case TXT_UTF8:
    case TXT_UTF8_OR_BYTES: {
        Py_ssize_t save = o->len;
        if (putch(o, '"') < 0) return -1;
        int ok = put_utf8_escaped(o, s, len);
        if (ok < 0) return -1;
        if (ok) return putch(o, '"');
        o->len = save;
        if (op->c == TXT_UTF8_OR_BYTES) return put_base64(o, s, len);
        return put_fmt_decoded(o, op, bufobj, b, n, pp);  /* raises the UnicodeDecodeError */
    }
    case TXT_CHARMAP: {
        Py_ssize_t save = o->len;
        if (putch(o, '"') < 0) return -1;
        for (Py_ssize_t i = 0; i < len; i++) {
            uint32_t cp = op->charmap[s[i]];
            if (cp == 0xFFFE) { o->len = save; return put_fmt_decoded(o, op, bufobj, b, n, pp); }
            if (cp < 0x80) {
                if (cp >= 0x20 && cp != '"' && cp != '\\') { if (putch(o, (char)cp) < 0) return -1; }
                else { unsigned char c = (unsigned char)cp; if (put_escaped(o, &c, 1) < 0) return -1; }
            } else if (put_utf8_code(o, cp) < 0) return -1;
        }
        return putch(o, '"');
    }
    case TXT_BYTES:
        return put_base64(o, s, len);
    default:
        return put_fmt_decoded(o, op, bufobj, b, n, pp);
    }
}

static int put_uint(Buf *o, uint64_t v) {
    char t[24];
    int k = 24;
    do { t[--k] = (char)('0' + v % 10); v /= 10; } while (v);
    return put(o, t + k, 24 - k);
}

static int put_int(Buf *o, int64_t v) {
    if (v >= 0) return put_uint(o, (uint64_t)v);
    if (putch(o, '-') < 0) return -1;
    return put_uint(o, (uint64_t)0 - (uint64_t)v);
}

static inline char *digits2(char *d, int v) { d[0] = (char)('0' + v / 10 % 10); d[1] = (char)('0' + v % 10); return d + 2; }

/* repr(float) of normal doubles without dtoa's bignum arithmetic: Schubfach (R. Giulietti,
   "The Schubfach way to render doubles", 2020) finds the shortest decimal that reads back
   as the double, the closest one if several (ties to even): what repr() prints. It needs
   10^k as 126-bit values, g = floor(10^k * 2^(125 - floor(log2 10^k))) + 1 for k in
   [G_KMIN, G_KMAX], computed exactly by rowcodec.py (Python integers) and handed over with
   set_pow10(); until then, and for zeros, subnormals, inf and nan, dtoa does it. */
#define G_KMIN (-292)
#define G_KMAX 324
#define MASK63 0x7FFFFFFFFFFFFFFFULL
static uint64_t *g_pow10;  /* (g >> 63, g & MASK63) per k */

static inline int flog10pow2(int e) { return (int)(((int64_t)e * 661971961083LL) >> 41); }
static inline int flog10threequarterspow2(int e) { return (int)(((int64_t)e * 661971961083LL - 274743187321LL) >> 41); }
static inline int flog2pow10(int e) { return (int)(((int64_t)e * 913124641741LL) >> 38); }
#if defined(__SIZEOF_INT128__)
static inline uint64_t mulhi64(uint64_t a, uint64_t b) { return (uint64_t)(((unsigned __int128)a * b) >> 64); }
#else  /* no 128-bit integers: the high half from four 32-bit products */
static inline uint64_t mulhi64(uint64_t a, uint64_t b) {
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}
#endif

/* g * cp / 2^127 rounded to odd (the low bit says "not exact") */
static inline uint64_t rop(uint64_t g1, uint64_t g0, uint64_t cp) {
    uint64_t x1 = mulhi64(g0, cp), y0 = g1 * cp, y1 = mulhi64(g1, cp);
    uint64_t z = (y0 >> 1) + x1;
    return (y1 + (z >> 63)) | (((z & MASK63) + MASK63) >> 63);
}

/* The shortest decimal f * 10^e in the rounding interval of c * 2^q (c a normal significand). */
static void schubfach(int q, uint64_t c, int symmetric, uint64_t *f, int *e) {
    uint64_t out = c & 1, cb = c << 2, cbr = cb + 2, cbl;
    int k;
    if (symmetric) { cbl = cb - 2; k = flog10pow2(q); }
    else { cbl = cb - 1; k = flog10threequarterspow2(q); }
    int h = q + flog2pow10(-k) + 2;
    const uint64_t *g = g_pow10 + 2 * (-k - G_KMIN);
    uint64_t vb = rop(g[0], g[1], cb << h), vbl = rop(g[0], g[1], cbl << h);
    uint64_t vbr = rop(g[0], g[1], cbr << h);
    uint64_t s = vb >> 2;
    if (s >= 100) {  /* one digit fewer: the interval is under 10 units wide, so at most one */
        uint64_t sp10 = s / 10 * 10, tp10 = sp10 + 10;
        int upin = vbl + out <= sp10 << 2, wpin = (tp10 << 2) + out <= vbr;
        if (upin != wpin) { *f = upin ? sp10 : tp10; *e = k; return; }
    }
    uint64_t t = s + 1;
    int uin = vbl + out <= s << 2, win = (t << 2) + out <= vbr;
    if (uin != win) { *f = uin ? s : t; *e = k; return; }
    int64_t cmp = (int64_t)(vb - ((s + t) << 1));  /* both in: the closer, ties to even */
    *f = cmp < 0 || (cmp == 0 && (s & 1) == 0) ? s : t;
    *e = k;
}

/* f * 10^e as repr() writes it: fixed notation for exponents -4..15 (".0" on integers),
   else d.ddde+XX. */
static int put_shortest(Buf *o, int neg, uint64_t f, int e) {
    char dig[24], t[48], *d = t;
    int n = 0;
    while (f % 10 == 0) { f /= 10; e++; }
    do { dig[n++] = (char)('0' + f % 10); f /= 10; } while (f);
    for (int i = 0; i < n / 2; i++) { char x = dig[i]; dig[i] = dig[n - 1 - i]; dig[n - 1 - i] = x; }
    int decpt = n + e;  /* the value is 0.DIGITS * 10^decpt */
    if (neg) *d++ = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            *d++ = '0'; *d++ = '.';
            for (int i = 0; i < -decpt; i++) *d++ = '0';
            memcpy(d, dig, n); d += n;
        } else if (decpt >= n) {
            memcpy(d, dig, n); d += n;
            for (int i = n; i < decpt; i++) *d++ = '0';
            *d++ = '.'; *d++ = '0';
        } else {
            memcpy(d, dig, decpt); d += decpt;
            *d++ = '.';
            memcpy(d, dig + decpt, n - decpt); d += n - decpt;
        }
    } else {
        int x = decpt - 1;
        *d++ = dig[0];
        if (n > 1) { *d++ = '.'; memcpy(d, dig + 1, n - 1); d += n - 1; }
        *d++ = 'e';
        *d++ = x < 0 ? '-' : '+';
        if (x < 0) x = -x;
        if (x >= 100) *d++ = (char)('0' + x / 100);
        *d++ = (char)('0' + x / 10 % 10);
        *d++ = (char)('0' + x % 10);
    }
    return put(o, t, d - t);
}

static int put_repr(Buf *o, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    int bq = (int)((bits >> 52) & 0x7FF);
    if (g_pow10 != NULL && bq != 0 && bq != 0x7FF) {  /* normal */
        uint64_t c = (1ULL << 52) | (bits & ((1ULL << 52) - 1)), f;
        int q = bq - 1075, mq = -q, e;
        if (mq > 0 && mq < 53 && ((c >> mq) << mq) == c) { f = c >> mq; e = 0; }  /* an integer */
        else schubfach(q, c, (bits & ((1ULL << 52) - 1)) != 0 || bq == 1, &f, &e);
        return put_shortest(o, (int)(bits >> 63), f, e);
    }
    char *r = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (r == NULL) return -1;
    int rc = put(o, r, (Py_ssize_t)strlen(r));
    PyMem_Free(r);
    return rc;
}

/* set_pow10(table): the g values of put_repr, 16 bytes per k from G_KMIN (see rowcodec.py) */
static PyObject *set_pow10(PyObject *mod, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (view.len != (G_KMAX - G_KMIN + 1) * 16) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "pow10 table must be %d bytes", (G_KMAX - G_KMIN + 1) * 16);
        return NULL;
    }
    uint64_t *table = PyMem_Malloc(view.len);
    if (table == NULL) { PyBuffer_Release(&view); return PyErr_NoMemory(); }
    memcpy(table, view.buf, view.len);
    PyBuffer_Release(&view);
    PyMem_Free(g_pow10);
    g_pow10 = table;
    Py_RETURN_NONE;
}

/* changes.float32_text: the shortest %g (6..9 digits) that reads back as the same float32 */
static int put_float32(Buf *o, float f) {
    double d = f;
    if (isfinite(d)) {
        for (int digits = 6; digits <= 9; digits++) {
            char t[64];
            snprintf(t, sizeof t, "%.*g", digits, d);
            double cand = strtod(t, NULL);
            float back = (float)cand;
            if (memcmp(&back, &f, 4) == 0) return put_repr(o, cand);
        }
    }
    return put_repr(o, d);
}

/* The text of recently written FLOAT/DOUBLE values, keyed by their bits. A shortest repr
   costs about half a microsecond (dtoa's bignum arithmetic; FLOAT also tries %g widths), and
   images repeat values: an update's before and after share every unchanged column, a delete
   repeats what was inserted shortly before. The text is a function of the bits alone, so a
   hit writes exactly what formatting would. Direct-mapped, one slot per hash; the GIL guards it. */
typedef struct { uint64_t bits; unsigned char kind, len; char text[30]; } ReprSlot;  /* kind 0: empty */
#define REPR_SLOTS 1024
static ReprSlot repr_cache[REPR_SLOTS];

static int put_float_cached(Buf *o, uint64_t bits, int kind, double d, float f) {
    ReprSlot *slot = &repr_cache[((bits + (uint64_t)kind) * 0x9E3779B97F4A7C15ULL) >> 54];
    if (slot->kind == kind && slot->bits == bits) return put(o, slot->text, slot->len);
    Py_ssize_t at = o->len;
    int rc = kind == 1 ? put_repr(o, d) : put_float32(o, f);
    if (rc == 0 && o->len - at <= (Py_ssize_t)sizeof slot->text) {
        memcpy(slot->text, o->p + at, o->len - at);
        slot->len = (unsigned char)(o->len - at);
        slot->bits = bits;
        slot->kind = (unsigned char)kind;
    }
    return rc;
}

static int put_decimal(Buf *o, const ColOp *op, const unsigned char *s) {
    int intg = op->a - op->b, scale = op->b, neg;
    char digits[100];
    int nd = decimal_digits(op, s, digits, &neg);
    if (nd < 0) return -1;
    int zero = 1;
    for (int i = 0; i < nd; i++) if (digits[i] != '0') { zero = 0; break; }
    int first = 0;
    while (first < intg - 1 && digits[first] == '0') first++;
    char text[128];
    int len = 0;
    text[len++] = '"';
    if (neg && !zero) text[len++] = '-';
    if (intg == 0) text[len++] = '0';
    else { memcpy(text + len, digits + first, intg - first); len += intg - first; }
    if (scale) { text[len++] = '.'; memcpy(text + len, digits + intg, scale); len += scale; }
    text[len++] = '"';
    return put(o, text, len);
}

static int put_datetime(Buf *o, const Civil *c, int us, int fsp, int utc) {
    char t[48], *d = t;
    *d++ = '"';
    d = digits2(digits2(d, (int)(c->Y / 100)), (int)(c->Y % 100));
    *d++ = '-'; d = digits2(d, (int)c->M); *d++ = '-'; d = digits2(d, (int)c->D);
    *d++ = 'T'; d = digits2(d, c->h); *d++ = ':'; d = digits2(d, c->mi); *d++ = ':';
    d = digits2(d, c->s);
    if (fsp) {
        char f[6];
        for (int k = 5; k >= 0; k--) { f[k] = (char)('0' + us % 10); us /= 10; }
        *d++ = '.';
        memcpy(d, f, fsp);
        d += fsp;
    }
    if (utc) *d++ = 'Z';
    *d++ = '"';
    return put(o, t, d - t);
}

/* One present, non-NULL value at *pp as JSON text; advances *pp. */
static int encode_value(const ColOp *op, PyObject *bufobj, const unsigned char *b, Py_ssize_t n,
                        Py_ssize_t *pp, Buf *o) {
    Py_ssize_t p = *pp;
    switch (op->op) {
    case OP_INT: {
        int k = op->a;
        NEEDI(k);
        uint64_t u = le(b + p, k);
        *pp = p + k;
        if (op->b) return put_uint(o, u);
        if (k == 8) return put_int(o, (int64_t)u);
        uint64_t sign = 1ULL << (8 * k - 1);
        return put_int(o, (int64_t)(u ^ sign) - (int64_t)sign);
    }
    case OP_FLOAT: { float f; uint32_t u; NEEDI(4); memcpy(&f, b + p, 4); memcpy(&u, b + p, 4); *pp = p + 4;
        return put_float_cached(o, u, 2, 0.0, f); }
    case OP_DOUBLE: { double d; uint64_t u; NEEDI(8); memcpy(&d, b + p, 8); memcpy(&u, b + p, 8); *pp = p + 8;
        return put_float_cached(o, u, 1, d, 0.0f); }
    case OP_YEAR: { NEEDI(1); int y = b[p]; *pp = p + 1; return put_int(o, y ? 1900 + y : 0); }
    case OP_BIT: { NEEDI(op->a); uint64_t v = be(b + p, op->a); *pp = p + op->a; return put_uint(o, v); }
    case OP_NONE: return put(o, "null", 4);
    case OP_DECIMAL: {
        int intg = op->a - op->b;
        int size = DIG2BYTES[intg % 9] + 4 * (intg / 9 + op->b / 9) + DIG2BYTES[op->b % 9];
        NEEDI(size);
        if (put_decimal(o, op, b + p) < 0) return -1;
        *pp = p + size;
        return 0;
    }
    case OP_DATE: {
        NEEDI(3);
        long x = (long)le(b + p, 3);
        long y = x >> 9, m = (x >> 5) & 15, d = x & 31;
        if (!valid_date(y, m, d)) return put_fmt_decoded(o, op, bufobj, b, n, pp);
        char t[16], *e = t;
        *e++ = '"';
        e = digits2(digits2(e, (int)(y / 100)), (int)(y % 100));
        *e++ = '-'; e = digits2(e, (int)m); *e++ = '-'; e = digits2(e, (int)d);
        *e++ = '"';
        *pp = p + 3;
        return put(o, t, e - t);
    }
    case OP_DATETIME2: {
        int fsp = op->a, fb = FRAC_BYTES[fsp];
        NEEDI(5 + fb);
        int us = frac_us(b + p + 5, fsp);
        Civil c = datetime2_fields(be(b + p, 5), us);
        if (!c.ok) return put_fmt_decoded(o, op, bufobj, b, n, pp);
        *pp = p + 5 + fb;
        return put_datetime(o, &c, us, fsp, 0);
    }
    case OP_TIMESTAMP2: {
        int fsp = op->a, fb = FRAC_BYTES[fsp];
        NEEDI(4 + fb);
        uint64_t secs = be(b + p, 4);
        int us = frac_us(b + p + 4, fsp);
        if (!secs || us >= 1000000) return put_fmt_decoded(o, op, bufobj, b, n, pp);
        Civil c = epoch_fields(secs);
        *pp = p + 4 + fb;
        return put_datetime(o, &c, us, fsp, 1);
    }
    case OP_TIME2: {
        int fsp = op->a, size = 3 + FRAC_BYTES[fsp];
        NEEDI(size);
        int neg;
        int64_t hms, micro;
        time2_parts(b + p, fsp, &neg, &hms, &micro);
        if (micro > 999999) {  /* not a valid TIME: the Python formatter's digits */
            PyObject *v = decode_time2(b + p, fsp);
            if (v == NULL) return -1;
            *pp = p + size;
            return put_fmt(o, op, v);
        }
        *pp = p + size;
        char t[40], *d = t;
        *d++ = '"';
        if (neg) *d++ = '-';
        int hours = (int)((hms >> 12) & 0x3FF);
        if (hours >= 100) { if (hours >= 1000) *d++ = (char)('0' + hours / 1000); *d++ = (char)('0' + hours / 100 % 10); }
        d = digits2(d, hours % 100);
        *d++ = ':'; d = digits2(d, (int)((hms >> 6) & 0x3F)); *d++ = ':'; d = digits2(d, (int)(hms & 0x3F));
        if (fsp) {
            char f[6];
            for (int k = 5; k >= 0; k--) { f[k] = (char)('0' + micro % 10); micro /= 10; }
            *d++ = '.';
            memcpy(d, f, fsp);
            d += fsp;
        }
        *d++ = '"';
        return put(o, t, d - t);
    }
    case OP_STR: {
        NEEDI(op->a);
        Py_ssize_t len = (Py_ssize_t)le(b + p, op->a);
        NEEDI(op->a + len);
        const unsigned char *s = b + p + op->a;
        if (op->b && len < op->b) {  /* BINARY(n): the value has its trailing zero bytes */
            unsigned char *padded = PyMem_Malloc(op->b);
            if (padded == NULL) { PyErr_NoMemory(); return -1; }
            memcpy(padded, s, len);
            memset(padded + len, 0, op->b - len);
            int rc = put_base64(o, padded, op->b);
            PyMem_Free(padded);
            if (rc == 0) *pp = p + op->a + len;
            return rc;
        }
        Py_ssize_t save = o->len;
        int rc = put_text(o, op, bufobj, b, n, pp, s, len);
        if (rc == 0 && *pp == p) *pp = p + op->a + len;  /* written directly */
        else if (rc < 0) o->len = save;
        return rc;
    }
    case OP_ENUM: {
        NEEDI(op->a);
        uint64_t idx = le(b + p, op->a);
        if (op->jlabels == NULL || op->jlabels == Py_None) return put_fmt_decoded(o, op, bufobj, b, n, pp);
        Py_ssize_t cnt = PyTuple_GET_SIZE(op->jlabels);
        if (idx == 0) { *pp = p + op->a; return put(o, "\"\"", 2); }
        if (idx > (uint64_t)cnt) return put_fmt_decoded(o, op, bufobj, b, n, pp);  /* raises */
        PyObject *lab = PyTuple_GET_ITEM(op->jlabels, idx - 1);
        *pp = p + op->a;
        if (putch(o, '"') < 0 || put(o, PyBytes_AS_STRING(lab), PyBytes_GET_SIZE(lab)) < 0) return -1;
        return putch(o, '"');
    }
    case OP_SET: {
        NEEDI(op->a);
        uint64_t mask = le(b + p, op->a);
        if (op->jlabels == NULL || op->jlabels == Py_None) return put_fmt_decoded(o, op, bufobj, b, n, pp);
        Py_ssize_t cnt = PyTuple_GET_SIZE(op->jlabels);
        if (cnt < 64 && (mask >> cnt)) return put_fmt_decoded(o, op, bufobj, b, n, pp);  /* raises */
        *pp = p + op->a;
        if (putch(o, '"') < 0) return -1;
        int first = 1;
        for (Py_ssize_t i = 0; i < cnt && i < 64; i++) {
            if (!((mask >> i) & 1)) continue;
            if (!first && putch(o, ',') < 0) return -1;
            first = 0;
            PyObject *lab = PyTuple_GET_ITEM(op->jlabels, i);
            if (put(o, PyBytes_AS_STRING(lab), PyBytes_GET_SIZE(lab)) < 0) return -1;
        }
        return putch(o, '"');
    }
    default:
        return put_fmt_decoded(o, op, bufobj, b, n, pp);
    }
}

/* One row image at *pp -> the JSON object text as bytes; advances *pp. */
static PyObject *encode_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                            Py_ssize_t n, Py_ssize_t *pp) {
    Py_ssize_t p = *pp, nb = (self->npresent + 7) / 8;
    NEED(nb);
    const unsigned char *nulls = b + p;
    p += nb;
    Buf *o = &self->out;
    o->len = 0;
    if (putch(o, '{') < 0) return NULL;
    Py_ssize_t k = 0;
    int first = 1;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        const ColOp *op = &self->ops[i];
        if (op->op == OP_ABSENT) continue;
        if (!first && putch(o, ',') < 0) return NULL;
        first = 0;
        if (put(o, PyBytes_AS_STRING(op->key), PyBytes_GET_SIZE(op->key)) < 0) return NULL;
        if (nulls[k >> 3] & (1 << (k & 7))) { if (put(o, "null", 4) < 0) return NULL; }
        else if (encode_value(op, bufobj, b, n, &p, o) < 0) return NULL;
        k++;
    }
    if (putch(o, '}') < 0) return NULL;
    *pp = p;
    PyObject *img = PyBytes_FromStringAndSize(o->p, o->len);
    if (o->cap > (8 << 20)) {  /* one huge value must not keep its buffer for good */
        PyMem_Free(o->p);
        o->p = NULL;
        o->cap = o->len = 0;
    }
    return img;
}

static PyObject *RowDecoder_json(RowDecoder *self, PyObject *args) {
    PyObject *bufobj;
    Py_ssize_t p;
    Py_buffer view;
    if (!self->json) { PyErr_SetString(PyExc_TypeError, "built without JSON formatters"); return NULL; }
    if (!PyArg_ParseTuple(args, "On", &bufobj, &p)) return NULL;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (p < 0) p = 0;
    PyObject *img = encode_row(self, bufobj, view.buf, view.len, &p);
    PyBuffer_Release(&view);
    if (img == NULL) return NULL;
    return Py_BuildValue("(Nn)", img, p);
}

static PyObject *RowDecoder_call(RowDecoder *self, PyObject *args, PyObject *kw) {
    PyObject *bufobj;
    Py_ssize_t p;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "On", &bufobj, &p)) return NULL;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (p < 0) p = 0;
    PyObject *row = decode_row(self, bufobj, view.buf, view.len, &p);
    PyBuffer_Release(&view);
    if (row == NULL) return NULL;
    PyObject *res = Py_BuildValue("(Nn)", row, p);
    return res;
}

typedef PyObject *(*row_fn)(RowDecoder *, PyObject *, const unsigned char *, Py_ssize_t, Py_ssize_t *);

/* many()/json_many(): every row image in [pos, end) appended to `out` (with `after`:
   (before, after) pairs of an update), as value tuples or as JSON bytes. */
static PyObject *run_many(RowDecoder *self, PyObject *args, int json) {
    PyObject *bufobj, *out, *after = Py_None;
    Py_ssize_t p, end;
    Py_buffer view;
    row_fn one = json ? encode_row : decode_row;
    if (json && !self->json) { PyErr_SetString(PyExc_TypeError, "built without JSON formatters"); return NULL; }
    if (!PyArg_ParseTuple(args, "OnnO!|O", &bufobj, &p, &end, &PyList_Type, &out, &after)) return NULL;
    RowDecoder *adec = NULL;
    if (after != Py_None) {
        if (Py_TYPE(after) != Py_TYPE((PyObject *)self) || (json && !((RowDecoder *)after)->json)) {
            PyErr_SetString(PyExc_TypeError, "after must be a RowDecoder (with JSON formatters for json_many)");
            return NULL;
        }
        adec = (RowDecoder *)after;
    }
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    if (p < 0) p = 0;
    const unsigned char *b = view.buf;
    if (self->npresent == 0 && p < end) {
        PyErr_Format(PyExc_ValueError, "row image with no columns but %zd bytes left", end - p);
        goto fail;
    }
    while (p < end) {
        PyObject *row = one(self, bufobj, b, end, &p);
        if (row == NULL) goto fail;
        if (adec != NULL) {
            PyObject *arow = one(adec, bufobj, b, end, &p);
            if (arow == NULL) { Py_DECREF(row); goto fail; }
            PyObject *pair = PyTuple_Pack(2, row, arow);
            Py_DECREF(row);
            Py_DECREF(arow);
            if (pair == NULL) goto fail;
            row = pair;
        }
        int rc = PyList_Append(out, row);
        Py_DECREF(row);
        if (rc < 0) goto fail;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(p);
fail:
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *RowDecoder_many(RowDecoder *self, PyObject *args) { return run_many(self, args, 0); }

static PyObject *RowDecoder_json_many(RowDecoder *self, PyObject *args) { return run_many(self, args, 1); }

/* ---- counting rows without decoding them ----
 * A replica that filters tables still has to know how many rows each skipped event holds
 * (a resume inside a transaction skips a count of rows that must not depend on the filter);
 * walking the images by their widths costs a fraction of building their values. */
static int skip_value(const ColOp *op, PyObject *bufobj, const unsigned char *b, Py_ssize_t n,
                      Py_ssize_t *pp) {
    Py_ssize_t p = *pp, len;
    switch (op->op) {
    case OP_INT: case OP_ENUM: case OP_SET: case OP_BIT: NEEDI(op->a); p += op->a; break;
    case OP_FLOAT: NEEDI(4); p += 4; break;
    case OP_DOUBLE: NEEDI(8); p += 8; break;
    case OP_YEAR: NEEDI(1); p += 1; break;
    case OP_DATE: NEEDI(3); p += 3; break;
    case OP_DATETIME2: NEEDI(5 + FRAC_BYTES[op->a]); p += 5 + FRAC_BYTES[op->a]; break;
    case OP_TIMESTAMP2: NEEDI(4 + FRAC_BYTES[op->a]); p += 4 + FRAC_BYTES[op->a]; break;
    case OP_TIME2: NEEDI(3 + FRAC_BYTES[op->a]); p += 3 + FRAC_BYTES[op->a]; break;
    case OP_DECIMAL: {
        int intg = op->a - op->b;
        int size = DIG2BYTES[intg % 9] + 4 * (intg / 9 + op->b / 9) + DIG2BYTES[op->b % 9];
        NEEDI(size);
        p += size;
        break;
    }
    case OP_STR: case OP_LENCALL:
        NEEDI(op->a);
        len = (Py_ssize_t)le(b + p, op->a);
        p += op->a;
        NEEDI(len);
        p += len;
        break;
    case OP_NONE: break;
    default: {  /* OP_POSCALL: only the Python decoder knows the width */
        PyObject *v = decode_value(op, bufobj, b, n, &p);
        if (v == NULL) return -1;
        Py_DECREF(v);
    }
    }
    *pp = p;
    return 0;
}

static int skip_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b, Py_ssize_t n,
                    Py_ssize_t *pp) {
    Py_ssize_t p = *pp, nb = (self->npresent + 7) / 8, k = 0;
    NEEDI(nb);
    const unsigned char *nulls = b + p;
    p += nb;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        const ColOp *op = &self->ops[i];
        if (op->op == OP_ABSENT) continue;
        if (!(nulls[k >> 3] & (1 << (k & 7))) && skip_value(op, bufobj, b, n, &p) < 0) return -1;
        k++;
    }
    *pp = p;
    return 0;
}

/* count(buf, pos, end[, after]) -> (rows, pos): the row images (pairs with `after`) in
   [pos, end), walked but not decoded. */
static PyObject *RowDecoder_count(RowDecoder *self, PyObject *args) {
    PyObject *bufobj, *after = Py_None;
    Py_ssize_t p, end, rows = 0;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "Onn|O", &bufobj, &p, &end, &after)) return NULL;
    if (after != Py_None && Py_TYPE(after) != Py_TYPE((PyObject *)self)) {
        PyErr_SetString(PyExc_TypeError, "after must be a RowDecoder");
        return NULL;
    }
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    if (p < 0) p = 0;
    const unsigned char *b = view.buf;
    if (self->npresent == 0 && p < end) {
        PyErr_Format(PyExc_ValueError, "row image with no columns but %zd bytes left", end - p);
        goto fail;
    }
    while (p < end) {
        if (skip_row(self, bufobj, b, end, &p) < 0) goto fail;
        if (after != Py_None && skip_row((RowDecoder *)after, bufobj, b, end, &p) < 0) goto fail;
        rows++;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nn", rows, p);
fail:
    PyBuffer_Release(&view);
    return NULL;
}

/* image_buffers(images, allocate) -> (validity or None, offsets, data): the three buffers of
   an Arrow string array of `images` (a list of bytes, None for a null), for arrow.py.
   The data goes into allocate(total) (pyarrow.allocate_buffer): Arrow's memory pool reuses
   its pages, where a fresh bytes.join of a 64 MB batch pays a page fault per 4 KB. One pass
   to size, one memcpy per image; no Python object per row. The bytes come from the C writer
   or str.encode(), so they are UTF-8 already. */
static PyObject *image_buffers(PyObject *mod, PyObject *args) {
    PyObject *items, *allocate;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &items, &allocate)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items), nulls = 0, total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(items, i);
        if (v == Py_None) { nulls++; continue; }
        if (!PyBytes_Check(v)) {
            PyErr_Format(PyExc_TypeError, "row images must be bytes or None, not %.100s",
                         Py_TYPE(v)->tp_name);
            return NULL;
        }
        total += PyBytes_GET_SIZE(v);
        if (total >= ((Py_ssize_t)1 << 31)) {  /* Arrow's string offsets are int32 */
            PyErr_SetString(PyExc_ValueError,
                            "a CDC batch holds 2 GiB of row images or more: lower its size");
            return NULL;
        }
    }
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 4);
    PyObject *validity = nulls ? PyBytes_FromStringAndSize(NULL, (n + 7) / 8) : Py_NewRef(Py_None);
    PyObject *data = offsets && validity ? PyObject_CallFunction(allocate, "n", total) : NULL;
    Py_buffer view = {0};
    if (data == NULL || PyObject_GetBuffer(data, &view, PyBUF_WRITABLE) < 0) goto fail;
    /* allocate() ran Python code: the list is checked again, not trusted */
    if (view.len < total || PyList_GET_SIZE(items) != n) goto changed;
    int32_t *off = (int32_t *)PyBytes_AS_STRING(offsets);
    unsigned char *bits = nulls ? (unsigned char *)PyBytes_AS_STRING(validity) : NULL;
    if (bits) memset(bits, 0, (n + 7) / 8);
    char *d = view.buf;
    Py_ssize_t at = 0;
    off[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(items, i);
        if (v != Py_None) {
            if (!PyBytes_Check(v) || at + PyBytes_GET_SIZE(v) > total) goto changed;
            memcpy(d + at, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
            at += PyBytes_GET_SIZE(v);
            if (bits) bits[i >> 3] |= (unsigned char)(1 << (i & 7));
        }
        off[i + 1] = (int32_t)at;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(NNN)", validity, offsets, data);
changed:
    PyErr_SetString(PyExc_RuntimeError, "row images changed while their buffers were built");
fail:
    if (view.obj) PyBuffer_Release(&view);
    Py_XDECREF(offsets);
    Py_XDECREF(validity);
    Py_XDECREF(data);
    return NULL;
}

static void free_op(ColOp *op) {
    Py_XDECREF(op->obj);
    Py_XDECREF(op->fmt);
    Py_XDECREF(op->key);
    Py_XDECREF(op->jlabels);
    PyMem_Free(op->charmap);
}

static void RowDecoder_dealloc(RowDecoder *self) {
    if (self->ops != NULL) {
        for (Py_ssize_t i = 0; i < self->ncols; i++) free_op(&self->ops[i]);
        PyMem_Free(self->ops);
    }
    PyMem_Free(self->out.p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* RowDecoder(ops): ops is a sequence of (op, a, b, c, obj) per column of the table. */
static int RowDecoder_init(RowDecoder *self, PyObject *args, PyObject *kw) {
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "O", &seq)) return -1;
    PyObject *fast = PySequence_Fast(seq, "ops must be a sequence");
    if (fast == NULL) return -1;
    Py_ssize_t ncols = PySequence_Fast_GET_SIZE(fast);
    ColOp *ops = PyMem_Calloc(ncols ? ncols : 1, sizeof(ColOp));
    if (ops == NULL) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    Py_ssize_t npresent = 0;
    int json = 0;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i), *obj, *fmt = NULL, *key = NULL, *jl = NULL;
        ColOp *op = &ops[i];
        if (!PyArg_ParseTuple(item, "iiiiO|OSO", &op->op, &op->a, &op->b, &op->c, &obj, &fmt, &key, &jl))
            goto fail;
        Py_INCREF(obj);
        op->obj = obj;
        if (i == 0) json = fmt != NULL;
        if ((fmt != NULL) != json || (fmt != NULL && key == NULL)) {
            PyErr_SetString(PyExc_TypeError, "give (fmt, key[, labels]) for every column or none");
            goto fail;
        }
        if (fmt != NULL) {
            Py_INCREF(fmt); op->fmt = fmt;
            Py_INCREF(key); op->key = key;
            if (jl != NULL && jl != Py_None) {
                if (!PyTuple_Check(jl)) { PyErr_SetString(PyExc_TypeError, "labels must be a tuple"); goto fail; }
                for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(jl); j++)
                    if (!PyBytes_Check(PyTuple_GET_ITEM(jl, j))) {
                        PyErr_SetString(PyExc_TypeError, "JSON labels must be bytes");
                        goto fail;
                    }
                Py_INCREF(jl); op->jlabels = jl;
            }
        }
        if (op->op == OP_STR && op->c == TXT_CHARMAP) {
            if (!PyUnicode_Check(obj) || PyUnicode_GET_LENGTH(obj) != 256) {
                PyErr_SetString(PyExc_TypeError, "charmap must be a 256-character str");
                goto fail;
            }
            op->charmap = PyMem_Malloc(256 * sizeof(uint32_t));
            if (op->charmap == NULL) { PyErr_NoMemory(); goto fail; }
            for (int j = 0; j < 256; j++) op->charmap[j] = PyUnicode_ReadChar(obj, j);
        }
        if (op->op < OP_ABSENT || op->op > OP_POSCALL) {
            PyErr_Format(PyExc_ValueError, "unknown column op %d", op->op);
            goto fail;
        }
        if ((op->op == OP_INT || op->op == OP_BIT || op->op == OP_ENUM || op->op == OP_SET)
            && (op->a < 1 || op->a > 8)) {
            PyErr_Format(PyExc_ValueError, "column %zd: width %d out of range", i, op->a);
            goto fail;
        }
        if ((op->op == OP_STR || op->op == OP_LENCALL) && (op->a < 1 || op->a > 4)) {
            PyErr_Format(PyExc_ValueError, "column %zd: length prefix %d out of range", i, op->a);
            goto fail;
        }
        if ((op->op == OP_DATETIME2 || op->op == OP_TIMESTAMP2 || op->op == OP_TIME2)
            && (op->a < 0 || op->a > 6)) {
            PyErr_Format(PyExc_ValueError, "column %zd: fsp %d out of range", i, op->a);
            goto fail;
        }
        if (op->op == OP_DECIMAL && (op->a < 1 || op->a > 65 || op->b < 0 || op->b > op->a || op->b > 38)) {
            PyErr_Format(g_decode_error ? g_decode_error : PyExc_ValueError,
                         "invalid DECIMAL(%d,%d) metadata", op->a, op->b);
            goto fail;
        }
        if ((op->op == OP_ENUM || op->op == OP_SET) && obj != Py_None && !PyTuple_Check(obj)) {
            PyErr_SetString(PyExc_TypeError, "ENUM/SET labels must be a tuple or None");
            goto fail;
        }
        if (op->op == OP_STR && op->c == TXT_CODEC) {
            if (!PyUnicode_Check(obj)) { PyErr_SetString(PyExc_TypeError, "codec must be a str"); goto fail; }
            op->codec = PyUnicode_AsUTF8(obj);
            if (op->codec == NULL) goto fail;
        }
        if (op->op != OP_ABSENT) npresent++;
    }
    Py_DECREF(fast);
    self->ops = ops;
    self->ncols = ncols;
    self->npresent = npresent;
    self->json = json;
    return 0;
fail:
    for (Py_ssize_t i = 0; i < ncols; i++) free_op(&ops[i]);
    PyMem_Free(ops);
    Py_DECREF(fast);
    return -1;
}

static PyMethodDef RowDecoder_methods[] = {
    {"many", (PyCFunction)RowDecoder_many, METH_VARARGS,
     "many(buf, pos, end, out[, after]) -> pos: append each row image in [pos, end) to out "
     "(with after: (before, after) pairs of an update)."},
    {"json", (PyCFunction)RowDecoder_json, METH_VARARGS,
     "json(buf, pos) -> (image as JSON bytes, pos) (decoders built with formatters only)."},
    {"json_many", (PyCFunction)RowDecoder_json_many, METH_VARARGS,
     "json_many(buf, pos, end, out[, after]) -> pos: like many(), images as JSON bytes."},
    {"count", (PyCFunction)RowDecoder_count, METH_VARARGS,
     "count(buf, pos, end[, after]) -> (rows, pos): row images walked, not decoded."},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject RowDecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake.binlog.columns._speedups.RowDecoder",
    .tp_basicsize = sizeof(RowDecoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled row-image decoder for one table shape: decoder(buf, pos) -> (row, pos).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RowDecoder_init,
    .tp_dealloc = (destructor)RowDecoder_dealloc,
    .tp_call = (ternaryfunc)RowDecoder_call,
    .tp_methods = RowDecoder_methods,
};

static PyObject *configure(PyObject *mod, PyObject *args) {
    PyObject *absent, *decimal, *mysqltime, *decode_error, *date_fb, *dt2_fb, *ts2_fb;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &absent, &decimal, &mysqltime, &decode_error,
                          &date_fb, &dt2_fb, &ts2_fb)) return NULL;
    if (!PyType_Check(mysqltime)) {
        PyErr_SetString(PyExc_TypeError, "MySQLTime must be a class");
        return NULL;
    }
#define SET(g, v) do { Py_INCREF(v); Py_XSETREF(g, v); } while (0)
    SET(g_absent, absent); SET(g_decimal, decimal); SET(g_mysqltime, mysqltime);
    SET(g_decode_error, decode_error); SET(g_date_fb, date_fb); SET(g_dt2_fb, dt2_fb);
    SET(g_ts2_fb, ts2_fb);
#undef SET
    Py_RETURN_NONE;
}

/* ---- change records: rows -> record objects without running __init__ ----
 * Why: binlake makes one record per row of the binlog, and calling a Python __init__ costs
 * about a microsecond each, more than decoding a narrow row. The record class stays a plain
 * Python class with __slots__ (its methods and properties are Python); here its instances
 * are allocated and their slots filled directly, at the offsets its own member descriptors
 * give (checked once by record_class()). */
#define REC_MAX_SLOTS 32
static PyTypeObject *g_rec_type;
static Py_ssize_t g_rec_nslots, g_rec_off[REC_MAX_SLOTS];
static Py_ssize_t g_rec_before = -1, g_rec_after = -1, g_rec_row = -1;

/* Offsets of `names`, which must be exactly the object slots of the class and its bases
   (so no instance is ever left with an empty slot); -1 with TypeError otherwise. */
static int slot_offsets(PyTypeObject *tp, PyObject *names, Py_ssize_t *off) {
    Py_ssize_t n = PyTuple_GET_SIZE(names), total = 0;
    if (n > REC_MAX_SLOTS || tp->tp_dictoffset != 0 || tp->tp_itemsize != 0
        || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_mro == NULL) {
        PyErr_SetString(PyExc_TypeError, "expected a Python class with __slots__ only");
        return -1;
    }
    PyObject *mro = tp->tp_mro;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(mro); k++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, k);
        PyObject *key, *d;
        Py_ssize_t it = 0;
        while (base->tp_dict && PyDict_Next(base->tp_dict, &it, &key, &d))
            if (Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyDescrObject *)d)->d_type == base
                && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX) total++;
    }
    if (total != n) {
        PyErr_Format(PyExc_TypeError, "%zd names given for %zd slots of %s", n, total, tp->tp_name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *d = PyUnicode_Check(name) ? _PyType_Lookup(tp, name) : NULL;  /* borrowed */
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)
            || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "%R is not an object slot of %s", name, tp->tp_name);
            return -1;
        }
        off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        for (Py_ssize_t j = 0; j < i; j++)
            if (off[j] == off[i]) {
                PyErr_Format(PyExc_TypeError, "slot %R named twice", name);
                return -1;
            }
    }
    return 0;
}

static PyObject *record_class(PyObject *mod, PyObject *args) {
    PyObject *cls, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &names)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(names), before = -1, after = -1, row = -1;
    Py_ssize_t off[REC_MAX_SLOTS];
    if (slot_offsets((PyTypeObject *)cls, names, off) < 0) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (PyUnicode_CompareWithASCIIString(name, "_before") == 0) before = i;
        else if (PyUnicode_CompareWithASCIIString(name, "_after") == 0) after = i;
        else if (PyUnicode_CompareWithASCIIString(name, "row") == 0) row = i;
    }
    if (before < 0 || after < 0 || row < 0) {
        PyErr_SetString(PyExc_TypeError, "record slots must include _before, _after and row");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(g_rec_type, (PyTypeObject *)cls);
    g_rec_nslots = n;
    memcpy(g_rec_off, off, sizeof(Py_ssize_t) * (size_t)n);
    g_rec_before = before; g_rec_after = after; g_rec_row = row;
    Py_RETURN_NONE;
}

/* SlotMaker(cls, names): calling it with one value per name makes an instance of `cls`
   with those slots filled, skipping __init__ (for frozen dataclasses: its object.__setattr__
   per field). For the objects made once per event (headers, rows events), where __init__
   costs more than decoding a small event. */
typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    Py_ssize_t n;
    Py_ssize_t off[REC_MAX_SLOTS];
    vectorcallfunc vectorcall;
} SlotMaker;

static PyObject *SlotMaker_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf,
                                      PyObject *kwnames) {
    SlotMaker *self = (SlotMaker *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != self->n || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "%s maker takes %zd positional values, got %zd",
                     self->cls->tp_name, self->n, nargs);
        return NULL;
    }
    PyObject *o = self->cls->tp_alloc(self->cls, 0);
    if (o == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        *(PyObject **)((char *)o + self->off[i]) = args[i];
    }
    return o;
}

static int SlotMaker_init(SlotMaker *self, PyObject *args, PyObject *kw) {
    PyObject *cls, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &names)) return -1;
    if (self->cls != NULL) { PyErr_SetString(PyExc_TypeError, "SlotMaker is set once"); return -1; }
    if (slot_offsets((PyTypeObject *)cls, names, self->off) < 0) return -1;
    Py_INCREF(cls);
    self->cls = (PyTypeObject *)cls;
    self->n = PyTuple_GET_SIZE(names);
    self->vectorcall = SlotMaker_vectorcall;
    return 0;
}

static PyObject *SlotMaker_call(PyObject *self, PyObject *args, PyObject *kw) {
    if (((SlotMaker *)self)->cls == NULL) { PyErr_SetString(PyExc_TypeError, "SlotMaker not set"); return NULL; }
    return PyVectorcall_Call(self, args, kw);
}

static void SlotMaker_dealloc(SlotMaker *self) {
    Py_XDECREF(self->cls);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject SlotMakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake.binlog.columns._speedups.SlotMaker",
    .tp_basicsize = sizeof(SlotMaker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "SlotMaker(cls, names)(*values) -> cls instance with its slots set, no __init__.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SlotMaker_init,
    .tp_dealloc = (destructor)SlotMaker_dealloc,
    .tp_call = SlotMaker_call,
    .tp_vectorcall_offset = offsetof(SlotMaker, vectorcall),
};

/* make_records(template, rows, mode) -> list: one record per row, every slot from
   `template` (in record_class's slot order) except the row number and the images:
   mode 0 insert (after = row), 1 delete (before = row), 2 update (row = (before, after)). */
static PyObject *make_records(PyObject *mod, PyObject *args) {
    PyObject *tmpl, *rows;
    int mode;
    if (!PyArg_ParseTuple(args, "O!O!i", &PyTuple_Type, &tmpl, &PyList_Type, &rows, &mode)) return NULL;
    if (g_rec_type == NULL || PyTuple_GET_SIZE(tmpl) != g_rec_nslots || mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_TypeError, "make_records: record_class() not set or bad template/mode");
        return NULL;
    }
    Py_ssize_t nrows = PyList_GET_SIZE(rows);
    PyObject *out = PyList_New(nrows);
    if (out == NULL) return NULL;
    for (Py_ssize_t r = 0; r < nrows; r++) {
        PyObject *row = PyList_GET_ITEM(rows, r), *before = Py_None, *after = Py_None;
        if (mode == 0) after = row;
        else if (mode == 1) before = row;
        else if (PyTuple_Check(row) && PyTuple_GET_SIZE(row) == 2) {
            before = PyTuple_GET_ITEM(row, 0); after = PyTuple_GET_ITEM(row, 1);
        } else {
            PyErr_SetString(PyExc_TypeError, "update rows must be (before, after) pairs");
            Py_DECREF(out);
            return NULL;
        }
        PyObject *num = PyLong_FromSsize_t(r);
        if (num == NULL) { Py_DECREF(out); return NULL; }
        PyObject *rec = g_rec_type->tp_alloc(g_rec_type, 0);
        if (rec == NULL) { Py_DECREF(num); Py_DECREF(out); return NULL; }
        for (Py_ssize_t i = 0; i < g_rec_nslots; i++) {
            PyObject *v = i == g_rec_before ? before : i == g_rec_after ? after
                          : i == g_rec_row ? num : PyTuple_GET_ITEM(tmpl, i);
            if (i != g_rec_row) Py_INCREF(v);  /* `num` is handed over */
            *(PyObject **)((char *)rec + g_rec_off[i]) = v;
        }
        PyList_SET_ITEM(out, r, rec);
    }
    return out;
}

static PyMethodDef module_methods[] = {
    {"set_pow10", set_pow10, METH_O,
     "set_pow10(table): 126-bit powers of ten for the JSON writer's float text (rowcodec.py)."},
    {"image_buffers", image_buffers, METH_VARARGS,
     "image_buffers(images, allocate) -> (validity or None, offsets, data): the buffers of an "
     "Arrow string array of a list of bytes/None, the data written into allocate(size)."},
    {"configure", configure, METH_VARARGS,
     "configure(ABSENT, Decimal, MySQLTime, DecodeError, date_fallback, datetime2_fallback, "
     "timestamp2_fallback): the Python objects the decoder builds or defers to."},
    {"record_class", record_class, METH_VARARGS,
     "record_class(cls, slot_names): the class make_records() builds (slots only)."},
    {"make_records", make_records, METH_VARARGS,
     "make_records(template, rows, mode) -> list of records (0 insert, 1 delete, 2 update)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_speedups", "binlake's C row-image decoder (see rowcodec.py).", -1,
    module_methods
};

PyMODINIT_FUNC PyInit__speedups(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    if (PyType_Ready(&RowDecoderType) < 0 || PyType_Ready(&SlotMakerType) < 0) return NULL;
    static const char *names[5] = {"negative", "hours", "minutes", "seconds", "microseconds"};
    for (int i = 0; i < 5; i++) {
        g_time_fields[i] = PyUnicode_InternFromString(names[i]);
        if (g_time_fields[i] == NULL) return NULL;
    }
    g_empty = PyUnicode_FromString("");
    g_comma = PyUnicode_FromString(",");
    if (g_empty == NULL || g_comma == NULL) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&RowDecoderType);
    if (PyModule_AddObject(m, "RowDecoder", (PyObject *)&RowDecoderType) < 0) {
        Py_DECREF(&RowDecoderType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SlotMakerType);
    if (PyModule_AddObject(m, "SlotMaker", (PyObject *)&SlotMakerType) < 0) {
        Py_DECREF(&SlotMakerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
