/* FLOAT/DOUBLE as JSON text: repr()'s shortest digits (Schubfach), float32 text, a cache.
 *
 * A compilation unit; text.h declares what it gives the others. */
#include "common.h"
#include <math.h>
#include "text.h"

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

int put_repr(Buf *o, double v) {
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
PyObject *set_pow10(PyObject *mod, PyObject *arg) {
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

/* changes.float32_text: the shortest %g (6..9 digits) that reads back as the same float32.
   That is the shortest decimal in the float32's rounding interval (the closest to it if
   several: %g rounds correctly, and a shorter decimal in the interval is also the nearest
   one of 6 digits, the interval being narrower than their spacing), so for normal floats it
   is Schubfach with the float32's significand and exponent. Not for powers of two: their
   interval is narrower below, and %g's nearest decimal may miss it where a farther, equally
   short one above is in; %g then takes a digit more, and so must we. %g and strtod do those,
   and subnormals, zeros, inf and nan. */
int put_float32(Buf *o, float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    int bq = (int)((bits >> 23) & 0xFF);
    if (g_pow10 != NULL && bq != 0 && bq != 0xFF && (bits & 0x7FFFFF) != 0) {
        uint64_t c = (1u << 23) | (bits & 0x7FFFFF), m;
        int q = bq - 150, mq = -q, e;
        if (mq > 0 && mq < 24 && ((c >> mq) << mq) == c) { m = c >> mq; e = 0; }  /* an integer */
        else schubfach(q, c, 1, &m, &e);
        return put_shortest(o, (int)(bits >> 31), m, e);
    }
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
   is costly (dtoa's bignum arithmetic; FLOAT also tries %g widths), and
   images repeat values: an update's before and after share every unchanged column, a delete
   repeats what was inserted shortly before. The text is a function of the bits alone, so a
   hit writes exactly what formatting would. Direct-mapped, one slot per hash; the GIL guards it. */
typedef struct { uint64_t bits; unsigned char kind, len; char text[30]; } ReprSlot;  /* kind 0: empty */
#define REPR_SLOTS 1024
static ReprSlot repr_cache[REPR_SLOTS];

int put_float_cached(Buf *o, uint64_t bits, int kind, double d, float f) {
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

