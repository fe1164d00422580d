/* JSON text buffers (Buf): growing them, and the writers every JSON writer inlines.
 *
 * Part of _speedups.c: one translation unit, these parts included in order (every
 * function static), so the parts read as modules without a C API between them. */
#ifndef BINLAKE_SPEEDUPS_TEXT_H
#define BINLAKE_SPEEDUPS_TEXT_H

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

static inline char *digits2(char *d, int v) { d[0] = (char)('0' + v / 10 % 10); d[1] = (char)('0' + v % 10); return d + 2; }

#endif  /* BINLAKE_SPEEDUPS_TEXT_H */
