/* What every unit of the C core shares: column ops, the decoder object, the Python objects
 * configure() hands over, and the byte readers (inline: they are the hot loops' steps).
 *
 * Each .c file here is a compilation unit; the headers by concern (crc.h, utf8.h, text.h,
 * rows.h, arrow.h, records.h, framing.h) declare what one concern's units give the others.
 * They are linked with -fvisibility=hidden: only PyInit__core leaves the module. */
#ifndef BINLAKE_SPEEDUPS_COMMON_H
#define BINLAKE_SPEEDUPS_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "binlake._speedups assumes a little-endian host (the pure-Python decoder is used otherwise)"
#endif

enum {
    OP_ABSENT = 0, OP_INT = 1, OP_FLOAT = 2, OP_DOUBLE = 3, OP_YEAR = 4, OP_STR = 5,
    OP_ENUM = 6, OP_SET = 7, OP_BIT = 8, OP_DATE = 9, OP_DATETIME2 = 10, OP_TIMESTAMP2 = 11,
    OP_TIME2 = 12, OP_DECIMAL = 13, OP_LENCALL = 14, OP_NONE = 15, OP_POSCALL = 16
};
enum { TXT_BYTES = 0, TXT_UTF8 = 1, TXT_CODEC = 2, TXT_UTF8_OR_BYTES = 3, TXT_CHARMAP = 4,
       /* MariaDB's UUID, INET6, INET4 (BINARY(16)/(4) in the binlog): the server's text;
          the op's b is the type's width */
       TXT_UUID = 5, TXT_INET6 = 6, TXT_INET4 = 7 };
#define FBT_TEXT_MAX 48  /* longest UUID/INET text, with room to spare */

typedef struct {
    int op, a, b, c;
    PyObject *obj;       /* labels tuple, callable or codec name (owned) */
    const char *codec;   /* borrowed from obj when c == TXT_CODEC */
    /* JSON images (optional): */
    PyObject *fmt;       /* value -> JSON text (str), for anything not written directly */
    PyObject *key;       /* bytes: the JSON object key and colon, '"name":' */
    PyObject *jlabels;   /* ENUM/SET: tuple of bytes, each label JSON-escaped (no quotes) */
    uint32_t *charmap;   /* TXT_CHARMAP: byte -> code point (0xFFFE: undefined) */
    uint8_t kind_guess;  /* UTF-8 text: the guessed kind of the next value's str
                            (utf8_str_hinted), changed as values are decoded (the only
                            field that is) */
} ColOp;

typedef struct { char *p; Py_ssize_t len, cap; } Buf;

/* Where one value of an update's before image lies (update_pairs.c): its bytes in the event
   (at < 0: nowhere to share from: absent, NULL) and, for JSON images, its text in the
   side's buffer; `share`: both sides decode that column alike and its value may be shared. */
typedef struct { Py_ssize_t at, width, text_at, text_len; int share; } Span;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ncols;
    Py_ssize_t npresent;
    ColOp *ops;
    int json;            /* built with fmt/key per column: json() and json_many() work */
    Buf out;
    int32_t *widths;     /* skip_row's plan, per present column: a fixed width (>= 0) or
                            minus the bytes of a length prefix; NULL if a column's width
                            only its Python decoder knows (OP_POSCALL) */
} RowDecoder;

/* configured once from Python: see configure() (module.c) */
extern PyObject *g_absent, *g_decimal, *g_mysqltime, *g_decode_error;
extern PyObject *g_date_fb, *g_dt2_fb, *g_ts2_fb, *g_empty, *g_comma;
extern PyObject *g_time_fields[5];

static const int FRAC_BYTES[7] = {0, 1, 1, 2, 2, 3, 3};
static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                   100000000, 1000000000};

/* The growth of every array the C core appends to (Buf's bytes, offsets, run ends): `p`
   reallocated to hold at least `need` items of `size` bytes, its capacity *cap (in items)
   doubled, from `first` when it is 0, until they fit. The new pointer with *cap updated, or
   NULL with MemoryError (p still valid, *cap unchanged). Callers check for room inline and
   call this only to grow. */
static inline void *grow_array(void *p, Py_ssize_t *cap, Py_ssize_t need, Py_ssize_t first,
                               size_t size) {
    Py_ssize_t c = *cap ? *cap : first;
    while (c < need) c *= 2;
    void *np = PyMem_Realloc(p, (size_t)c * size);
    if (np == NULL) { PyErr_NoMemory(); return NULL; }
    *cap = c;
    return np;
}

/* ValueError: a row image ends before a value's `need` bytes at offset `at` (values.c). */
int truncated(Py_ssize_t need, Py_ssize_t at, Py_ssize_t len);

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

#endif  /* BINLAKE_SPEEDUPS_COMMON_H */
