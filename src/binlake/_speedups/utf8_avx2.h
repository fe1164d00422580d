/* UTF-8 -> str with AVX2, for the x86 CPUs without AVX-512 VBMI2 (AMD Zen 1-3, Intel
 * before Ice Lake, most cloud machines of those years).
 *
 * Why: without it, every long text on such a CPU goes to CPython's decoder, one character
 * at a time. Same three passes as utf8.c's AVX-512 code, with
 * what AVX2 has:
 *   scan and validate, in one pass 32 bytes at a time: characters (bytes that are not
 *            10xxxxxx), the widest lead, and Keiser and Lemire's three lookups per byte pair
 *            (utf8.c's tables);
 *   convert  32-byte blocks, 8 bytes at a time: the characters that start in those 8 bytes
 *            get their 4 first bytes gathered into 32-bit lanes by one byte shuffle of a
 *            16-byte load (a 256-entry table of shuffles, by 8 bits of the lead mask), and
 *            the code points are assembled with two multiply-adds and a variable shift, as
 *            in utf8.c.
 *   both     for a column whose values keep to one kind (utf8_str_hinted): the conversion
 *            with each block's check folded in (utf8_convert_checked_avx2).
 * The steps advance 8 bytes whatever the characters: a character that runs into the next
 * step is read whole in this one (the loads go up to 16 bytes past the block's 24th byte,
 * which is why the last 48 bytes take the scalar loop), and the next step passes over its
 * continuation bytes as they are not leads. So no step waits for the previous one to know
 * where it starts, and nothing goes through memory but the text and the result.
 *
 * A part of utf8.c, included inside its x86 block (it uses utf8.c's tables). */
#ifndef BINLAKE_SPEEDUPS_UTF8_AVX2_H
#define BINLAKE_SPEEDUPS_UTF8_AVX2_H

#define AVX2_TARGET __attribute__((target("avx2,popcnt")))

/* GATHER[m]: for the characters that start at the set bits of m (8 bytes of lead flags),
   byte 4j+b is the index of character j's byte b (its position + b): one byte shuffle puts
   each character's first 4 bytes in a 32-bit lane. */
static uint8_t UTF8_GATHER[256][32] __attribute__((aligned(32)));

/* JSON escaping of 8 bytes whose quotes and backslashes are flagged by m: ESC_SHUF[m] takes
   byte b to its place (0x80, a zero, where a backslash goes before it), ESC_BSL[m] is the
   backslashes; 8 + popcount(m) bytes come out. */
static uint8_t ESC_SHUF[256][16] __attribute__((aligned(16)));
static uint8_t ESC_BSL[256][16] __attribute__((aligned(16)));

static void utf8_avx2_tables_init(void) {
    for (int m = 0; m < 256; m++) {
        int k = 0;
        memset(ESC_SHUF[m], 0x80, 16);
        memset(ESC_BSL[m], 0, 16);
        for (int b = 0; b < 8; b++) {
            if (m & (1 << b)) ESC_BSL[m][k++] = '\\';
            ESC_SHUF[m][k++] = (uint8_t)b;
        }
    }
    for (int m = 0; m < 256; m++) {
        int j = 0;
        memset(UTF8_GATHER[m], 0x80, 32);  /* lanes past the characters: zeros */
        for (int b = 0; b < 8; b++)
            if (m & (1 << b)) {
                for (int k = 0; k < 4; k++) UTF8_GATHER[m][4 * j + k] = (uint8_t)(b + k);
                j++;
            }
    }
}

/* The 32 bytes before each byte of `cur` by k (1-3), the first k from the end of `prev`. */
#define U8_BEFORE_AVX2(cur, prev, k) \
    _mm256_alignr_epi8((cur), _mm256_permute2x128_si256((prev), (cur), 0x21), 16 - (k))

/* The check of utf8_valid_long's method (see utf8.c), 32 bytes at a time: its constants,
   loaded once per text. */
typedef struct {
    __m256i nib, prev_high, prev_low, this_high, tail_max, due3, due4, high;
} U8CheckAvx2;

AVX2_TARGET static inline __attribute__((always_inline)) void u8check_avx2_init(U8CheckAvx2 *c) {
    c->nib = _mm256_set1_epi8(0x0F);
    c->prev_high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)U8_PREV_HIGH));
    c->prev_low = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)U8_PREV_LOW));
    c->this_high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)U8_THIS_HIGH));
    /* a block's last 3 bytes start a character the next block must finish (lead F0+ at 29,
       E0+ at 30, C0+ at 31): the bytes above these */
    c->tail_max = _mm256_setr_epi8(
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, (char)0xEF, (char)0xDF, (char)0xBF);
    c->due3 = _mm256_set1_epi8(0xE0 - 0x80);
    c->due4 = _mm256_set1_epi8(0xF0 - 0x80);
    c->high = _mm256_set1_epi8((char)0x80);
}

/* The errors of block `cur` (not all ASCII) given the 32 bytes before it, `prev`: Keiser
   and Lemire's three lookups per byte pair (utf8.c's tables), and where a byte must be a
   3rd or 4th one. Zero if none. */
AVX2_TARGET static inline __attribute__((always_inline)) __m256i u8check_avx2_errors(
        const U8CheckAvx2 *c, __m256i cur, __m256i prev) {
    __m256i p1 = U8_BEFORE_AVX2(cur, prev, 1), p2 = U8_BEFORE_AVX2(cur, prev, 2),
            p3 = U8_BEFORE_AVX2(cur, prev, 3);
    __m256i sc = _mm256_and_si256(
        _mm256_and_si256(
            _mm256_shuffle_epi8(c->prev_high, _mm256_and_si256(_mm256_srli_epi16(p1, 4), c->nib)),
            _mm256_shuffle_epi8(c->prev_low, _mm256_and_si256(p1, c->nib))),
        _mm256_shuffle_epi8(c->this_high, _mm256_and_si256(_mm256_srli_epi16(cur, 4), c->nib)));
    /* where this byte must be a 3rd or 4th one: two back is E0+ or three back is F0+ */
    __m256i due = _mm256_and_si256(
        _mm256_or_si256(_mm256_subs_epu8(p2, c->due3), _mm256_subs_epu8(p3, c->due4)), c->high);
    return _mm256_xor_si256(due, sc);
}

/* Where a check stands after the blocks seen so far. */
typedef struct {
    __m256i prev;    /* the last block (zeros before the first) */
    __m256i err;     /* any error so far: not zero */
    __m256i mx;      /* the byte-wise maximum of the blocks that are not ASCII */
    int incomplete;  /* the last block ends inside a character the next must finish */
} U8CheckState;

AVX2_TARGET static inline __attribute__((always_inline)) void u8check_avx2_start(U8CheckState *st) {
    st->prev = st->err = st->mx = _mm256_setzero_si256();
    st->incomplete = 0;
}

/* One more 32-byte block checked: 0 if the text cannot be valid any more (an ASCII block
   after an unfinished character), else 1 (u8check_avx2_valid says at the end). */
AVX2_TARGET static inline __attribute__((always_inline)) int u8check_avx2_block(
        const U8CheckAvx2 *c, U8CheckState *st, __m256i cur) {
    if (_mm256_movemask_epi8(cur) == 0) {  /* ASCII: only an unfinished character before */
        if (st->incomplete) return 0;
        st->prev = cur;
        return 1;
    }
    st->mx = _mm256_max_epu8(st->mx, cur);
    st->err = _mm256_or_si256(st->err, u8check_avx2_errors(c, cur, st->prev));
    __m256i over = _mm256_subs_epu8(cur, c->tail_max);
    st->incomplete = !_mm256_testz_si256(over, over);
    st->prev = cur;
    return 1;
}

/* The blocks of s[from:n] checked (from: where the blocks checked so far end), the last
   one read from a zero-padded copy; with `leads`, the characters in them counted there
   (bytes that are not 10xxxxxx). 0 if the text cannot be valid. */
AVX2_TARGET static inline __attribute__((always_inline)) int u8check_avx2_run(
        const U8CheckAvx2 *c, U8CheckState *st, const uint8_t *s, Py_ssize_t from,
        Py_ssize_t n, Py_ssize_t *leads) {
    const __m256i not_cont = _mm256_set1_epi8(-65);  /* signed b > -65: 0x00-0x7F, 0xC0-0xFF */
    uint8_t last[32];
    for (Py_ssize_t i = from; i < n; i += 32) {
        __m256i cur;
        if (i + 32 <= n) {
            cur = _mm256_loadu_si256((const __m256i *)(s + i));
        } else {
            memset(last, 0, sizeof last);
            memcpy(last, s + i, (size_t)(n - i));
            cur = _mm256_loadu_si256((const __m256i *)last);
            if (leads != NULL) *leads -= 32 - (n - i);  /* the padding's zeros count below */
        }
        if (leads != NULL)
            *leads += __builtin_popcount((unsigned)_mm256_movemask_epi8(_mm256_cmpgt_epi8(cur, not_cont)));
        if (!u8check_avx2_block(c, st, cur)) return 0;
    }
    return 1;
}

/* The end acts as ASCII: no character may be left unfinished (a padded last block has
   zeros past the end, which the pairs already refuse after a lead). */
AVX2_TARGET static inline __attribute__((always_inline)) int u8check_avx2_valid(const U8CheckState *st) {
    return !st->incomplete && _mm256_testz_si256(st->err, st->err);
}

/* The widest lead among bytes whose byte-wise maximum is mx, as a class (utf8_top_of). */
AVX2_TARGET static inline unsigned u8_top_of_avx2(__m256i mx) {
#define HAS_AT_LEAST(t) (_mm256_movemask_epi8(_mm256_cmpeq_epi8( \
        _mm256_max_epu8(mx, _mm256_set1_epi8((char)(t))), mx)) != 0)
    return HAS_AT_LEAST(0xF0) ? 0xF0 : HAS_AT_LEAST(0xC4) ? 0xC4 : HAS_AT_LEAST(0x80) ? 0x80 : 0;
#undef HAS_AT_LEAST
}

/* 1 if the bytes are strict UTF-8 (as Python's decoder), 0 if not: utf8_valid_long's
   method (see utf8.c) 32 bytes at a time. With `chars` set, also the character count and
   the widest lead (one read of the text). */
AVX2_TARGET static inline __attribute__((always_inline)) int utf8_valid_avx2_scan(
        const char *text, Py_ssize_t n, Py_ssize_t *chars, unsigned *maxbyte) {
    U8CheckAvx2 c;
    U8CheckState st;
    u8check_avx2_init(&c);
    u8check_avx2_start(&st);
    Py_ssize_t leads = 0;
    if (!u8check_avx2_run(&c, &st, (const uint8_t *)text, 0, n, chars != NULL ? &leads : NULL)
        || !u8check_avx2_valid(&st))
        return 0;
    if (chars != NULL) {
        *maxbyte = u8_top_of_avx2(st.mx);
        *chars = leads;
    }
    return 1;
}

AVX2_TARGET static int utf8_valid_avx2(const char *text, Py_ssize_t n) {
    return utf8_valid_avx2_scan(text, n, NULL, NULL);
}

/* The character count and the widest lead and the check, in one pass (as utf8.c's
   utf8_scan_valid_512): 1 if valid (*chars, *maxbyte set), 0 if not (they are not). */
AVX2_TARGET static int utf8_scan_valid_avx2(const char *text, Py_ssize_t n, Py_ssize_t *chars,
                                            unsigned *maxbyte) {
    return utf8_valid_avx2_scan(text, n, chars, maxbyte);
}

/* One valid character at s (its lead byte first): the code point; *len its bytes. */
static inline Py_UCS4 utf8_scalar_char(const uint8_t *s, int *len) {
    uint8_t b = s[0];
    if (b < 0x80) { *len = 1; return b; }
    if (b < 0xE0) { *len = 2; return ((Py_UCS4)(b & 0x1F) << 6) | (s[1] & 0x3F); }
    if (b < 0xF0) {
        *len = 3;
        return ((Py_UCS4)(b & 0x0F) << 12) | ((Py_UCS4)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *len = 4;
    return ((Py_UCS4)(b & 0x07) << 18) | ((Py_UCS4)(s[1] & 0x3F) << 12)
           | ((Py_UCS4)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* Code points of lanes [0, m) of cp (8 x 32 bits) stored at out[o] as characters of `kind`;
   `room`: all 8 lanes fit (the ones past m are overwritten by the next characters). */
AVX2_TARGET static inline void utf8_store8(void *out, Py_ssize_t o, int kind, __m256i cp, int m,
                                           int room) {
    if (kind == 4) {
        if (room) { _mm256_storeu_si256((__m256i *)((uint32_t *)out + o), cp); return; }
        uint32_t tmp[8];
        _mm256_storeu_si256((__m256i *)tmp, cp);
        memcpy((uint32_t *)out + o, tmp, (size_t)m * 4);
        return;
    }
    /* code points below 0x10000 (kind 2) or 0x100 (kind 1): pack the lanes in order */
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(cp, cp), 0x08);  /* words 0-7 */
    __m128i x = _mm256_castsi256_si128(w);
    if (kind == 2) {
        if (room) { _mm_storeu_si128((__m128i *)((uint16_t *)out + o), x); return; }
        uint16_t tmp[8];
        _mm_storeu_si128((__m128i *)tmp, x);
        memcpy((uint16_t *)out + o, tmp, (size_t)m * 2);
        return;
    }
    x = _mm_packus_epi16(x, x);
    if (room) { _mm_storel_epi64((__m128i *)((uint8_t *)out + o), x); return; }
    uint8_t tmp[16];
    _mm_storeu_si128((__m128i *)tmp, x);
    memcpy((uint8_t *)out + o, tmp, (size_t)m);
}

/* The 32 bytes of an ASCII block stored at out[o] as characters of `kind`. */
AVX2_TARGET static inline void utf8_store_ascii_avx2(void *out, Py_ssize_t o, int kind, __m256i v) {
    if (kind == 1) {
        _mm256_storeu_si256((__m256i *)((uint8_t *)out + o), v);
    } else if (kind == 2) {
        uint16_t *d = (uint16_t *)out + o;
        _mm256_storeu_si256((__m256i *)d, _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v)));
        _mm256_storeu_si256((__m256i *)(d + 16), _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v, 1)));
    } else {
        uint32_t *d = (uint32_t *)out + o;
        __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
        _mm256_storeu_si256((__m256i *)d, _mm256_cvtepu8_epi32(lo));
        _mm256_storeu_si256((__m256i *)(d + 8), _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
        _mm256_storeu_si256((__m256i *)(d + 16), _mm256_cvtepu8_epi32(hi));
        _mm256_storeu_si256((__m256i *)(d + 24), _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
    }
}

/* The code points of the (up to 8) characters that start in the 8 bytes at p (lead flags
   `lm`): they lie within its first 11 bytes, one 16-byte load broadcast to both halves. */
AVX2_TARGET static inline __attribute__((always_inline)) __m256i utf8_step(const uint8_t *p,
                                                                          unsigned lm) {
    const __m256i nib_lo = _mm256_set1_epi32(0x0F);
    const __m256i lane_hi = _mm256_set1_epi32((int)0x80808000);  /* bytes 1-3: look up zero */
    const __m256i cont_bits = _mm256_set1_epi32(0x3F3F3F00);
    const __m256i lead_t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)UTF8_LEAD));
    const __m256i shift_t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)UTF8_SHIFT));
    const __m256i weights8 = _mm256_set1_epi32(0x01400140);   /* bytes 64, 1, 64, 1 */
    const __m256i weights16 = _mm256_set1_epi32(0x00011000);  /* words 4096, 1 */
    __m256i w = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
    __m256i g = _mm256_shuffle_epi8(w, _mm256_load_si256((const __m256i *)UTF8_GATHER[lm]));
    /* lane j: bytes b0 b1 b2 b3; the lead's high nibble in byte 0, 0x80 above it */
    __m256i nb = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(g, 4), nib_lo), lane_hi);
    __m256i keep = _mm256_or_si256(_mm256_shuffle_epi8(lead_t, nb), cont_bits);
    /* (64*b0 + b1) * 4096 + (64*b2 + b3), payload bits only, >> 6 per missing byte */
    __m256i t = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(g, keep), weights8),
                                  weights16);
    return _mm256_srlv_epi32(t, _mm256_shuffle_epi8(shift_t, nb));
}

/* The characters that start in the 32-byte block v (not ASCII) at s into out from *o (room
   for `room`): 0, or -1 if they would not fit. */
AVX2_TARGET static inline __attribute__((always_inline)) int utf8_convert_block_avx2(
        const uint8_t *s, __m256i v, void *out, Py_ssize_t *op, const int kind, Py_ssize_t room) {
    const __m256i not_cont = _mm256_set1_epi8(-65);
    uint32_t leads = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(v, not_cont));
    Py_ssize_t o = *op, count = __builtin_popcount(leads);
    if (o + count > room) return -1;
    if (o + count + 8 <= room) {  /* every step may store 8 lanes (the ones past its
                                     characters are overwritten by the next) */
#define UTF8_STEP(q) do { unsigned lm = (leads >> (q)) & 0xFF; \
        utf8_store8(out, o, kind, utf8_step(s + (q), lm), 8, 1); \
        o += __builtin_popcount(lm); } while (0)
        UTF8_STEP(0); UTF8_STEP(8); UTF8_STEP(16); UTF8_STEP(24);
#undef UTF8_STEP
    } else {  /* near the end of `out`: only the lanes that are characters */
        for (int q = 0; q < 32; q += 8) {
            unsigned lm = (leads >> q) & 0xFF;
            int m = __builtin_popcount(lm);
            utf8_store8(out, o, kind, utf8_step(s + q, lm), m, o + 8 <= room);
            o += m;
        }
    }
    *op = o;
    return 0;
}

/* utf8_convert_avx2 for one `kind` (a constant where it is inlined: no test per step). */
AVX2_TARGET static inline __attribute__((always_inline)) int utf8_convert_avx2_kind(
        const uint8_t *s, Py_ssize_t n, void *out, const int kind, Py_ssize_t chars) {
    Py_ssize_t i = 0, o = 0;
    for (; i + 48 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(s + i));
        if (_mm256_movemask_epi8(v) == 0) {  /* ASCII */
            if (o + 32 > chars) return -1;
            utf8_store_ascii_avx2(out, o, kind, v);
            o += 32;
            continue;
        }
        if (utf8_convert_block_avx2(s + i, v, out, &o, kind, chars) < 0) return -1;
    }
    while (i < n && (s[i] & 0xC0) == 0x80) i++;  /* the rest of a character begun above */
    while (i < n) {
        int len;
        if (o >= chars) return -1;
        if (s[i] >= 0x80 && n - i < (s[i] < 0xE0 ? 2 : s[i] < 0xF0 ? 3 : 4)) return -1;
        Py_UCS4 c = utf8_scalar_char(s + i, &len);
        PyUnicode_WRITE(kind, out, o, c);
        o++;
        i += len;
    }
    return o == chars ? 0 : -1;
}

/* Code points into `out` (a str of `kind` with room for `chars`) from bytes that
   utf8_valid_avx2 accepted; 0, or -1 if the character count does not add up (never for
   valid bytes: a guard that keeps every store inside `out`). */
AVX2_TARGET static int utf8_convert_avx2(const uint8_t *s, Py_ssize_t n, void *out, int kind,
                                         Py_ssize_t chars) {
    if (kind == 4) return utf8_convert_avx2_kind(s, n, out, 4, chars);
    if (kind == 2) return utf8_convert_avx2_kind(s, n, out, 2, chars);
    return utf8_convert_avx2_kind(s, n, out, 1, chars);
}

/* utf8_convert_checked_avx2 for one `kind`: utf8_convert_avx2_kind's steps with the scan's
   check of each 32-byte block folded in (the block is in a register already), then the
   last bytes (under 48) checked as the scan checks them and converted one by one. */
AVX2_TARGET static inline __attribute__((always_inline)) Py_ssize_t utf8_convert_checked_avx2_kind(
        const uint8_t *s, Py_ssize_t n, void *out, const int kind, Py_ssize_t room,
        unsigned *top) {
    U8CheckAvx2 c;
    U8CheckState st;
    u8check_avx2_init(&c);
    u8check_avx2_start(&st);
    Py_ssize_t i = 0, o = 0;
    for (; i + 48 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(s + i));
        if (!u8check_avx2_block(&c, &st, v)) return -1;
        if (_mm256_movemask_epi8(v) == 0) {  /* ASCII */
            if (o + 32 > room) return -1;
            utf8_store_ascii_avx2(out, o, kind, v);
            o += 32;
        } else if (utf8_convert_block_avx2(s + i, v, out, &o, kind, room) < 0) {
            return -1;
        }
    }
    /* the last bytes (under 48) checked on the same grid */
    if (!u8check_avx2_run(&c, &st, s, i, n, NULL) || !u8check_avx2_valid(&st)) return -1;
    /* valid: the last characters one by one (the first bytes may finish one begun above) */
    while (i < n && (s[i] & 0xC0) == 0x80) i++;
    while (i < n) {
        int len;
        if (o >= room) return -1;
        Py_UCS4 ch = utf8_scalar_char(s + i, &len);
        PyUnicode_WRITE(kind, out, o, ch);  /* (cut to `kind`: the caller sees it in *top) */
        o++;
        i += len;
    }
    *top = u8_top_of_avx2(st.mx);
    return o;
}

/* Both passes in one (utf8.c's utf8_convert_checked, with AVX2), for text whose str is
   expected to be of `kind`: code points into `out` (room for `room`, at least n for any
   valid text), the bytes checked as they go; the character count (*top: their widest
   lead), or -1 if the bytes are not strict UTF-8. Why: the scan's read of a long value is
   otherwise a pass of its own. */
AVX2_TARGET static Py_ssize_t utf8_convert_checked_avx2(const uint8_t *s, Py_ssize_t n, void *out,
                                                       int kind, Py_ssize_t room, unsigned *top) {
    if (kind == 4) return utf8_convert_checked_avx2_kind(s, n, out, 4, room, top);
    if (kind == 2) return utf8_convert_checked_avx2_kind(s, n, out, 2, room, top);
    return utf8_convert_checked_avx2_kind(s, n, out, 1, room, top);
}

/* JSON string escaping of valid UTF-8 from s[0:n] into *dp, 16 bytes at a time while 16
   are left, no control character comes (those take the caller's scalar path: longer
   escapes) and `limit` leaves room for 64 bytes; returns the bytes consumed. Each 8 bytes
   with a '"' or '\\' are spread by one byte shuffle from a table (utf8.c's AVX-512 run
   does 32 at a time with an expand, which AVX2 does not have). Why: a JSON document in a
   text column has a quote every few bytes, and the 16-byte loop stopped at each one. */
AVX2_TARGET static Py_ssize_t json_escape_run_avx2(const unsigned char *s, Py_ssize_t n,
                                                   unsigned char **dp, const unsigned char *limit) {
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1F);
    unsigned char *d = *dp;
    Py_ssize_t i = 0;
    while (i + 16 <= n && limit - d >= 64) {
        __m128i x = _mm_loadu_si128((const __m128i *)(s + i));
        /* unsigned x <= 0x1F as min(x, 0x1F) == x: bytes >= 0x80 are plain here */
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x))) break;
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                              _mm_cmpeq_epi8(x, bslash)));
        if (q == 0) {
            _mm_storeu_si128((__m128i *)d, x);
            d += 16;
        } else {
            unsigned lo = q & 0xFF, hi = q >> 8;
            _mm_storeu_si128((__m128i *)d, _mm_or_si128(
                _mm_shuffle_epi8(x, _mm_load_si128((const __m128i *)ESC_SHUF[lo])),
                _mm_load_si128((const __m128i *)ESC_BSL[lo])));
            d += 8 + __builtin_popcount(lo);
            _mm_storeu_si128((__m128i *)d, _mm_or_si128(
                _mm_shuffle_epi8(_mm_srli_si128(x, 8), _mm_load_si128((const __m128i *)ESC_SHUF[hi])),
                _mm_load_si128((const __m128i *)ESC_BSL[hi])));
            d += 8 + __builtin_popcount(hi);
        }
        i += 16;
    }
    *dp = d;
    return i;
}

#endif  /* BINLAKE_SPEEDUPS_UTF8_AVX2_H */
