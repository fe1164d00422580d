/* Row bytes -> CDC JSON text per value and per row (the Arrow/Spark path).
 *
 * A compilation unit; rows.h declares what it gives the others. */
#include "common.h"
#include <math.h>
#include "text.h"
#include "utf8.h"
#include "rows.h"

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
    d = fraction_text(digits2(d, c->s), us, fsp);
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
    /* (NaN and infinities: the column's formatter, whose JSON text a flavor decides) */
    case OP_FLOAT: { float f; uint32_t u; NEEDI(4); memcpy(&f, b + p, 4); memcpy(&u, b + p, 4);
        if (!isfinite(f)) return put_fmt_decoded(o, op, bufobj, b, n, pp);
        *pp = p + 4;
        return put_float_cached(o, u, 2, 0.0, f); }
    case OP_DOUBLE: { double d; uint64_t u; NEEDI(8); memcpy(&d, b + p, 8); memcpy(&u, b + p, 8);
        if (!isfinite(d)) return put_fmt_decoded(o, op, bufobj, b, n, pp);
        *pp = p + 8;
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
        d = fraction_text(d, micro, fsp);
        *d++ = '"';
        return put(o, t, d - t);
    }
    case OP_STR: {
        NEEDI(op->a);
        Py_ssize_t len = (Py_ssize_t)le(b + p, op->a);
        NEEDI(op->a + len);
        const unsigned char *s = b + p + op->a;
        if (op->c >= TXT_UUID) {
            char t[FBT_TEXT_MAX + 2];
            int k = fbt_text(op->c, op->b, s, len, t + 1);
            if (k < 0) return -1;
            t[0] = '"'; t[k + 1] = '"';
            *pp = p + op->a + len;
            return put(o, t, k + 2);
        }
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

/* One row image at *pp appended to `o` as JSON object text; advances *pp. On error `o`
   may hold part of the image: callers drop it (encode_row resets, json_rows frees). For an
   update's images (update_pairs.c), with `spans`: a before image (`from` NULL) notes where
   each value lay and where its text went in `o`; an after image copies the text, from the
   before image's buffer `from`, of each value whose bytes are the same. */
int write_row_spans(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                    Py_ssize_t n, Py_ssize_t *pp, Buf *o, Span *spans, const char *from) {
    Py_ssize_t p = *pp, nb = (self->npresent + 7) / 8, w;
    NEEDI(nb);
    const unsigned char *nulls = b + p;
    p += nb;
    if (putch(o, '{') < 0) return -1;
    Py_ssize_t k = 0;
    int first = 1, keep = spans != NULL && from == NULL;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        const ColOp *op = &self->ops[i];
        if (keep) spans[i].at = -1;
        if (op->op == OP_ABSENT) continue;
        if (!first && putch(o, ',') < 0) return -1;
        first = 0;
        if (put(o, PyBytes_AS_STRING(op->key), PyBytes_GET_SIZE(op->key)) < 0) return -1;
        if (nulls[k >> 3] & (1 << (k & 7))) { if (put(o, "null", 4) < 0) return -1; }
        else if (from != NULL && (w = span_same(&spans[i], op, bufobj, b, n, p)) >= 0) {
            if (put(o, from + spans[i].text_at, spans[i].text_len) < 0) return -1;
            p += w;
        } else {
            Py_ssize_t at = p, text_at = o->len;
            if (encode_value(op, bufobj, b, n, &p, o) < 0) return -1;
            if (keep) {
                spans[i].at = at;
                spans[i].width = p - at;
                spans[i].text_at = text_at;
                spans[i].text_len = o->len - text_at;
            }
        }
        k++;
    }
    if (putch(o, '}') < 0) return -1;
    *pp = p;
    return 0;
}

static int write_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b, Py_ssize_t n,
                     Py_ssize_t *pp, Buf *o) {
    return write_row_spans(self, bufobj, b, n, pp, o, NULL, NULL);
}

/* One row image at *pp -> the JSON object text as bytes; advances *pp. */
PyObject *encode_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                     Py_ssize_t n, Py_ssize_t *pp) {
    Buf *o = &self->out;
    o->len = 0;
    if (write_row(self, bufobj, b, n, pp, o) < 0) return NULL;
    PyObject *img = PyBytes_FromStringAndSize(o->p, o->len);
    if (o->cap > (8 << 20)) {  /* one huge value must not keep its buffer for good */
        PyMem_Free(o->p);
        o->p = NULL;
        o->cap = o->len = 0;
    }
    return img;
}

PyObject *RowDecoder_json(RowDecoder *self, PyObject *args) {
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

