/* fold_scd1: one table's change records folded into one net change per key, the driver-side
 * fold of a CDC batch. cdc/net.py's net_scd1 is the reference (and the twin used without the
 * C core); this file follows it step by step:
 *
 *   - an insert upserts its key with every column (absent ones NULL), a delete deletes its
 *     key, an update upserts the key with the columns its after image holds; an update whose
 *     key changes deletes the old key and upserts the new one with a full row (after values,
 *     else before values), both at the record's seq;
 *   - a record whose seq equals the previous one's is a duplicate, one at or before the
 *     TRUNCATE cut is dropped; other ops are skipped;
 *   - keys are compared as their value texts (strings unescaped, numbers as written, true
 *     and false apart from the strings "true" and "false"); the output lists keys in the
 *     order they first appeared (a dict's order).
 *
 * The images are the JSON objects binlake writes: flat, scalar values. A value is kept as a
 * pointer into the image (or, when it had escapes, into an arena of unescaped copies), so
 * nothing is copied until the output columns are written. Output: Arrow buffers per column
 * (validity, int32 offsets, data) that net.py wraps with pa.Array.from_buffers. The fold
 * itself runs without the GIL (raw allocators, errors noted in the Fold and raised after). */
#include "fold.h"

typedef struct { const char *p; Py_ssize_t len; uint8_t tag; } Val;  /* tag: 0 NULL or
    absent, 1 text, 2 true/false (text "true"/"false"), 3 nested (an error if kept) */

typedef struct {
    Py_buffer view[3];
    int nview;
    const uint8_t *valid;
    const char *data;
    const int32_t *offs;
    Py_ssize_t off;
} Arr;

typedef struct Block { struct Block *next; Py_ssize_t used, cap; char data[]; } Block;

typedef struct {
    int32_t fi, inner, row;
    int64_t pos, ts;
    uint8_t ts_valid, del, full;
    Py_ssize_t key_at, key_len;
    uint64_t hash;
} State;

typedef struct {
    Py_ssize_t nn, nc, nk;        /* names (cols, then keys not among them), cols, keys */
    const char **name;
    Py_ssize_t *name_len;
    Py_ssize_t *key_idx;          /* key j -> its name index */
    Block *arena;                 /* unescaped strings */
    char *keys; Py_ssize_t keys_len, keys_cap;   /* encoded keys of the states */
    char *scratch; Py_ssize_t scratch_cap;       /* a key being encoded */
    char *prev; Py_ssize_t prev_cap;             /* an update's old key */
    State *st; Py_ssize_t nst, st_cap;
    Val *vals; uint8_t *pres;     /* nst x nc */
    uint32_t *slots; Py_ssize_t nslots;          /* state index + 1, 0 empty */
    Py_ssize_t rec;               /* the record being folded (error messages) */
    int nomem;                    /* the fold ran out of memory */
    char err[160];                /* else why it stopped (raised once the GIL is back) */
} Fold;

/* The fold runs without the GIL: errors are noted here and raised by fold_scd1. */
static int fold_error(Fold *f, const char *what) {
    if (!f->err[0]) PyOS_snprintf(f->err, sizeof f->err, "change record %zd: %s", f->rec, what);
    return -1;
}

static int no_memory(Fold *f) {
    f->nomem = 1;
    return -1;
}

static char *arena_alloc(Fold *f, Py_ssize_t n) {
    Block *b = f->arena;
    if (b == NULL || b->cap - b->used < n) {
        Py_ssize_t cap = n > (1 << 20) ? n : (1 << 20);
        Block *nb = PyMem_RawMalloc(sizeof(Block) + (size_t)cap);
        if (nb == NULL) { no_memory(f); return NULL; }
        nb->next = b; nb->used = 0; nb->cap = cap;
        f->arena = b = nb;
    }
    char *p = b->data + b->used;
    b->used += n;
    return p;
}

#define ONES 0x0101010101010101ULL
/* SWAR tests of a 64-bit word: some byte is zero; some byte is below n (n <= 128) */
#define SWAR_ZERO(w) (((w) - ONES) & ~(w) & (ONES * 0x80))
#define SWAR_LESS(w, n) (((w) - ONES * (n)) & ~(w) & (ONES * 0x80))

static inline const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static int hex4(const char *p, const char *end, uint32_t *out) {
    if (end - p < 4) return -1;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* A JSON string at p (after its opening quote): *out its content (unescaped into the arena
   when it has escapes); returns the position after the closing quote, NULL on an error. */
static const char *parse_string(Fold *f, const char *p, const char *end, Val *out) {
    const char *s = p;
    int escaped = 0;
    while (p < end) {
        while (end - p >= 8) {  /* 8 bytes at a time while none is '"', '\\' or < 0x20 */
            uint64_t w;
            memcpy(&w, p, 8);
            if (SWAR_ZERO(w ^ (ONES * '"')) | SWAR_ZERO(w ^ (ONES * '\\')) | SWAR_LESS(w, 0x20))
                break;
            p += 8;
        }
        if (p >= end) break;
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c < 0x20) { fold_error(f, "a control character inside a JSON string"); return NULL; }
        if (c == '\\') { escaped = 1; p += 2; continue; }
        p++;
    }
    if (p > end) p = end;
    if (p >= end) { fold_error(f, "an unterminated JSON string"); return NULL; }
    out->tag = 1;
    if (!escaped) { out->p = s; out->len = p - s; return p + 1; }
    char *o = arena_alloc(f, p - s);  /* unescaped text is never longer */
    if (o == NULL) return NULL;
    char *w = o;
    const char *q = s;
    while (q < p) {
        if (*q != '\\') { *w++ = *q++; continue; }
        q++;
        switch (*q) {
            case '"': *w++ = '"'; q++; break;
            case '\\': *w++ = '\\'; q++; break;
            case '/': *w++ = '/'; q++; break;
            case 'b': *w++ = '\b'; q++; break;
            case 'f': *w++ = '\f'; q++; break;
            case 'n': *w++ = '\n'; q++; break;
            case 'r': *w++ = '\r'; q++; break;
            case 't': *w++ = '\t'; q++; break;
            case 'u': {
                uint32_t cp, lo;
                if (hex4(q + 1, p, &cp) < 0) { fold_error(f, "a bad \\u escape"); return NULL; }
                q += 5;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (q + 6 <= p && q[0] == '\\' && q[1] == 'u' && hex4(q + 2, p, &lo) == 0
                            && lo >= 0xDC00 && lo <= 0xDFFF) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        q += 6;
                    } else {
                        fold_error(f, "a lone surrogate in a JSON string");
                        return NULL;
                    }
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    fold_error(f, "a lone surrogate in a JSON string");
                    return NULL;
                }
                if (cp < 0x80) *w++ = (char)cp;
                else if (cp < 0x800) {
                    *w++ = (char)(0xC0 | (cp >> 6)); *w++ = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    *w++ = (char)(0xE0 | (cp >> 12)); *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                    *w++ = (char)(0x80 | (cp & 0x3F));
                } else {
                    *w++ = (char)(0xF0 | (cp >> 18)); *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                    *w++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *w++ = (char)(0x80 | (cp & 0x3F));
                }
                break;
            }
            default:
                fold_error(f, "a bad escape in a JSON string");
                return NULL;
        }
    }
    out->p = o; out->len = w - o;
    return p + 1;
}

/* A nested object or array at p (its opening bracket): the position after it. */
static const char *skip_nested(Fold *f, const char *p, const char *end) {
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            Val ignored;
            p = parse_string(f, p + 1, end, &ignored);
            if (p == NULL) return NULL;
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0) return p + 1;
        }
        p++;
    }
    fold_error(f, "an unterminated JSON object or array");
    return NULL;
}

static const char *parse_number(Fold *f, const char *p, const char *end, Val *out) {
    const char *s = p;
    if (p < end && *p == '-') p++;
    if (p >= end || *p < '0' || *p > '9') {
        if (end - p >= 8 && memcmp(p, "Infinity", 8) == 0) {
            out->tag = 1;
            if (p > s) { out->p = "-inf"; out->len = 4; } else { out->p = "inf"; out->len = 3; }
            return p + 8;
        }
        fold_error(f, "a bad JSON value");
        return NULL;
    }
    if (*p == '0') p++;
    else while (p < end && *p >= '0' && *p <= '9') p++;
    if (p + 1 < end && *p == '.' && p[1] >= '0' && p[1] <= '9') {
        p++;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *e = p + 1;
        if (e < end && (*e == '+' || *e == '-')) e++;
        if (e < end && *e >= '0' && *e <= '9') {
            while (e < end && *e >= '0' && *e <= '9') e++;
            p = e;
        }
    }
    out->tag = 1; out->p = s; out->len = p - s;
    return p;
}

static const char *parse_value(Fold *f, const char *p, const char *end, Val *out) {
    if (p >= end) { fold_error(f, "a JSON image cut short"); return NULL; }
    switch (*p) {
        case '"': return parse_string(f, p + 1, end, out);
        case '{': case '[':
            out->tag = 3; out->p = NULL; out->len = 0;
            return skip_nested(f, p, end);
        case 't':
            if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
                out->tag = 2; out->p = "true"; out->len = 4; return p + 4;
            }
            break;
        case 'f':
            if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
                out->tag = 2; out->p = "false"; out->len = 5; return p + 5;
            }
            break;
        case 'n':
            if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
                out->tag = 0; out->p = NULL; out->len = 0; return p + 4;
            }
            break;
        case 'N':
            if (end - p >= 3 && memcmp(p, "NaN", 3) == 0) {
                out->tag = 1; out->p = "nan"; out->len = 3; return p + 3;
            }
            break;
        default:
            return parse_number(f, p, end, out);
    }
    fold_error(f, "a bad JSON value");
    return NULL;
}

static Py_ssize_t name_index(Fold *f, const char *p, Py_ssize_t len, Py_ssize_t hint) {
    if (hint < f->nn && f->name_len[hint] == len && memcmp(f->name[hint], p, (size_t)len) == 0)
        return hint;
    for (Py_ssize_t i = 0; i < f->nn; i++)
        if (f->name_len[i] == len && memcmp(f->name[i], p, (size_t)len) == 0) return i;
    return -1;
}

/* One image (a flat JSON object) into vals[0..nn) and seen[0..nn) (cleared first). */
static int parse_image(Fold *f, const char *p, Py_ssize_t len, Val *vals, uint8_t *seen) {
    const char *end = p + len;
    memset(seen, 0, (size_t)f->nn);
    for (Py_ssize_t i = 0; i < f->nn; i++) vals[i].tag = 0;
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return fold_error(f, "an image that is not a JSON object");
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') return 0;
    Py_ssize_t hint = 0;
    for (;;) {
        if (p >= end || *p != '"') return fold_error(f, "a JSON object key that is not a string");
        Val name, v;
        p = parse_string(f, p + 1, end, &name);
        if (p == NULL) return -1;
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return fold_error(f, "a JSON object without ':'");
        p = parse_value(f, skip_ws(p + 1, end), end, &v);
        if (p == NULL) return -1;
        Py_ssize_t i = name_index(f, name.p, name.len, hint);
        if (i >= 0) {
            if (v.tag == 3) return fold_error(f, "a nested image value where `foldable` allows none");
            vals[i] = v;
            seen[i] = 1;
            hint = i + 1;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') { p = skip_ws(p + 1, end); continue; }
        if (p < end && *p == '}') return 0;
        return fold_error(f, "a JSON object without ',' or '}'");
    }
}

/* -- keys -------------------------------------------------------------------------------- */

/* The key texts `from` encoded into *buf (grown as needed): per part a tag, then the
   length and bytes of a text. */
static int encode_key(Fold *f, const Val *const *from, char **buf, Py_ssize_t *cap,
                      Py_ssize_t *len) {
    Py_ssize_t need = 0;
    for (Py_ssize_t j = 0; j < f->nk; j++) need += 5 + (from[j]->tag ? from[j]->len : 0);
    if (need > *cap) {
        char *s = PyMem_RawRealloc(*buf, (size_t)(need ? need : 1));
        if (s == NULL) { no_memory(f); return -1; }
        *buf = s; *cap = need;
    }
    char *w = *buf;
    for (Py_ssize_t j = 0; j < f->nk; j++) {
        const Val *v = from[j];
        *w++ = (char)v->tag;
        if (v->tag) {
            uint32_t n = (uint32_t)v->len;
            memcpy(w, &n, 4); w += 4;
            memcpy(w, v->p, (size_t)v->len); w += v->len;
        }
    }
    *len = w - *buf;
    return 0;
}

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (Py_ssize_t i = 0; i < n; i++) { h ^= (uint8_t)p[i]; h *= 0x100000001b3ULL; }
    return h ^ (h >> 29);
}

static int grow_slots(Fold *f) {
    Py_ssize_t n = f->nslots ? f->nslots * 2 : 1024;
    uint32_t *s = PyMem_RawCalloc((size_t)n, sizeof(uint32_t));
    if (s == NULL) { no_memory(f); return -1; }
    for (Py_ssize_t i = 0; i < f->nst; i++) {
        Py_ssize_t at = (Py_ssize_t)(f->st[i].hash & (uint64_t)(n - 1));
        while (s[at]) at = (at + 1) & (n - 1);
        s[at] = (uint32_t)(i + 1);
    }
    PyMem_RawFree(f->slots);
    f->slots = s; f->nslots = n;
    return 0;
}

/* The state of the encoded key[0..len): its index, made when new. */
static Py_ssize_t state_of(Fold *f, const char *key, Py_ssize_t len, int *created) {
    uint64_t h = hash_bytes(key, len);
    if ((f->nst + 1) * 2 > f->nslots && grow_slots(f) < 0) return -1;
    Py_ssize_t mask = f->nslots - 1, at = (Py_ssize_t)(h & (uint64_t)mask);
    while (f->slots[at]) {
        State *s = &f->st[f->slots[at] - 1];
        if (s->hash == h && s->key_len == len
                && memcmp(f->keys + s->key_at, key, (size_t)len) == 0) {
            *created = 0;
            return f->slots[at] - 1;
        }
        at = (at + 1) & mask;
    }
    if (f->nst >= f->st_cap) {
        Py_ssize_t cap = f->st_cap ? f->st_cap * 2 : 1024;
        if (cap >= (Py_ssize_t)UINT32_MAX) { no_memory(f); return -1; }
        State *st = PyMem_RawRealloc(f->st, (size_t)cap * sizeof(State));
        if (st == NULL) { no_memory(f); return -1; }
        f->st = st;
        Val *vals = PyMem_RawRealloc(f->vals, (size_t)(cap * (f->nc ? f->nc : 1)) * sizeof(Val));
        if (vals == NULL) { no_memory(f); return -1; }
        f->vals = vals;
        uint8_t *pres = PyMem_RawRealloc(f->pres, (size_t)(cap * (f->nc ? f->nc : 1)));
        if (pres == NULL) { no_memory(f); return -1; }
        f->pres = pres;
        f->st_cap = cap;
    }
    if (f->keys_len + len > f->keys_cap) {
        Py_ssize_t cap = f->keys_cap ? f->keys_cap * 2 : (1 << 16);
        while (cap < f->keys_len + len) cap *= 2;
        char *k = PyMem_RawRealloc(f->keys, (size_t)cap);
        if (k == NULL) { no_memory(f); return -1; }
        f->keys = k; f->keys_cap = cap;
    }
    Py_ssize_t i = f->nst++;
    State *s = &f->st[i];
    memcpy(f->keys + f->keys_len, key, (size_t)len);
    s->key_at = f->keys_len; s->key_len = len; s->hash = h;
    f->keys_len += len;
    f->slots[at] = (uint32_t)(i + 1);
    *created = 1;
    return i;
}

/* -- input arrays -------------------------------------------------------------------------- */

static int get_view(PyObject *obj, Arr *a, const void **out) {
    if (obj == Py_None) { *out = NULL; return 0; }
    Py_buffer *v = &a->view[a->nview];
    if (PyObject_GetBuffer(obj, v, PyBUF_SIMPLE) < 0) return -1;
    a->nview++;
    *out = v->buf;
    return 0;
}

/* (validity or None, data, offsets or None, offset) -> Arr */
static int get_arr(PyObject *t, Arr *a) {
    PyObject *valid, *data, *offs;
    Py_ssize_t off;
    memset(a, 0, sizeof *a);
    if (!PyArg_ParseTuple(t, "OOOn", &valid, &data, &offs, &off)) return -1;
    a->off = off;
    const void *p;
    if (get_view(valid, a, &p) < 0) return -1;
    a->valid = p;
    if (get_view(data, a, &p) < 0) return -1;
    a->data = p;
    if (get_view(offs, a, &p) < 0) return -1;
    a->offs = p;
    return 0;
}

static void release_arr(Arr *a) {
    for (int i = 0; i < a->nview; i++) PyBuffer_Release(&a->view[i]);
    a->nview = 0;
}

static inline int arr_valid(const Arr *a, Py_ssize_t i) {
    if (a->valid == NULL) return 1;
    Py_ssize_t k = i + a->off;
    return (a->valid[k >> 3] >> (k & 7)) & 1;
}

static inline int image_at(const Arr *a, Py_ssize_t i, const char **p, Py_ssize_t *len) {
    if (!arr_valid(a, i)) return 0;
    Py_ssize_t k = i + a->off;
    *p = a->data + a->offs[k];
    *len = a->offs[k + 1] - a->offs[k];
    return 1;
}

/* -- output -------------------------------------------------------------------------------- */

static PyObject *bitmap(Py_ssize_t n) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    if (b) memset(PyBytes_AS_STRING(b), 0, (size_t)((n + 7) / 8));
    return b;
}

/* (validity or None, offsets, data, null count) of one text column over the states. */
static PyObject *text_column(Fold *f, Py_ssize_t col, Py_ssize_t keyj) {
    Py_ssize_t n = f->nst, total = 0, nulls = 0;
    Val v;
    for (int pass = 0; pass < 2; pass++) {
        PyObject *valid = NULL, *offs = NULL, *data = NULL;
        int32_t *o = NULL;
        char *d = NULL;
        uint8_t *bits = NULL;
        if (pass == 1) {
            if (total >= ((Py_ssize_t)1 << 31)) {
                PyErr_SetString(PyExc_ValueError, "fold: more than 2 GiB of one column's values");
                return NULL;
            }
            offs = PyBytes_FromStringAndSize(NULL, (n + 1) * 4);
            data = PyBytes_FromStringAndSize(NULL, total);
            valid = nulls ? bitmap(n) : (Py_INCREF(Py_None), Py_None);
            if (offs == NULL || data == NULL || valid == NULL) {
                Py_XDECREF(offs); Py_XDECREF(data); Py_XDECREF(valid);
                return NULL;
            }
            o = (int32_t *)PyBytes_AS_STRING(offs);
            d = PyBytes_AS_STRING(data);
            bits = nulls ? (uint8_t *)PyBytes_AS_STRING(valid) : NULL;
            o[0] = 0;
        }
        Py_ssize_t at = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (keyj >= 0) {  /* decode key part j of state i */
                const char *k = f->keys + f->st[i].key_at;
                for (Py_ssize_t j = 0;; j++) {
                    uint8_t tag = (uint8_t)*k++;
                    uint32_t len = 0;
                    if (tag) { memcpy(&len, k, 4); k += 4; }
                    if (j == keyj) { v.tag = tag; v.p = k; v.len = len; break; }
                    k += len;
                }
            } else {
                v = f->vals[i * f->nc + col];
            }
            if (pass == 0) {
                if (v.tag) total += v.len; else nulls++;
                continue;
            }
            if (v.tag) {
                memcpy(d + at, v.p, (size_t)v.len);
                at += v.len;
                if (bits) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
            }
            o[i + 1] = (int32_t)at;
        }
        if (pass == 1) {
            PyObject *nn = PyLong_FromSsize_t(nulls);
            PyObject *t = nn ? PyTuple_Pack(4, valid, offs, data, nn) : NULL;
            Py_XDECREF(nn); Py_DECREF(valid); Py_DECREF(offs); Py_DECREF(data);
            return t;
        }
    }
    return NULL;
}

static PyObject *seq_tuple(const State *s) {
    return Py_BuildValue("(iLii)", s->fi, (long long)s->pos, s->inner, s->row);
}

static inline int seq_cmp(int32_t fi, int64_t pos, int32_t inner, int32_t row, const int64_t *c) {
    if (fi != c[0]) return fi < c[0] ? -1 : 1;
    if (pos != c[1]) return pos < c[1] ? -1 : 1;
    if (inner != c[2]) return inner < c[2] ? -1 : 1;
    if (row != c[3]) return row < c[3] ? -1 : 1;
    return 0;
}

static int state_cmp(const State *a, const State *b) {
    int64_t c[4] = {b->fi, b->pos, b->inner, b->row};
    return seq_cmp(a->fi, a->pos, a->inner, a->row, c);
}

static PyObject *build_result(Fold *f, const State *min_seq) {
    Py_ssize_t n = f->nst;
    PyObject *keys = PyList_New(f->nk), *cols = PyList_New(f->nc), *pres = PyList_New(f->nc);
    PyObject *fi = PyBytes_FromStringAndSize(NULL, n * 4), *pos = PyBytes_FromStringAndSize(NULL, n * 8);
    PyObject *inner = PyBytes_FromStringAndSize(NULL, n * 4), *row = PyBytes_FromStringAndSize(NULL, n * 4);
    PyObject *ts = PyBytes_FromStringAndSize(NULL, n * 8), *tsv = bitmap(n);
    PyObject *del = bitmap(n), *full = bitmap(n), *result = NULL, *mins = NULL, *maxd = NULL;
    if (!keys || !cols || !pres || !fi || !pos || !inner || !row || !ts || !tsv || !del || !full)
        goto done;
    for (Py_ssize_t j = 0; j < f->nk; j++) {
        PyObject *c = text_column(f, -1, j);
        if (c == NULL) goto done;
        PyList_SET_ITEM(keys, j, c);
    }
    for (Py_ssize_t c = 0; c < f->nc; c++) {
        PyObject *t = text_column(f, c, -1), *b = bitmap(n);
        if (t == NULL || b == NULL) { Py_XDECREF(t); Py_XDECREF(b); goto done; }
        uint8_t *bits = (uint8_t *)PyBytes_AS_STRING(b);
        for (Py_ssize_t i = 0; i < n; i++)
            if (f->pres[i * f->nc + c]) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        PyList_SET_ITEM(cols, c, t);
        PyList_SET_ITEM(pres, c, b);
    }
    int32_t *pfi = (int32_t *)PyBytes_AS_STRING(fi), *pin = (int32_t *)PyBytes_AS_STRING(inner);
    int32_t *prow = (int32_t *)PyBytes_AS_STRING(row);
    int64_t *ppos = (int64_t *)PyBytes_AS_STRING(pos), *pts = (int64_t *)PyBytes_AS_STRING(ts);
    uint8_t *bv = (uint8_t *)PyBytes_AS_STRING(tsv), *bd = (uint8_t *)PyBytes_AS_STRING(del);
    uint8_t *bf = (uint8_t *)PyBytes_AS_STRING(full);
    Py_ssize_t deletes = 0, tsnulls = 0;
    const State *maxdel = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        const State *s = &f->st[i];
        pfi[i] = s->fi; ppos[i] = s->pos; pin[i] = s->inner; prow[i] = s->row;
        pts[i] = s->ts_valid ? s->ts : 0;
        uint8_t m = (uint8_t)(1u << (i & 7));
        if (s->ts_valid) bv[i >> 3] |= m; else tsnulls++;
        if (s->full) bf[i >> 3] |= m;
        if (s->del) {
            bd[i >> 3] |= m;
            deletes++;
            if (maxdel == NULL || state_cmp(s, maxdel) > 0) maxdel = s;
        }
    }
    mins = min_seq ? seq_tuple(min_seq) : (Py_INCREF(Py_None), Py_None);
    maxd = maxdel ? seq_tuple(maxdel) : (Py_INCREF(Py_None), Py_None);
    if (mins == NULL || maxd == NULL) goto done;
    result = Py_BuildValue("nOOOOOOOOnOOOnOO", n, keys, cols, pres, fi, pos, inner, row, ts,
                           tsnulls, tsv, del, full, deletes, mins, maxd);
done:
    Py_XDECREF(keys); Py_XDECREF(cols); Py_XDECREF(pres); Py_XDECREF(fi); Py_XDECREF(pos);
    Py_XDECREF(inner); Py_XDECREF(row); Py_XDECREF(ts); Py_XDECREF(tsv); Py_XDECREF(del);
    Py_XDECREF(full); Py_XDECREF(mins); Py_XDECREF(maxd);
    return result;
}

/* -- the fold ------------------------------------------------------------------------------ */

static void set_state(Fold *f, Py_ssize_t i, const State *at, int del, int full) {
    State *s = &f->st[i];
    s->fi = at->fi; s->pos = at->pos; s->inner = at->inner; s->row = at->row;
    s->ts = at->ts; s->ts_valid = at->ts_valid;
    s->del = (uint8_t)del; s->full = (uint8_t)full;
}

static int fold_records(Fold *f, Py_ssize_t n, const int8_t *ops, Arr *sq[4], Arr *tsa,
                        Arr *before, Arr *after, const int64_t *cut, State *min_seq,
                        int *have_min) {
    Py_ssize_t nn = f->nn, nc = f->nc, nk = f->nk;
    Val *bv = PyMem_RawCalloc((size_t)(nn ? nn : 1), sizeof(Val));
    Val *av = PyMem_RawCalloc((size_t)(nn ? nn : 1), sizeof(Val));
    uint8_t *bs = PyMem_RawCalloc((size_t)(nn ? nn : 1), 1), *as = PyMem_RawCalloc((size_t)(nn ? nn : 1), 1);
    const Val **kv = PyMem_RawCalloc((size_t)(nk ? nk : 1), sizeof(Val *));
    Val *mix = PyMem_RawCalloc((size_t)(nk ? nk : 1), sizeof(Val));
    static const Val null_val = {NULL, 0, 0};
    int rc = -1, have_last = 0;
    State last = {0}, cur = {0};
    if (!bv || !av || !bs || !as || !kv || !mix) { no_memory(f); goto done; }
    const int32_t *fi = (const int32_t *)sq[0]->data, *in = (const int32_t *)sq[2]->data;
    const int32_t *ro = (const int32_t *)sq[3]->data;
    const int64_t *po = (const int64_t *)sq[1]->data, *ts = (const int64_t *)tsa->data;
    for (Py_ssize_t r = 0; r < n; r++) {
        int op = ops[r];
        if (op < 0) continue;
        f->rec = r;
        cur.fi = fi[r + sq[0]->off]; cur.pos = po[r + sq[1]->off];
        cur.inner = in[r + sq[2]->off]; cur.row = ro[r + sq[3]->off];
        if (have_last && state_cmp(&cur, &last) == 0) continue;  /* a duplicate */
        if (cut != NULL && seq_cmp(cur.fi, cur.pos, cur.inner, cur.row, cut) <= 0) continue;
        last = cur; have_last = 1;
        cur.ts_valid = (uint8_t)arr_valid(tsa, r);
        cur.ts = cur.ts_valid ? ts[r + tsa->off] : 0;
        if (!*have_min) { *min_seq = cur; *have_min = 1; }
        const char *p;
        Py_ssize_t len, k;
        int created;
        if (op == 0 || op == 1) {
            if (!image_at(after, r, &p, &len)) { fold_error(f, "no after image"); goto done; }
            if (parse_image(f, p, len, av, as) < 0) goto done;
        }
        if (op == 1 || op == 2) {
            if (!image_at(before, r, &p, &len)) { fold_error(f, "no before image"); goto done; }
            if (parse_image(f, p, len, bv, bs) < 0) goto done;
        }
        if (op == 0) {  /* insert: every column, absent ones NULL */
            for (Py_ssize_t j = 0; j < nk; j++) kv[j] = &av[f->key_idx[j]];
            if (encode_key(f, kv, &f->scratch, &f->scratch_cap, &len) < 0
                    || (k = state_of(f, f->scratch, len, &created)) < 0) goto done;
            set_state(f, k, &cur, 0, 1);
            for (Py_ssize_t c = 0; c < nc; c++) {
                f->vals[k * nc + c] = av[c];
                f->pres[k * nc + c] = 1;
            }
        } else if (op == 2) {  /* delete */
            for (Py_ssize_t j = 0; j < nk; j++) kv[j] = &bv[f->key_idx[j]];
            if (encode_key(f, kv, &f->scratch, &f->scratch_cap, &len) < 0
                    || (k = state_of(f, f->scratch, len, &created)) < 0) goto done;
            set_state(f, k, &cur, 1, 1);
            for (Py_ssize_t c = 0; c < nc; c++) {
                f->vals[k * nc + c] = null_val;
                f->pres[k * nc + c] = 0;
            }
        } else {  /* update */
            Py_ssize_t oldlen, newlen;
            for (Py_ssize_t j = 0; j < nk; j++) kv[j] = &bv[f->key_idx[j]];
            if (encode_key(f, kv, &f->prev, &f->prev_cap, &oldlen) < 0) goto done;
            for (Py_ssize_t j = 0; j < nk; j++) {
                Py_ssize_t x = f->key_idx[j];
                mix[j] = as[x] ? av[x] : bv[x];
                kv[j] = &mix[j];
            }
            if (encode_key(f, kv, &f->scratch, &f->scratch_cap, &newlen) < 0) goto done;
            if (oldlen != newlen || memcmp(f->prev, f->scratch, (size_t)newlen) != 0) {
                /* a key move: delete the old key, upsert the new one with a full row */
                if ((k = state_of(f, f->prev, oldlen, &created)) < 0) goto done;
                set_state(f, k, &cur, 1, 1);
                for (Py_ssize_t c = 0; c < nc; c++) {
                    f->vals[k * nc + c] = null_val;
                    f->pres[k * nc + c] = 0;
                }
                if ((k = state_of(f, f->scratch, newlen, &created)) < 0) goto done;
                set_state(f, k, &cur, 0, 1);
                for (Py_ssize_t c = 0; c < nc; c++) {
                    f->vals[k * nc + c] = as[c] ? av[c] : bv[c];
                    f->pres[k * nc + c] = (uint8_t)(as[c] || bs[c]);
                }
                continue;
            }
            k = state_of(f, f->scratch, newlen, &created);
            if (k < 0) goto done;
            if (created) {
                set_state(f, k, &cur, 0, 0);
                for (Py_ssize_t c = 0; c < nc; c++) {
                    f->vals[k * nc + c] = null_val;
                    f->pres[k * nc + c] = 0;
                }
            } else {
                set_state(f, k, &cur, 0, f->st[k].full);
            }
            for (Py_ssize_t c = 0; c < nc; c++) {
                if (as[c]) {
                    f->vals[k * nc + c] = av[c];
                    f->pres[k * nc + c] = 1;
                }
            }
        }
    }
    rc = 0;
done:
    PyMem_RawFree(bv); PyMem_RawFree(av); PyMem_RawFree(bs); PyMem_RawFree(as);
    PyMem_RawFree(kv); PyMem_RawFree(mix);
    return rc;
}

PyObject *fold_scd1(PyObject *mod, PyObject *args) {
    Py_buffer opsv;
    PyObject *seqs, *tst, *bt, *at, *keys, *cols, *trunc, *result = NULL;
    Py_ssize_t n;
    (void)mod;
    if (!PyArg_ParseTuple(args, "ny*OOOOO!O!O", &n, &opsv, &seqs, &tst, &bt, &at,
                          &PyTuple_Type, &keys, &PyTuple_Type, &cols, &trunc))
        return NULL;
    Fold f;
    memset(&f, 0, sizeof f);
    Arr sa[4], tsa, ba, aa;
    Arr *sq[4] = {&sa[0], &sa[1], &sa[2], &sa[3]};
    int got = 0;  /* arrays acquired (released at the end) */
    memset(sa, 0, sizeof sa); memset(&tsa, 0, sizeof tsa);
    memset(&ba, 0, sizeof ba); memset(&aa, 0, sizeof aa);
    int64_t cut[4];
    int have_cut = trunc != Py_None;
    State min_seq;
    int have_min = 0;
    if (opsv.len < n) { PyErr_SetString(PyExc_ValueError, "fold: ops shorter than n"); goto done; }
    if (have_cut && !PyArg_ParseTuple(trunc, "LLLL", &cut[0], &cut[1], &cut[2], &cut[3]))
        goto done;
    if (!PyTuple_Check(seqs) || PyTuple_GET_SIZE(seqs) != 4) {
        PyErr_SetString(PyExc_TypeError, "fold: seqs must be 4 arrays");
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        got = i + 1;
        if (get_arr(PyTuple_GET_ITEM(seqs, i), &sa[i]) < 0) goto done;
    }
    got = 5;
    if (get_arr(tst, &tsa) < 0) goto done;
    got = 6;
    if (get_arr(bt, &ba) < 0) goto done;
    got = 7;
    if (get_arr(at, &aa) < 0) goto done;
    f.nc = PyTuple_GET_SIZE(cols);
    f.nk = PyTuple_GET_SIZE(keys);
    f.name = PyMem_RawCalloc((size_t)(f.nc + f.nk + 1), sizeof(char *));
    f.name_len = PyMem_RawCalloc((size_t)(f.nc + f.nk + 1), sizeof(Py_ssize_t));
    f.key_idx = PyMem_RawCalloc((size_t)(f.nk + 1), sizeof(Py_ssize_t));
    if (!f.name || !f.name_len || !f.key_idx) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t c = 0; c < f.nc; c++) {
        PyObject *b = PyTuple_GET_ITEM(cols, c);
        if (!PyBytes_Check(b)) { PyErr_SetString(PyExc_TypeError, "fold: names are bytes"); goto done; }
        f.name[c] = PyBytes_AS_STRING(b); f.name_len[c] = PyBytes_GET_SIZE(b);
    }
    f.nn = f.nc;
    for (Py_ssize_t j = 0; j < f.nk; j++) {
        PyObject *b = PyTuple_GET_ITEM(keys, j);
        if (!PyBytes_Check(b)) { PyErr_SetString(PyExc_TypeError, "fold: names are bytes"); goto done; }
        Py_ssize_t i = name_index(&f, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), 0);
        if (i < 0) {
            i = f.nn++;
            f.name[i] = PyBytes_AS_STRING(b); f.name_len[i] = PyBytes_GET_SIZE(b);
        }
        f.key_idx[j] = i;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS  /* the buffers are held; a driver applies tables in threads */
    rc = fold_records(&f, n, (const int8_t *)opsv.buf, sq, &tsa, &ba, &aa,
                      have_cut ? cut : NULL, &min_seq, &have_min);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        if (f.nomem) PyErr_NoMemory();
        else PyErr_SetString(PyExc_ValueError, f.err[0] ? f.err : "fold: failed");
        goto done;
    }
    result = build_result(&f, have_min ? &min_seq : NULL);
done:
    for (int i = 0; i < 4 && i < got; i++) release_arr(&sa[i]);
    if (got >= 5) release_arr(&tsa);
    if (got >= 6) release_arr(&ba);
    if (got >= 7) release_arr(&aa);
    PyBuffer_Release(&opsv);
    while (f.arena) { Block *b = f.arena; f.arena = b->next; PyMem_RawFree(b); }
    PyMem_RawFree(f.name); PyMem_RawFree(f.name_len); PyMem_RawFree(f.key_idx);
    PyMem_RawFree(f.keys); PyMem_RawFree(f.scratch); PyMem_RawFree(f.prev); PyMem_RawFree(f.st);
    PyMem_RawFree(f.vals); PyMem_RawFree(f.pres); PyMem_RawFree(f.slots);
    return result;
}
