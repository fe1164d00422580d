/* Row bytes -> Python values: one value (decode_value), one row (decode_row).
 *
 * A compilation unit; rows.h declares what it gives the others. */
#include "common.h"
#include <datetime.h>
#include "utf8.h"
#include "rows.h"

int values_init(void) {
    PyDateTime_IMPORT;
    return PyDateTimeAPI == NULL ? -1 : 0;
}

int truncated(Py_ssize_t need, Py_ssize_t at, Py_ssize_t len) {
    PyErr_Format(PyExc_ValueError, "row image truncated: %zd bytes needed at offset %zd, %zd left",
                 need, at, len - at < 0 ? 0 : len - at);
    return -1;
}

static int put_dotted(char *d, const unsigned char *s) {
    int k = 0;
    for (int i = 0; i < 4; i++) {
        unsigned v = s[i];
        if (v >= 100) d[k++] = (char)('0' + v / 100);
        if (v >= 10) d[k++] = (char)('0' + v / 10 % 10);
        d[k++] = (char)('0' + v % 10);
        if (i < 3) d[k++] = '.';
    }
    return k;
}

/* A UUID/INET6/INET4 value (len <= width bytes; the missing trailing ones are zeros) ->
   its text in d (FBT_TEXT_MAX bytes), as fixedbin.py writes it; the length, or -1 with
   DecodeError for a value longer than its type. */
int fbt_text(int mode, int width, const unsigned char *s, Py_ssize_t len, char *d) {
    static const char HEX[] = "0123456789abcdef";
    unsigned char v[16];
    if (len > width) {
        PyErr_Format(g_decode_error, "%s value of %zd bytes; the type has %d",
                     mode == TXT_UUID ? "UUID" : mode == TXT_INET6 ? "INET6" : "INET4", len, width);
        return -1;
    }
    memcpy(v, s, (size_t)len);
    memset(v + len, 0, (size_t)(width - len));
    int k = 0;
    if (mode == TXT_INET4) return put_dotted(d, v);
    if (mode == TXT_UUID) {
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10) d[k++] = '-';
            d[k++] = HEX[v[i] >> 4];
            d[k++] = HEX[v[i] & 15];
        }
        return k;
    }
    unsigned w[8];
    int gap = -1, gap_len = 0, run = -1;
    for (int i = 0; i < 8; i++) w[i] = (unsigned)(v[2 * i] << 8 | v[2 * i + 1]);
    for (int i = 0; i <= 8; i++) {   /* the first longest run of zero groups */
        if (i < 8 && w[i] == 0) { if (run < 0) run = i; }
        else if (run >= 0) { if (i - run > gap_len) { gap = run; gap_len = i - run; } run = -1; }
    }
    for (int i = 0; i < 8; ) {
        if (i == gap) {
            if (i == 0) d[k++] = ':';
            d[k++] = ':';
            i += gap_len;
            continue;
        }
        if (i == 6 && gap == 0 && (gap_len == 6 || (gap_len == 5 && w[5] == 0xFFFF)))
            return k + put_dotted(d + k, v + 12);   /* IPv4-compatible or -mapped */
        int started = 0;
        for (int sh = 12; sh >= 0; sh -= 4) {
            unsigned x = (w[i] >> sh) & 15;
            if (x || started || sh == 0) { d[k++] = HEX[x]; started = 1; }
        }
        if (i < 7) d[k++] = ':';
        i++;
    }
    return k;
}

static PyObject *decode_text(const ColOp *op, const char *s, Py_ssize_t len) {
    PyObject *v;
    uint8_t *guess = (uint8_t *)&op->kind_guess;  /* (a guess, not the column's definition) */
    switch (op->c) {
    case TXT_UTF8:
        return utf8_str_hinted(s, len, guess);
    case TXT_CODEC:
        return PyUnicode_Decode(s, len, op->codec, NULL);
    case TXT_CHARMAP:  /* single-byte charsets: their codec's decoding table, no codec call */
        return PyUnicode_DecodeCharmap(s, len, op->obj, NULL);
    case TXT_UTF8_OR_BYTES:
        v = utf8_str_hinted(s, len, guess);
        if (v == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            return PyBytes_FromStringAndSize(s, len);
        }
        return v;
    default:
        return PyBytes_FromStringAndSize(s, len);
    }
}

Civil datetime2_fields(uint64_t intpart, int us) {
    Civil c = {0, 0, 0, 0, 0, 0, 0};
    int64_t x = (int64_t)intpart - 0x8000000000LL;
    if (x < 0) return c;
    int64_t ymd = x >> 17, ym = ymd >> 5, hms = x & 0x1FFFF;
    c.Y = (long)(ym / 13); c.M = (long)(ym % 13); c.D = (long)(ymd & 31);
    c.h = (int)(hms >> 12); c.mi = (int)((hms >> 6) & 63); c.s = (int)(hms & 63);
    c.ok = valid_date(c.Y, c.M, c.D) && c.h < 24 && c.mi < 60 && c.s < 60 && us < 1000000;
    return c;
}

Civil epoch_fields(uint64_t secs) {
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
int decimal_digits(const ColOp *op, const unsigned char *s, char *digits, int *neg) {
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
    text[len++] = 'E';  /* "E-<scale>": scale is 0..38 (checked with the metadata) */
    text[len++] = '-';
    if (scale >= 10) text[len++] = (char)('0' + scale / 10);
    text[len++] = (char)('0' + scale % 10);
    PyObject *str = PyUnicode_New(len, 127);  /* ASCII: no UTF-8 decoding of the digits */
    if (str == NULL) return NULL;
    memcpy(PyUnicode_DATA(str), text, (size_t)len);
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

void time2_parts(const unsigned char *s, int fsp, int *negp, int64_t *hmsp, int64_t *microp) {
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

PyObject *decode_time2(const unsigned char *s, int fsp) {
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
PyObject *decode_value(const ColOp *op, PyObject *bufobj, const unsigned char *b,
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
        if (op->c >= TXT_UUID) {
            char t[FBT_TEXT_MAX];
            int k = fbt_text(op->c, op->b, b + p, len, t);
            v = k < 0 ? NULL : PyUnicode_DecodeASCII(t, k, NULL);
        } else if (op->b && len < op->b) {   /* BINARY(n): stored without its trailing zero bytes */
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

/* One row image at *pp -> tuple over all columns; advances *pp. For an update's images
   (update_pairs.c), with `spans`: a before image (`before` NULL) notes where each value
   lay; an after image takes the value of `before` for each one whose bytes are the same. */
PyObject *decode_row_spans(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                           Py_ssize_t n, Py_ssize_t *pp, Span *spans, PyObject *before) {
    Py_ssize_t p = *pp, nb = (self->npresent + 7) / 8, w;
    NEED(nb);
    const unsigned char *nulls = b + p;
    p += nb;
    PyObject *row = PyTuple_New(self->ncols);
    if (row == NULL) return NULL;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        const ColOp *op = &self->ops[i];
        PyObject *v;
        Py_ssize_t at = -1;
        if (op->op == OP_ABSENT) { v = g_absent; Py_INCREF(v); }
        else {
            if (nulls[k >> 3] & (1 << (k & 7))) { v = Py_None; Py_INCREF(v); }
            else if (before != NULL && (w = span_same(&spans[i], op, bufobj, b, n, p)) >= 0) {
                v = PyTuple_GET_ITEM(before, i);
                Py_INCREF(v);
                p += w;
            } else {
                at = p;
                v = decode_value(op, bufobj, b, n, &p);
                if (v == NULL) { Py_DECREF(row); return NULL; }
            }
            k++;
        }
        if (spans != NULL && before == NULL) { spans[i].at = at; spans[i].width = p - at; }
        PyTuple_SET_ITEM(row, i, v);
    }
    *pp = p;
    return row;
}

PyObject *decode_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                     Py_ssize_t n, Py_ssize_t *pp) {
    return decode_row_spans(self, bufobj, b, n, pp, NULL, NULL);
}

