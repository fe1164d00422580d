/* JSON text (json_text.c, float_text.c): Buf, a growing byte buffer, with the writers every
 * JSON writer inlines; escaping, base64, integers and floats as JSON text. */
#ifndef BINLAKE_SPEEDUPS_TEXT_H
#define BINLAKE_SPEEDUPS_TEXT_H

#include "common.h"

/* Room for `extra` more bytes: 0, or -1 with MemoryError. The check is inline, the growth
   (doubling, from 256 bytes) a call: buf_grow in json_text.c. */
int buf_grow(Buf *o, Py_ssize_t extra);

static inline int buf_reserve(Buf *o, Py_ssize_t extra) {
    if (o->len + extra <= o->cap) return 0;
    return buf_grow(o, extra);
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

static inline char *digits2(char *d, int v) { d[0] = (char)('0' + v / 10 % 10); d[1] = (char)('0' + v % 10); return d + 2; }

/* The last `width` decimal digits of v >= 0 at d, zero-padded; the end. */
static inline char *digits_n(char *d, long v, int width) {
    for (int k = width - 1; k >= 0; k--) { d[k] = (char)('0' + v % 10); v /= 10; }
    return d + width;
}

/* ".ffffff"[:fsp + 1] of `us` microseconds at d (nothing when fsp is 0); the end. */
static inline char *fraction_text(char *d, long us, int fsp) {
    if (!fsp) return d;
    char f[6];
    digits_n(f, us, 6);
    *d++ = '.';
    memcpy(d, f, fsp);
    return d + fsp;
}

static inline int put_uint(Buf *o, uint64_t v) {
    char t[24];
    int k = 24;
    do { t[--k] = (char)('0' + v % 10); v /= 10; } while (v);
    return put(o, t + k, 24 - k);
}

static inline int put_int(Buf *o, int64_t v) {
    if (v >= 0) return put_uint(o, (uint64_t)v);
    if (putch(o, '-') < 0) return -1;
    return put_uint(o, (uint64_t)0 - (uint64_t)v);
}

/* json_text.c: a JSON string's body of UTF-8 bytes, escaped as json.dumps does; bytes as
   a quoted base64 string. 0, or -1 with MemoryError. (Text that must be checked as UTF-8
   too: put_utf8_escaped, utf8.h.) */
int put_escaped(Buf *o, const unsigned char *s, Py_ssize_t n);
int put_base64(Buf *o, const unsigned char *s, Py_ssize_t n);

/* float_text.c: a double as repr() writes it, a FLOAT as the binlog's float32 text, either
   through a small cache of recent values (kind 1: the double d, 2: the float f); set_pow10 is the
   module's set_pow10(table). */
int put_repr(Buf *o, double v);
int put_float32(Buf *o, float f);
int put_float_cached(Buf *o, uint64_t bits, int kind, double d, float f);
PyObject *set_pow10(PyObject *mod, PyObject *arg);

#endif  /* BINLAKE_SPEEDUPS_TEXT_H */
