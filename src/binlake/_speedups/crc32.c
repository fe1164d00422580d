/* CRC32 (the zlib / binlog checksum) in C, callable without the GIL.
 *
 * Why here and not ISA-L's Python function: the rows scanner checked each event through a
 * Python call (a memoryview and an int per event), and the checker thread of crc_ahead.c
 * must run with no GIL at all. With PCLMULQDQ (x86 since 2010) the bytes are folded 64 at
 * a time as in Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
 * (Gopal et al., 2009): four 128-bit lanes folded by x^544 and x^480 modulo the
 * polynomial, the lanes folded into one, reduced to 64 bits, then to 32 by Barrett
 * reduction. The constants below are those powers of x modulo the bit-reflected
 * polynomial 0x104C11DB7, as the paper derives them (eight lanes folded by x^1056 and
 * x^992 while 128 bytes are left). With VPCLMULQDQ and AVX-512 (crc32_vpclmul) sixteen
 * lanes in four 512-bit registers are folded by x^2080 and x^2016 while 256 bytes are left;
 * with VPCLMULQDQ and AVX2 (crc32_vpclmul256: AMD Zen 3, Intel
 * Alder Lake) the eight lanes in four 256-bit registers (BINLAKE_SIMD=0 keeps to the
 * 128-bit folds, avx2 to 256 bits at most: applied by native.py as the module loads). Anything shorter than
 * 64 bytes, the last 0-15 bytes and a CPU without the instruction take the table (slicing
 * by 8 bytes).
 *
 * A compilation unit of its own: crc.h declares what the rest of the module calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "crc.h"

static uint32_t CRC_TABLE[8][256];
static int g_crc_clmul = 0;  /* set at import: the CPU has PCLMULQDQ and SSE4.1 */
/* The widest fold in use, in bits: 512 (VPCLMULQDQ and AVX-512F), 256 (VPCLMULQDQ and
   AVX2) or 128; set at import from the CPU (g_crc_wide_cpu), capped by native.py's
   switchboard (BINLAKE_SIMD) and by tests through crc32_set_simd. */
static int g_crc_wide = 128, g_crc_wide_cpu = 128;

void crc32_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
        CRC_TABLE[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            CRC_TABLE[t][i] = (CRC_TABLE[t - 1][i] >> 8) ^ CRC_TABLE[0][CRC_TABLE[t - 1][i] & 0xFF];
#if defined(__x86_64__) && defined(__GNUC__) && !defined(BINLAKE_NO_SIMD)
    __builtin_cpu_init();
    g_crc_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    if (g_crc_clmul && __builtin_cpu_supports("vpclmulqdq"))
        g_crc_wide_cpu = __builtin_cpu_supports("avx512f") ? 512
                         : __builtin_cpu_supports("avx2") ? 256 : 128;
    g_crc_wide = g_crc_wide_cpu;
#endif
}

/* The running (inverted) state over n bytes, 8 at a time by table. */
static uint32_t crc32_table(uint32_t c, const uint8_t *p, size_t n) {
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = CRC_TABLE[7][lo & 0xFF] ^ CRC_TABLE[6][(lo >> 8) & 0xFF]
            ^ CRC_TABLE[5][(lo >> 16) & 0xFF] ^ CRC_TABLE[4][lo >> 24]
            ^ CRC_TABLE[3][hi & 0xFF] ^ CRC_TABLE[2][(hi >> 8) & 0xFF]
            ^ CRC_TABLE[1][(hi >> 16) & 0xFF] ^ CRC_TABLE[0][hi >> 24];
    }
    while (n--) c = (c >> 8) ^ CRC_TABLE[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(BINLAKE_NO_SIMD)
#include <immintrin.h>
#define CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

/* x * k: the low halves (imm 0x00) and the high halves (0x11) multiplied, xor-ed together */
CLMUL_TARGET static inline __m128i clmul_fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

#define CRC_K512 0x1c6e41596LL, 0x154442bd4LL  /* x^(512-32), x^(512+32) */
/* lane l (the 16 bytes i lanes into p's 64 or 128) folded by k onto the bytes there */
#define FOLD(l, i, k) l = _mm_xor_si128(clmul_fold(l, k), _mm_loadu_si128((const __m128i *)(p + 16 * (i))))

/* The state of four 128-bit lanes (the last 64 bytes folded) over the n bytes at p (a
   multiple of 16), reduced to the running (inverted) 32-bit state. */
CLMUL_TARGET static inline __attribute__((always_inline)) uint32_t crc32_clmul_lanes(
        __m128i l0, __m128i l1, __m128i l2, __m128i l3, const uint8_t *p, size_t n) {
    const __m128i k1k2 = _mm_set_epi64x(CRC_K512);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);  /* x^(128-32), x^(128+32) */
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124LL);                /* x^64 */
    const __m128i poly = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);  /* mu, P */
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
    for (; n >= 64; n -= 64, p += 64) {
        FOLD(l0, 0, k1k2); FOLD(l1, 1, k1k2); FOLD(l2, 2, k1k2); FOLD(l3, 3, k1k2);
    }
    __m128i x = _mm_xor_si128(clmul_fold(l0, k3k4), l1);
    x = _mm_xor_si128(clmul_fold(x, k3k4), l2);
    x = _mm_xor_si128(clmul_fold(x, k3k4), l3);
    for (; n >= 16; n -= 16, p += 16)
        x = _mm_xor_si128(clmul_fold(x, k3k4), _mm_loadu_si128((const __m128i *)p));
    /* 128 -> 64 bits, then the top 32 of those folded in */
    x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k3k4, 0x10));
    x = _mm_xor_si128(_mm_srli_si128(x, 4),
                      _mm_clmulepi64_si128(_mm_and_si128(x, low32), k5, 0x00));
    /* Barrett: q = (x mod x^32) * mu, keep 32 bits, subtract q * P */
    __m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), poly, 0x10), low32);
    x = _mm_xor_si128(x, _mm_clmulepi64_si128(q, poly, 0x00));
    return (uint32_t)_mm_extract_epi32(x, 1);
}

/* The running (inverted) state over n bytes, n >= 64 and a multiple of 16. */
CLMUL_TARGET static uint32_t crc32_clmul(uint32_t c, const uint8_t *p, size_t n) {
    const __m128i k8 = _mm_set_epi64x(0x14a7fe880LL, 0x1e88ef372LL);    /* x^(1024-32), x^(1024+32) */
    const __m128i k1k2 = _mm_set_epi64x(CRC_K512);
    /* the lanes as plain variables (compilers keep an array on the stack, not in registers) */
    __m128i l0, l1, l2, l3, l4, l5, l6, l7;
#define LOAD(l, i) l = _mm_loadu_si128((const __m128i *)(p + 16 * (i)))
    LOAD(l0, 0); LOAD(l1, 1); LOAD(l2, 2); LOAD(l3, 3);
    l0 = _mm_xor_si128(l0, _mm_cvtsi32_si128((int)c));
    if (n >= 128) {  /* eight lanes keep more multiplies in flight */
        LOAD(l4, 4); LOAD(l5, 5); LOAD(l6, 6); LOAD(l7, 7);
        for (p += 128, n -= 128; n >= 128; n -= 128, p += 128) {
            FOLD(l0, 0, k8); FOLD(l1, 1, k8); FOLD(l2, 2, k8); FOLD(l3, 3, k8);
            FOLD(l4, 4, k8); FOLD(l5, 5, k8); FOLD(l6, 6, k8); FOLD(l7, 7, k8);
        }
        /* lanes 0-3 folded onto 4-7, 512 bits on */
        l0 = _mm_xor_si128(clmul_fold(l0, k1k2), l4);
        l1 = _mm_xor_si128(clmul_fold(l1, k1k2), l5);
        l2 = _mm_xor_si128(clmul_fold(l2, k1k2), l6);
        l3 = _mm_xor_si128(clmul_fold(l3, k1k2), l7);
    } else {
        p += 64;
        n -= 64;
    }
#undef LOAD
#undef FOLD
    return crc32_clmul_lanes(l0, l1, l2, l3, p, n);
}

#define VCLMUL_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))

/* 64 bytes (four 128-bit lanes) of x folded forward by k's distance onto d */
VCLMUL_TARGET static inline __m512i vclmul_fold(__m512i x, __m512i k, __m512i d) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), d, 0x96);
}

/* crc32_clmul with VPCLMULQDQ: sixteen lanes in four 512-bit registers, 256 bytes a
   round (each lane 2048 bits on: x^2080 and x^2016, derived as the ones above), then folded
   into four 128-bit lanes for crc32_clmul_lanes; n >= 256 and a multiple of 16. Why: a
   replica checks every event it receives on its decoding thread, a large share of a live
   stream's time with 128-bit folds; and the CrcAhead thread is lighter. */
VCLMUL_TARGET static uint32_t crc32_vpclmul(uint32_t c, const uint8_t *p, size_t n) {
    const __m512i k16 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1322d1430LL, 0x11542778aLL));  /* x^(2048-32), x^(2048+32) */
    const __m512i k4 = _mm512_broadcast_i32x4(_mm_set_epi64x(CRC_K512));
    __m512i z0 = _mm512_loadu_si512((const void *)p), z1 = _mm512_loadu_si512((const void *)(p + 64)),
            z2 = _mm512_loadu_si512((const void *)(p + 128)), z3 = _mm512_loadu_si512((const void *)(p + 192));
    z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
    for (p += 256, n -= 256; n >= 256; n -= 256, p += 256) {
        z0 = vclmul_fold(z0, k16, _mm512_loadu_si512((const void *)p));
        z1 = vclmul_fold(z1, k16, _mm512_loadu_si512((const void *)(p + 64)));
        z2 = vclmul_fold(z2, k16, _mm512_loadu_si512((const void *)(p + 128)));
        z3 = vclmul_fold(z3, k16, _mm512_loadu_si512((const void *)(p + 192)));
    }
    /* each register folded onto the next, 512 bits on */
    z1 = vclmul_fold(z0, k4, z1);
    z2 = vclmul_fold(z1, k4, z2);
    z3 = vclmul_fold(z2, k4, z3);
    return crc32_clmul_lanes(_mm512_extracti32x4_epi32(z3, 0), _mm512_extracti32x4_epi32(z3, 1),
                             _mm512_extracti32x4_epi32(z3, 2), _mm512_extracti32x4_epi32(z3, 3),
                             p, n);
}

#define VCLMUL256_TARGET __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1")))

/* 32 bytes (two 128-bit lanes) of x folded forward by k's distance onto d */
VCLMUL256_TARGET static inline __m256i vclmul256_fold(__m256i x, __m256i k, __m256i d) {
    return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                                             _mm256_clmulepi64_epi128(x, k, 0x11)), d);
}

/* crc32_clmul with VPCLMULQDQ on 256-bit registers, for CPUs that have it without AVX-512:
   crc32_clmul's eight lanes (x^1056 and x^992, 128 bytes a round) in four registers, half
   the multiply instructions, then folded into four 128-bit lanes for crc32_clmul_lanes;
   n >= 128 and a multiple of 16. Why: a replica checks every event on its decoding thread,
   on such CPUs too. */
VCLMUL256_TARGET static uint32_t crc32_vpclmul256(uint32_t c, const uint8_t *p, size_t n) {
    const __m256i k8 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x14a7fe880LL, 0x1e88ef372LL));
    const __m256i k4 = _mm256_broadcastsi128_si256(_mm_set_epi64x(CRC_K512));
#define LOAD32(i) _mm256_loadu_si256((const __m256i *)(p + 32 * (i)))
    __m256i y0 = LOAD32(0), y1 = LOAD32(1), y2 = LOAD32(2), y3 = LOAD32(3);
    y0 = _mm256_xor_si256(y0, _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)c)));
    for (p += 128, n -= 128; n >= 128; n -= 128, p += 128) {
        y0 = vclmul256_fold(y0, k8, LOAD32(0));
        y1 = vclmul256_fold(y1, k8, LOAD32(1));
        y2 = vclmul256_fold(y2, k8, LOAD32(2));
        y3 = vclmul256_fold(y3, k8, LOAD32(3));
    }
#undef LOAD32
    /* the first 64 bytes' lanes folded onto the last 64's, 512 bits on */
    y2 = vclmul256_fold(y0, k4, y2);
    y3 = vclmul256_fold(y1, k4, y3);
    return crc32_clmul_lanes(_mm256_castsi256_si128(y2), _mm256_extracti128_si256(y2, 1),
                             _mm256_castsi256_si128(y3), _mm256_extracti128_si256(y3, 1), p, n);
}
#endif

/* zlib's crc32(crc, p, n): the checksum of the bytes after those `crc` covers. */
uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t c = ~crc;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(BINLAKE_NO_SIMD)
    if (g_crc_clmul && n >= 64) {
        size_t bulk = n & ~(size_t)15;
        c = g_crc_wide == 512 && n >= 256 ? crc32_vpclmul(c, p, bulk)
            : g_crc_wide >= 256 && n >= 128 ? crc32_vpclmul256(c, p, bulk)
            : crc32_clmul(c, p, bulk);
        p += bulk;
        n -= bulk;
    }
#endif
    return ~crc32_table(c, p, n);
}

/* crc32(data, value=0) -> int: as zlib.crc32, for tests and the Python decoder's events. */
PyObject *crc32_py(PyObject *mod, PyObject *args) {
    Py_buffer view;
    unsigned long value = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &view, &value)) return NULL;
    uint32_t c;
    if (view.len >= 65536) {  /* a long one lets other threads run meanwhile */
        Py_BEGIN_ALLOW_THREADS
        c = crc32_update((uint32_t)value, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        c = crc32_update((uint32_t)value, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

/* crc32_set_simd(width) -> the width before: the widest fold to use, 128, 256 or 512 bits
   (ValueError for one the CPU lacks); True: the widest the CPU has, False: 128. For tests,
   to run each path the CPU has. */
PyObject *crc32_set_simd(PyObject *mod, PyObject *arg) {
    int before = g_crc_wide, width;
    if (PyBool_Check(arg)) {
        width = arg == Py_True ? g_crc_wide_cpu : 128;
    } else {
        long w = PyLong_AsLong(arg);
        if (w == -1 && PyErr_Occurred()) return NULL;
        if ((w != 128 && w != 256 && w != 512) || w > g_crc_wide_cpu) {
            PyErr_Format(PyExc_ValueError, "no %ld-bit folds on this CPU (widest: %d)", w,
                         g_crc_wide_cpu);
            return NULL;
        }
        width = (int)w;
    }
    g_crc_wide = width;
    return PyLong_FromLong(before);
}

