/* UTF-8 bytes -> str with vector code, for long text that is not all ASCII.
 *
 * Why: text columns of real tables mix ASCII with accented letters, CJK and emoji, and
 * CPython decodes such text one character at a time with a branch per byte class; on a
 * table of long texts that is most of the decoding time.
 *
 * How (AVX-512 VBMI2, chosen at run time): one pass validates 64 bytes at a time with
 * three table lookups per byte pair (utf8_valid_long, also the JSON writer's check) and,
 * in the same read, finds the character count and the widest lead byte, which fix the
 * str's length and kind (UCS1/2/4, always the canonical one for valid input); a second
 * takes 64-byte windows, compresses the lead positions, gathers each character's bytes
 * into a 32-bit lane and assembles the code point with two multiply-adds. Once a column's
 * values have kept to one kind, the two are one pass (utf8_str_hinted). A CPU with AVX2
 * but not these runs utf8_avx2.h's version of the same passes (a part of this unit). Anything invalid, a CPU without
 * either or a short string goes to PyUnicode_DecodeUTF8, which gives the exact result or
 * the exact UnicodeDecodeError, so this is a pure speed-up with CPython as the reference.
 *
 * The JSON writer's strict check and escaping of UTF-8 text (put_utf8_escaped) live here
 * too: they share the vector code and its tables.
 *
 * A compilation unit; utf8.h declares what it gives the others. */
#include "common.h"
#include "text.h"
#include "utf8.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Below this length CPython's decoder is as fast (its cost is the object, not the bytes). */
#define UTF8_SIMD_MIN 48

/* The vector code in use, set at import from what the CPU has: 0 none (CPython's decoder),
   1 AVX2 (utf8_avx2.h), 2 AVX-512 VBMI2. BINLAKE_SIMD=0 turns it off, =avx2 stops at AVX2 (native.py applies it). */
#define UTF8_AVX2 1
#define UTF8_AVX512 2
static int g_utf8_simd = 0, g_utf8_cpu = 0;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(BINLAKE_NO_SIMD)
#define BINLAKE_UTF8_SIMD 1
#include <immintrin.h>
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,popcnt,lzcnt,bmi,bmi2")))

static const uint8_t UTF8_IOTA[64] __attribute__((aligned(64))) = {
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
/* byte 4j+b of a 16-lane group: character j (SPREAD) and its byte b (BYTEOFF) */
static uint8_t UTF8_SPREAD[64] __attribute__((aligned(64)));
static uint8_t UTF8_BYTEOFF[64] __attribute__((aligned(64)));
/* By a lead byte's high nibble (8-B cannot lead): the payload bits of the lead and the
   right shift that drops the bytes the character does not have. */
static const uint8_t UTF8_LEAD[16] = {0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F,
                                      0, 0, 0, 0, 0x1F, 0x1F, 0x0F, 0x0F};
static const uint8_t UTF8_SHIFT[16] = {18, 18, 18, 18, 18, 18, 18, 18, 0, 0, 0, 0, 12, 12, 6, 0};
#define BYTE0 0x1111111111111111ULL  /* byte 0 of each 32-bit lane */

static void utf8_tables_init(void) {
    for (int i = 0; i < 64; i++) {
        UTF8_SPREAD[i] = (uint8_t)(i >> 2);
        UTF8_BYTEOFF[i] = (uint8_t)(i & 3);
    }
}

static inline uint64_t utf8_prefix_mask(Py_ssize_t k) {
    return k >= 64 ? ~0ULL : ((1ULL << k) - 1);
}

/* Error classes of a byte pair (previous byte, this byte), as bits: a pair is wrong when the
   three lookups below (previous byte's high nibble, its low nibble, this byte's high
   nibble) share a bit. Bit 7 (two continuations) is the exception: it must be set exactly
   where this byte is the 3rd or 4th of a character. The method is Keiser and Lemire's
   "Validating UTF-8 in less than one instruction per byte" (2021). */
#define U8_SHORT 0x01     /* a lead or ASCII, then not a continuation where one is due */
#define U8_LONG 0x02      /* ASCII, then a continuation */
#define U8_OVER3 0x04     /* E0 then 80-9F: an overlong 3-byte form */
#define U8_LARGE 0x08     /* F4 then 90-BF, F5-FF then 90-BF: above U+10FFFF */
#define U8_SURR 0x10      /* ED then A0-BF: a surrogate */
#define U8_OVER2 0x20     /* C0, C1: an overlong 2-byte form */
#define U8_LARGE80 0x40   /* F5-FF then 80-8F; also F0 then 80-8F (overlong 4-byte form) */
#define U8_CONT2 0x80     /* a continuation, then a continuation */
#define U8_CARRY (U8_SHORT | U8_LONG | U8_CONT2)
static const uint8_t U8_PREV_HIGH[16] = {
    U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG,
    U8_CONT2, U8_CONT2, U8_CONT2, U8_CONT2,
    U8_SHORT | U8_OVER2, U8_SHORT, U8_SHORT | U8_OVER3 | U8_SURR,
    U8_SHORT | U8_LARGE | U8_LARGE80};
static const uint8_t U8_PREV_LOW[16] = {
    U8_CARRY | U8_OVER3 | U8_OVER2 | U8_LARGE80, U8_CARRY | U8_OVER2, U8_CARRY, U8_CARRY,
    U8_CARRY | U8_LARGE, U8_CARRY | U8_LARGE | U8_LARGE80, U8_CARRY | U8_LARGE | U8_LARGE80,
    U8_CARRY | U8_LARGE | U8_LARGE80, U8_CARRY | U8_LARGE | U8_LARGE80,
    U8_CARRY | U8_LARGE | U8_LARGE80, U8_CARRY | U8_LARGE | U8_LARGE80,
    U8_CARRY | U8_LARGE | U8_LARGE80, U8_CARRY | U8_LARGE | U8_LARGE80,
    U8_CARRY | U8_LARGE | U8_LARGE80 | U8_SURR, U8_CARRY | U8_LARGE | U8_LARGE80,
    U8_CARRY | U8_LARGE | U8_LARGE80};
static const uint8_t U8_THIS_HIGH[16] = {
    U8_SHORT, U8_SHORT, U8_SHORT, U8_SHORT, U8_SHORT, U8_SHORT, U8_SHORT, U8_SHORT,
    U8_LONG | U8_OVER2 | U8_CONT2 | U8_OVER3 | U8_LARGE80,
    U8_LONG | U8_OVER2 | U8_CONT2 | U8_OVER3 | U8_LARGE,
    U8_LONG | U8_OVER2 | U8_CONT2 | U8_SURR | U8_LARGE,
    U8_LONG | U8_OVER2 | U8_CONT2 | U8_SURR | U8_LARGE,
    U8_SHORT, U8_SHORT, U8_SHORT, U8_SHORT};

/* The 64 bytes before each byte of `cur` by k (1-3), the first k from the end of `prev`
   (a byte permute of the 128). */
#define U8_BEFORE(cur, prev, k) _mm512_permutex2var_epi8((cur), _mm512_and_si512( \
    _mm512_sub_epi8(_mm512_load_si512((const void *)UTF8_IOTA), _mm512_set1_epi8(k)), \
    _mm512_set1_epi8(127)), (prev))

/* The error bits of the 64 bytes of `cur` (`prev`: the 64 bytes before them), nonzero
   somewhere if a byte pair is wrong or a 3rd/4th byte is missing or extra; a character cut
   at cur's end is not counted here (the caller checks what ends a text). */
AVX512_TARGET static inline __attribute__((always_inline)) __m512i utf8_block_errors(
        __m512i cur, __m512i prev) {
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const __m512i prev_high = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)U8_PREV_HIGH));
    const __m512i prev_low = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)U8_PREV_LOW));
    const __m512i this_high = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)U8_THIS_HIGH));
    __m512i p1 = U8_BEFORE(cur, prev, 1), p2 = U8_BEFORE(cur, prev, 2),
            p3 = U8_BEFORE(cur, prev, 3);
    __m512i sc = _mm512_and_si512(
        _mm512_and_si512(
            _mm512_shuffle_epi8(prev_high, _mm512_and_si512(_mm512_srli_epi16(p1, 4), nib)),
            _mm512_shuffle_epi8(prev_low, _mm512_and_si512(p1, nib))),
        _mm512_shuffle_epi8(this_high, _mm512_and_si512(_mm512_srli_epi16(cur, 4), nib)));
    /* where this byte must be a 3rd or 4th one: two back is E0+ or three back is F0+ */
    __m512i due = _mm512_and_si512(
        _mm512_or_si512(_mm512_subs_epu8(p2, _mm512_set1_epi8(0xE0 - 0x80)),
                        _mm512_subs_epu8(p3, _mm512_set1_epi8(0xF0 - 0x80))),
        _mm512_set1_epi8((char)0x80));
    return _mm512_xor_si512(due, sc);
}

/* Stores the low `take` bytes of an ASCII window as characters of `kind` at out[o]. */
AVX512_TARGET static inline void utf8_store_ascii(void *out, Py_ssize_t o, int kind, __m512i v,
                                                  Py_ssize_t take) {
    if (kind == 1) {
        _mm512_mask_storeu_epi8((uint8_t *)out + o, utf8_prefix_mask(take), v);
    } else if (kind == 2) {
        uint16_t *d = (uint16_t *)out + o;
        _mm512_mask_storeu_epi16(d, (__mmask32)utf8_prefix_mask(take),
                                 _mm512_cvtepu8_epi16(_mm512_castsi512_si256(v)));
        if (take > 32)
            _mm512_mask_storeu_epi16(d + 32, (__mmask32)utf8_prefix_mask(take - 32),
                                     _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(v, 1)));
    } else {
        uint32_t *d = (uint32_t *)out + o;
        __m128i q[4] = {_mm512_extracti32x4_epi32(v, 0), _mm512_extracti32x4_epi32(v, 1),
                        _mm512_extracti32x4_epi32(v, 2), _mm512_extracti32x4_epi32(v, 3)};
        for (int k = 0; k < 4 && take > 16 * k; k++)
            _mm512_mask_storeu_epi32(d + 16 * k, (__mmask16)utf8_prefix_mask(take - 16 * k),
                                     _mm512_cvtepu8_epi32(q[k]));
    }
}

/* A 64-byte block's bytes that start a character the next block must finish (lead F0+
   at 61, E0+ at 62, C0+ at 63) are unsigned greater than these. */
AVX512_TARGET static inline __m512i utf8_tail_max(void) {
    return _mm512_mask_blend_epi8(0xE000000000000000ULL, _mm512_set1_epi8(-1),
        _mm512_set_epi8((char)0xBF, (char)0xDF, (char)0xEF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
}

/* The widest lead among the bytes whose byte-wise maximum is mx, as a class: 0xF0 (a
   character above U+FFFF: UCS-4), 0xC4 (above U+00FF: UCS-2), 0x80 (Latin-1), 0 (ASCII). */
AVX512_TARGET static inline unsigned utf8_top_of(__m512i mx) {
    if (_mm512_cmpge_epu8_mask(mx, _mm512_set1_epi8((char)0xF0))) return 0xF0;
    if (_mm512_cmpge_epu8_mask(mx, _mm512_set1_epi8((char)0xC4))) return 0xC4;
    return _mm512_movepi8_mask(mx) ? 0x80 : 0;
}

/* Code points into `out` (characters of `kind`, room for `room`); the number written, or
   -1 if that would pass `room` or the windows do not fall on characters (never for valid
   bytes: a guard that keeps every store inside `out`).

   check=0: the bytes are valid (utf8_valid_long said so). check=1: the same pass also
   checks them (-1 if not) and sets *top to their widest lead (utf8_top_of); characters
   wider than `kind` are stored cut, which the caller sees in *top. Each window starts at
   a character, so its 64 bytes are checked as if ASCII came before; bytes past the
   characters it takes are checked again as the next window's first ones, and only the
   last window may not end inside a character. All-ASCII windows need no check. */
AVX512_TARGET static inline __attribute__((always_inline)) Py_ssize_t utf8_convert_core(
        const uint8_t *s, Py_ssize_t n, void *out, int kind, Py_ssize_t room, int check,
        unsigned *top) {
    const __m512i iota = _mm512_load_si512((const void *)UTF8_IOTA);
    const __m512i spread = _mm512_load_si512((const void *)UTF8_SPREAD);
    const __m512i byteoff = _mm512_load_si512((const void *)UTF8_BYTEOFF);
    const __m512i not_cont = _mm512_set1_epi8(-65);
    const __m512i low8 = _mm512_set1_epi32(0xFF);
    const __m512i cont_bits = _mm512_set1_epi32(0x3F3F3F00);
    const __m512i lead_t = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)UTF8_LEAD));
    const __m512i shift_t = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)UTF8_SHIFT));
    const __m512i weights8 = _mm512_set1_epi32(0x01400140);   /* bytes 64, 1, 64, 1 */
    const __m512i weights16 = _mm512_set1_epi32(0x00011000);  /* words 4096, 1 */
    __m512i err = _mm512_setzero_si512(), mx = err;
    Py_ssize_t i = 0, o = 0;
    while (i < n) {
        Py_ssize_t rem = n - i;
        __mmask64 in = utf8_prefix_mask(rem);
        __m512i v = _mm512_maskz_loadu_epi8(in, s + i);
        if (_mm512_movepi8_mask(v) == 0) {  /* all ASCII */
            Py_ssize_t take = rem >= 64 ? 64 : rem;
            if (o + take > room) return -1;
            utf8_store_ascii(out, o, kind, v, take);
            o += take;
            i += take;
            continue;
        }
        uint64_t leads = _mm512_mask_cmpgt_epi8_mask(in, v, not_cont);
        if (!(leads & 1)) return -1;  /* a window starts at a character */
        if (check) {  /* (a short last window reads zeros past the end: a cut one is wrong) */
            err = _mm512_or_si512(err, utf8_block_errors(v, _mm512_setzero_si512()));
            mx = _mm512_max_epu8(mx, v);
            if (rem == 64 && _mm512_cmpgt_epu8_mask(v, utf8_tail_max())) return -1;
        }
        uint64_t use;
        Py_ssize_t take;
        if (rem > 64) {  /* the last character may continue in the next window: leave it */
            int last = 63 - __builtin_clzll(leads);
            if (last < 60) return -1;  /* four continuation bytes in a row */
            use = leads & ~(1ULL << last);
            take = last;
        } else {
            use = leads;
            take = rem;
        }
        int count = (int)_mm_popcnt_u64(use);
        if (o + count > room) return -1;
        __m512i pos = _mm512_maskz_compress_epi8(use, iota);
        for (int k0 = 0; k0 < count; k0 += 16) {
            int m = count - k0 < 16 ? count - k0 : 16;
            __mmask16 lanes = (__mmask16)utf8_prefix_mask(m);
            __m512i sel = _mm512_add_epi8(spread, _mm512_set1_epi8((char)k0));
            __m512i idx = _mm512_add_epi8(_mm512_permutexvar_epi8(sel, pos), byteoff);
            __m512i g = _mm512_permutexvar_epi8(idx, v);  /* lane j: bytes b0 b1 b2 b3 */
            __m512i nib = _mm512_srli_epi32(_mm512_and_si512(g, low8), 4);  /* lead's high nibble */
            __m512i keep = _mm512_or_si512(_mm512_maskz_shuffle_epi8(BYTE0, lead_t, nib), cont_bits);
            /* (64*b0 + b1) * 4096 + (64*b2 + b3), payload bits only, >> 6 per missing byte */
            __m512i t = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(g, keep), weights8),
                                          weights16);
            __m512i cp = _mm512_srlv_epi32(t, _mm512_maskz_shuffle_epi8(BYTE0, shift_t, nib));
            if (kind == 4) _mm512_mask_storeu_epi32((uint32_t *)out + o, lanes, cp);
            else if (kind == 2) _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)out + o, lanes, cp);
            else _mm512_mask_cvtepi32_storeu_epi8((uint8_t *)out + o, lanes, cp);
            o += m;
        }
        i += take;
    }
    if (check) {
        if (_mm512_test_epi8_mask(err, err) != 0) return -1;
        *top = utf8_top_of(mx);
    }
    return o;
}

/* Pass 2: code points into `out` (a str of `kind` with room for `chars`) from bytes that
   utf8_valid_long accepted; 0, or -1 if the character count does not add up (never for
   valid bytes). */
AVX512_TARGET static int utf8_convert(const uint8_t *s, Py_ssize_t n, void *out, int kind,
                                      Py_ssize_t chars) {
    return utf8_convert_core(s, n, out, kind, chars, 0, NULL) == chars ? 0 : -1;
}

/* Both passes in one, for text whose str is expected to be of `kind`: code points into
   `out` (room for `room`, at least n for any valid text), the bytes checked as they go;
   the character count (*top: their widest lead, utf8_top_of), or -1 if the bytes are not
   strict UTF-8. */
AVX512_TARGET static Py_ssize_t utf8_convert_checked(const uint8_t *s, Py_ssize_t n, void *out,
                                                     int kind, Py_ssize_t room, unsigned *top) {
    if (kind == 4) return utf8_convert_core(s, n, out, 4, room, 1, top);
    if (kind == 2) return utf8_convert_core(s, n, out, 2, room, 1, top);
    return utf8_convert_core(s, n, out, 1, room, 1, top);
}

/* 1 if the bytes are strict UTF-8 (as Python's decoder), 0 if not; long text only (short
   text: the caller's scalar check is as fast). Only with AVX-512 in use. Why not the
   converter's own checks: those run per character (16 lanes at a time), this runs per 64
   bytes whatever the text, which matters on text that is not ASCII. With `chars`
   set, also the number of characters (bytes that are not 10xxxxxx) and the widest lead, in
   the same read of the text (set only when valid). */
AVX512_TARGET static inline __attribute__((always_inline)) int utf8_valid_512_scan(
        const char *text, Py_ssize_t n, Py_ssize_t *chars, unsigned *maxbyte) {
    const uint8_t *s = (const uint8_t *)text;
    const __m512i not_cont = _mm512_set1_epi8(-65);  /* signed b > -65: 0x00-0x7F, 0xC0-0xFF */
    const __m512i tail_max = utf8_tail_max();
    __m512i prev = _mm512_setzero_si512(), err = _mm512_setzero_si512(), mx = err;
    __mmask64 incomplete = 0;
    Py_ssize_t leads = 0;
    for (Py_ssize_t i = 0; i < n; i += 64) {
        __mmask64 in = ~0ULL;  /* the bytes of the text in this block: all but in the last */
        __m512i cur;
        if (i + 64 <= n) {
            cur = _mm512_loadu_si512((const void *)(s + i));
        } else {
            in = utf8_prefix_mask(n - i);
            cur = _mm512_maskz_loadu_epi8(in, s + i);
        }
        if (_mm512_movepi8_mask(cur) == 0) {  /* ASCII: only an unfinished character before */
            if (incomplete) return 0;
            prev = cur;
            leads += _mm_popcnt_u64(in);
            continue;
        }
        if (chars != NULL) {
            mx = _mm512_max_epu8(mx, cur);
            leads += _mm_popcnt_u64(_mm512_mask_cmpgt_epi8_mask(in, cur, not_cont));
        }
        err = _mm512_or_si512(err, utf8_block_errors(cur, prev));
        incomplete = _mm512_cmpgt_epu8_mask(cur, tail_max);
        prev = cur;
    }
    /* the end acts as ASCII: no character may be left unfinished (a masked last block
       reads zeros past the end, which the pairs above already refuse after a lead) */
    if (incomplete || _mm512_test_epi8_mask(err, err) != 0) return 0;
    if (chars != NULL) {
        *chars = leads;
        *maxbyte = utf8_top_of(mx);
    }
    return 1;
}

AVX512_TARGET static int utf8_valid_512(const char *text, Py_ssize_t n) {
    return utf8_valid_512_scan(text, n, NULL, NULL);
}

/* The character count and the widest lead and the check, in one pass (pass 1): 1 if valid
   (*chars, *maxbyte set), 0 if not (they are not). Why one pass: the first read of a value
   brings its bytes from memory; a check in a pass of its own would add a whole read of
   the text. */
AVX512_TARGET static int utf8_scan_valid_512(const char *text, Py_ssize_t n, Py_ssize_t *chars,
                                             unsigned *maxbyte) {
    return utf8_valid_512_scan(text, n, chars, maxbyte);
}

/* JSON string escaping of valid UTF-8 from s[0:n] into *dp, while 32 bytes are left, no
   control character comes (those take the caller's scalar path: longer escapes) and `limit`
   leaves room for 128 bytes; returns the bytes consumed. Each '"' and '\\' gets a backslash
   before it by one expand per 32 bytes: the output mask says where the input bytes land (a
   backslash first for the escaped ones), the gaps are backslashes. Why: a JSON document in a
   text column has a quote every few bytes, and the 16-byte loop stopped at each one. */
AVX512_TARGET static Py_ssize_t json_escape_run(const unsigned char *s, Py_ssize_t n,
                                                unsigned char **dp, const unsigned char *limit) {
    const __m512i space = _mm512_set1_epi8(0x20), quote = _mm512_set1_epi8('"');
    const __m512i bslash = _mm512_set1_epi8('\\');
    unsigned char *d = *dp;
    Py_ssize_t i = 0;
    while (i + 32 <= n && limit - d >= 128) {
        __mmask64 in = i + 64 <= n ? ~0ULL : 0xFFFFFFFFULL;
        __m512i x = _mm512_maskz_loadu_epi8(in, s + i);
        uint64_t ctl = _mm512_mask_cmplt_epu8_mask(in, x, space);
        uint64_t q = _mm512_cmpeq_epi8_mask(x, quote) | _mm512_cmpeq_epi8_mask(x, bslash);
        if (!(ctl | q) && in == ~0ULL) {  /* 64 plain bytes */
            _mm512_storeu_si512((void *)d, x);
            d += 64;
            i += 64;
            continue;
        }
        for (int half = 0; half < 2; half++) {
            if ((uint32_t)ctl) {  /* a control character in these 32 bytes */
                *dp = d;
                return i;
            }
            uint32_t h = (uint32_t)q;
            /* two output bits per input byte, (backslash, byte) = 01 when escaped, else
               (byte) = 1: pext keeps the second bit only for escaped bytes */
            uint64_t odd = _pdep_u64(h, 0xAAAAAAAAAAAAAAAAULL);
            uint64_t lands = _pext_u64(_pdep_u64(~h, 0x5555555555555555ULL) | odd,
                                       0x5555555555555555ULL | odd);
            __m512i part = half ? _mm512_castsi256_si512(_mm512_extracti64x4_epi64(x, 1))
                                : _mm512_castsi256_si512(_mm512_castsi512_si256(x));
            _mm512_storeu_si512((void *)d, _mm512_mask_expand_epi8(bslash, lands, part));
            d += 32 + _mm_popcnt_u32(h);
            i += 32;
            if (in != ~0ULL || i + 32 > n) break;  /* only the first half was loaded */
            ctl >>= 32;
            q >>= 32;
        }
    }
    *dp = d;
    return i;
}

#include "utf8_avx2.h"

/* utf8_valid_512 or utf8_valid_avx2, as the CPU allows; only with g_utf8_simd set */
static int utf8_valid_long(const char *text, Py_ssize_t n) {
    return g_utf8_simd == UTF8_AVX512 ? utf8_valid_512(text, n) : utf8_valid_avx2(text, n);
}

/* The CPU's widest level; native.py's switchboard caps it (BINLAKE_SIMD) as it loads. */
void utf8_simd_init(void) {
    utf8_tables_init();
    utf8_avx2_tables_init();
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) g_utf8_cpu = UTF8_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
        __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("popcnt") &&
        __builtin_cpu_supports("bmi2")) g_utf8_cpu = UTF8_AVX512;
    g_utf8_simd = g_utf8_cpu;
}
#else
void utf8_simd_init(void) { g_utf8_simd = 0; }
#endif

/* Texts this long or longer may take the one-pass path (utf8_str_hinted). */
#define UTF8_ONEPASS_MIN 512
/* ... and this long or shorter: it allocates a character a byte of text before it knows
   the length (the str then gives back what it does not need; pages never written are
   never touched). */
#define UTF8_ONEPASS_MAX (16 << 20)

/* The str kind (1, 2, 4) for the widest lead class of utf8_top_of; 0 for ASCII (the str
   of PyUnicode_New(n, 0x7F), laid out apart from the other kinds). */
static inline int utf8_kind_of_top(unsigned top) {
    return top == 0xF0 ? 4 : top == 0xC4 ? 2 : top == 0x80 ? 1 : 0;
}

static inline Py_UCS4 utf8_kind_maxchar(int kind) {
    return kind == 4 ? 0x10FFFF : kind == 2 ? 0xFFFF : kind == 1 ? 0xFF : 0x7F;
}

/* A column's guess (ColOp.kind_guess): the kind of its last long value's str (low bits:
   1, 2, 4; 0: ASCII or none yet), and GUESS_SURE once two values in a row had it. */
#define GUESS_SURE 0x10
#define GUESS_KIND(g) ((g) & 0x0F)

/* The str of UTF-8 bytes, or NULL with UnicodeDecodeError (exactly CPython's).

   `guess` (may be NULL): a column's guess, kept between its values, of the kind of its
   next str. Once sure, the text is converted and checked in one pass into a str of that
   kind and of the byte length, given back to the character count after: the two-pass
   way's first read of the text is folded into the conversion. The result is always the
   str CPython makes: a guess too wide costs a copy to the canonical narrower str, one too
   narrow the two passes as well. A guess is sure only after two
   values of its kind in a row, so a column whose values change kind often keeps to the
   two passes. */
PyObject *utf8_str_hinted(const char *s, Py_ssize_t n, uint8_t *guess) {
#ifdef BINLAKE_UTF8_SIMD
    if (n >= UTF8_SIMD_MIN && g_utf8_simd) {
        int hintable = guess != NULL && n >= UTF8_ONEPASS_MIN && n <= UTF8_ONEPASS_MAX;
        if (hintable && (*guess & GUESS_SURE)) {
            int kind = GUESS_KIND(*guess);
            PyObject *u = PyUnicode_New(n, utf8_kind_maxchar(kind));
            if (u == NULL) return NULL;
            unsigned top;
            Py_ssize_t chars = g_utf8_simd == UTF8_AVX512
                ? utf8_convert_checked((const uint8_t *)s, n, PyUnicode_DATA(u), kind, n, &top)
                : utf8_convert_checked_avx2((const uint8_t *)s, n, PyUnicode_DATA(u), kind, n, &top);
            if (chars < 0) {  /* not UTF-8: CPython's decoder names the byte and the reason */
                Py_DECREF(u);
                return PyUnicode_DecodeUTF8(s, n, NULL);
            }
            int need = utf8_kind_of_top(top);
            if (need != kind) *guess = need > kind ? 0 : (uint8_t)need;  /* (no longer sure) */
            if (need == kind) {
                if (chars < n && PyUnicode_Resize(&u, chars) < 0) {
                    Py_DECREF(u);
                    return NULL;
                }
                return u;
            }
            if (need < kind) {  /* guessed too wide: the canonical (narrower) str */
                PyObject *narrow = PyUnicode_FromKindAndData(kind, PyUnicode_DATA(u), chars);
                Py_DECREF(u);
                return narrow;
            }
            Py_DECREF(u);  /* too narrow: characters were cut; the two passes below */
        }
        Py_ssize_t chars;
        unsigned top;
        if (!(g_utf8_simd == UTF8_AVX512 ? utf8_scan_valid_512(s, n, &chars, &top)
                                          : utf8_scan_valid_avx2(s, n, &chars, &top)))
            return PyUnicode_DecodeUTF8(s, n, NULL);  /* it names the byte and the reason */
        if (hintable) {
            int kind = utf8_kind_of_top(top);
            *guess = (uint8_t)(kind && kind == GUESS_KIND(*guess) ? kind | GUESS_SURE : kind);
        }
        Py_UCS4 maxchar = utf8_kind_maxchar(utf8_kind_of_top(top));
        if (maxchar == 0x7F) {
            PyObject *u = PyUnicode_New(n, 0x7F);
            if (u != NULL) memcpy(PyUnicode_DATA(u), s, (size_t)n);
            return u;
        }
        PyObject *u = PyUnicode_New(chars, maxchar);
        if (u == NULL) return NULL;
        void *out = PyUnicode_DATA(u);
        int kind = PyUnicode_KIND(u);
        if ((g_utf8_simd == UTF8_AVX512 ? utf8_convert((const uint8_t *)s, n, out, kind, chars)
             : utf8_convert_avx2((const uint8_t *)s, n, out, kind, chars)) == 0)
            return u;
        Py_DECREF(u);
    }
#endif
    return PyUnicode_DecodeUTF8(s, n, NULL);
}

/* utf8_decode(bytes, guess=None) -> str: the decoder above, for tests and benchmarks;
   guess=0/1/2/4: with that guess of the str's kind, sure (utf8_str_hinted). */
PyObject *utf8_decode(PyObject *mod, PyObject *args) {
    PyObject *arg;
    int kind = -1;
    if (!PyArg_ParseTuple(args, "O|i:utf8_decode", &arg, &kind)) return NULL;
    if (kind != -1 && kind != 0 && kind != 1 && kind != 2 && kind != 4) {
        PyErr_SetString(PyExc_ValueError, "guess must be 0, 1, 2 or 4 (a str kind)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint8_t guess = (uint8_t)(kind <= 0 ? 0 : kind | GUESS_SURE);
    PyObject *u = utf8_str_hinted((const char *)view.buf, view.len, kind < 0 ? NULL : &guess);
    PyBuffer_Release(&view);
    return u;
}

static const char *const UTF8_LEVELS[3] = {"off", "avx2", "avx512"};

/* utf8_simd() -> "avx512" | "avx2" | "off": the vector code in use. */
PyObject *utf8_simd(PyObject *mod, PyObject *unused) {
    return PyUnicode_FromString(UTF8_LEVELS[g_utf8_simd]);
}

/* utf8_set_simd(level) -> the level before: for tests, to run each path the CPU has (a
   level above the CPU's is refused). */
PyObject *utf8_set_simd(PyObject *mod, PyObject *arg) {
    const char *want = PyUnicode_AsUTF8(arg);
    if (want == NULL) return NULL;
    for (int level = 0; level < 3; level++) {
        if (strcmp(want, UTF8_LEVELS[level]) != 0) continue;
        if (level > g_utf8_cpu) {
            PyErr_Format(PyExc_ValueError, "this CPU does not have %s", want);
            return NULL;
        }
        int before = g_utf8_simd;
        g_utf8_simd = level;
        return PyUnicode_FromString(UTF8_LEVELS[before]);
    }
    PyErr_Format(PyExc_ValueError, "unknown level %R (off, avx2, avx512)", arg);
    return NULL;
}

/* ---- The JSON writer's UTF-8: strict checking and escaping in one read ---- */

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
   a branch per sequence is mispredicted on most of them. */
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
PyObject *utf8_check(PyObject *mod, PyObject *arg) {
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

int put_utf8_escaped(Buf *o, const unsigned char *s, Py_ssize_t n) {
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
        /* a table, not a switch: a switch's indirect jump is mispredicted on each '"' */
        char e = SHORT_ESCAPE[c];
        if (e) *d++ = e;
        else { *d++ = 'u'; *d++ = '0'; *d++ = '0'; *d++ = HEX[c >> 4]; *d++ = HEX[c & 15]; }
        i++;
    }
    o->len = (char *)d - o->p;
    return 1;
}

