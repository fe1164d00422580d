/* JSON text buffers: strict UTF-8 checking, escaping, base64, integers.
 *
 * Part of _speedups.c: one translation unit, these parts included in order (every
 * function static), so the parts read as modules without a C API between them. */
#ifndef BINLAKE_SPEEDUPS_JSON_TEXT_H
#define BINLAKE_SPEEDUPS_JSON_TEXT_H

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
#ifdef BINLAKE_UTF8_SIMD
    if (n >= UTF8_SIMD_MIN && g_utf8_simd) return utf8_valid_long((const char *)s, n);
#endif
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

/* utf8_check(bytes) -> bool: the JSON writer's UTF-8 check, for tests. */
static PyObject *utf8_check(PyObject *mod, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    int ok = utf8_valid((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

/* A byte of valid UTF-8 copied as is: anything but control characters, '"' and '\\'. */
#define PLAIN(c) ((c) >= 0x20 && (c) != '"' && (c) != '\\')

/* The one-letter escapes of json.dumps ('\\n' ...); 0: written as \\u00XX. */
static const char SHORT_ESCAPE[128] = {
    ['"'] = '"', ['\\'] = '\\', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't', ['\b'] = 'b', ['\f'] = 'f',
};

#ifdef BINLAKE_UTF8_SIMD
/* 8 bytes of x whose quotes and backslashes are flagged by m, escaped at d (a 16-byte
   store): the end of what was written. */
AVX2_TARGET static inline __attribute__((always_inline)) unsigned char *escape8_avx2(
        unsigned char *d, __m128i x, unsigned m) {
    _mm_storeu_si128((__m128i *)d, _mm_or_si128(
        _mm_shuffle_epi8(x, _mm_load_si128((const __m128i *)ESC_SHUF[m])),
        _mm_load_si128((const __m128i *)ESC_BSL[m])));
    return d + 8 + __builtin_popcount(m);
}

/* put_utf8_escaped's AVX2 path: the UTF-8 check and the escaping in one read of the text.
   Why: otherwise a long text is read twice, once by utf8_valid and once to escape it, and
   each pass costs about as much as the other. Each 32-byte
   block is checked (u8check_avx2_block), then stored as is, or spread 8 bytes at a time
   around its quotes and backslashes (json_escape_run_avx2's tables), or, with a control
   character in it, escaped byte by byte. The last part block is only checked here (from
   a padded copy); the caller escapes it. Bytes of an invalid text may be written: the
   caller drops them. 1: valid (*ip, *dp: where the whole blocks end), 0: not UTF-8, -1:
   no memory. */
AVX2_TARGET static int put_utf8_escaped_avx2(Buf *o, const unsigned char *s, Py_ssize_t n,
                                             Py_ssize_t *ip, unsigned char **dp) {
    U8CheckAvx2 c;
    U8CheckState st;
    u8check_avx2_init(&c);
    u8check_avx2_start(&st);
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\');
    const __m256i ctl = _mm256_set1_epi8(0x1F);
    unsigned char *d = *dp;
    Py_ssize_t i = 0;
    for (; i + 32 <= n; i += 32) {
        ROOM(192);  /* 32 bytes escaped as \u00XX at most */
        __m256i x = _mm256_loadu_si256((const __m256i *)(s + i));
        if (!u8check_avx2_block(&c, &st, x)) return 0;
        /* unsigned x <= 0x1F as min(x, 0x1F) == x: bytes >= 0x80 are plain here */
        unsigned cm = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(x, ctl), x));
        unsigned q = (unsigned)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(x, quote),
                                                                    _mm256_cmpeq_epi8(x, bslash)));
        if ((q | cm) == 0) {
            _mm256_storeu_si256((__m256i *)d, x);
            d += 32;
        } else if (cm == 0) {
            __m128i lo = _mm256_castsi256_si128(x), hi = _mm256_extracti128_si256(x, 1);
            d = escape8_avx2(d, lo, q & 0xFF);
            d = escape8_avx2(d, _mm_srli_si128(lo, 8), (q >> 8) & 0xFF);
            d = escape8_avx2(d, hi, (q >> 16) & 0xFF);
            d = escape8_avx2(d, _mm_srli_si128(hi, 8), q >> 24);
        } else {
            for (int k = 0; k < 32; k++) {
                unsigned char b = s[i + k];
                if (PLAIN(b)) { *d++ = b; continue; }
                *d++ = '\\';
                char e = SHORT_ESCAPE[b];
                if (e) *d++ = e;
                else { *d++ = 'u'; *d++ = '0'; *d++ = '0'; *d++ = HEX[b >> 4]; *d++ = HEX[b & 15]; }
            }
        }
    }
    if (!u8check_avx2_run(&c, &st, s, i, n, NULL) || !u8check_avx2_valid(&st)) return 0;
    *ip = i;
    *dp = d;
    return 1;
}
#endif

static int put_utf8_escaped(Buf *o, const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
#ifdef BINLAKE_UTF8_SIMD
    int checked = g_utf8_simd == UTF8_AVX2 && n >= UTF8_SIMD_MIN;  /* in the one pass below */
#else
    int checked = 0;
#endif
    if (!checked && !utf8_valid(s, n)) return 0;
    if (buf_reserve(o, n + 16) < 0) return -1;
    unsigned char *d = (unsigned char *)o->p + o->len;
#ifdef BINLAKE_UTF8_SIMD
    if (checked) {
        int ok = put_utf8_escaped_avx2(o, s, n, &i, &d);
        if (ok <= 0) return ok;
    }
#endif
    for (;;) {
#ifdef BINLAKE_UTF8_SIMD
        if (g_utf8_simd == UTF8_AVX512) {  /* 64 bytes at a time, quotes and backslashes escaped in place */
            while (i + 32 <= n) {
                ROOM(128);
                Py_ssize_t k = json_escape_run(s + i, n - i, &d, (unsigned char *)o->p + o->cap);
                if (k == 0) break;  /* a control character: the loops below */
                i += k;
            }
        } else if (g_utf8_simd == UTF8_AVX2) {  /* 16 bytes at a time, the same way */
            while (i + 16 <= n) {
                ROOM(128);
                Py_ssize_t k = json_escape_run_avx2(s + i, n - i, &d, (unsigned char *)o->p + o->cap);
                if (k == 0) break;  /* a control character: the loops below */
                i += k;
            }
        }
#endif
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

#endif  /* BINLAKE_SPEEDUPS_JSON_TEXT_H */
