/* SHA-1 (FIPS 180-4) in C, callable without the GIL.
 *
 * Why here: verify hashes every row of a Delta table, most of them under 200 bytes, and a
 * hashlib call per row costs more in the interpreter than the hash (row_sums.c folds the
 * rows in one call). SHA-1 because the server computes it in SQL on the other side, and CPUs
 * with SHA instructions (x86 SHA-NI: Intel since Ice Lake and Goldmont, AMD since Zen) run
 * it at 2 GB/s a core: four rounds per SHA1RNDS4, the message schedule by SHA1MSG1/2 and the
 * next E by SHA1NEXTE, as Intel's "Intel SHA Extensions" paper (2013) lays the rounds out.
 * Other CPUs, and BINLAKE_SIMD=0, take the portable rounds.
 *
 * A compilation unit of its own: digest.h declares what the rest of the module calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "digest.h"

static int g_sha_ni = 0, g_sha_ni_cpu = 0;  /* in use; what the CPU has (set at import) */

void sha1_init(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(BINLAKE_NO_SIMD)
    __builtin_cpu_init();
    g_sha_ni_cpu = __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1")
                   && __builtin_cpu_supports("ssse3");
#endif
    g_sha_ni = g_sha_ni_cpu;
}

#define ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The 80 rounds over `n` 64-byte blocks, in plain C: the schedule in 16 words, a loop per
   round function (no branch inside a round). */
#define ROUND(fn, k) do {                                                            \
        uint32_t wt;                                                                   \
        if (t < 16) wt = w[t];                                                         \
        else wt = w[t & 15] = ROL(w[(t + 13) & 15] ^ w[(t + 8) & 15] ^ w[(t + 2) & 15]  \
                                  ^ w[t & 15], 1);                                     \
        uint32_t x = ROL(a, 5) + (fn) + e + (k) + wt;                                  \
        e = d; d = c; c = ROL(b, 30); b = a; a = x;                                    \
    } while (0)

static void sha1_blocks_c(uint32_t h[5], const uint8_t *p, size_t n) {
    for (; n; n--, p += 64) {
        uint32_t w[16];
        for (int t = 0; t < 16; t++) w[t] = be32(p + 4 * t);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        int t = 0;
        for (; t < 20; t++) ROUND(d ^ (b & (c ^ d)), 0x5A827999u);
        for (; t < 40; t++) ROUND(b ^ c ^ d, 0x6ED9EBA1u);
        for (; t < 60; t++) ROUND((b & c) | (d & (b | c)), 0x8F1BBCDCu);
        for (; t < 80; t++) ROUND(b ^ c ^ d, 0xCA62C1D6u);
        h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
    }
}
#undef ROUND

#if defined(__x86_64__) && defined(__GNUC__) && !defined(BINLAKE_NO_SIMD)
#include <immintrin.h>
#define SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* Four rounds with function/constant `f` (0-3), given E (e + the words) in the top lane. */
#define RNDS4(f) do { prev = abcd; abcd = _mm_sha1rnds4_epu32(abcd, e, f); } while (0)

/* The same rounds with SHA-NI: A..D in one register (A in the top lane), E + W in another.
   Group i (rounds 4i..4i+3) takes message words w[i]; E for group i+1 is SHA1NEXTE of the
   A..D before group i (its A rotated is the next e) and w[i+1]; w[i] for i >= 4 is
   SHA1MSG2(SHA1MSG1(w[i-4], w[i-3]) ^ w[i-2], w[i-1]). */
SHA_TARGET static void sha1_blocks_ni(uint32_t h[5], const uint8_t *p, size_t n) {
    const __m128i swap = _mm_set_epi64x(0x0001020304050607LL, 0x08090a0b0c0d0e0fLL);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0x1B);
    __m128i e0 = _mm_set_epi32((int)h[4], 0, 0, 0);
    for (; n; n--, p += 64) {
        __m128i abcd_in = abcd, e_in = e0, prev, e, w[4];
        for (int i = 0; i < 4; i++)
            w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
        e = _mm_add_epi32(e0, w[0]);
        for (int i = 0; i < 20; i++) {
            switch (i / 5) {  /* the round function is an immediate */
            case 0: RNDS4(0); break;
            case 1: RNDS4(1); break;
            case 2: RNDS4(2); break;
            default: RNDS4(3); break;
            }
            if (i + 1 < 20) {
                int j = (i + 1) & 3;
                if (i + 1 >= 4)  /* w[i+1] from the four before it (w[j] is w[i-3]) */
                    w[j] = _mm_sha1msg2_epu32(
                        _mm_xor_si128(_mm_sha1msg1_epu32(w[j], w[(j + 1) & 3]), w[(j + 2) & 3]),
                        w[(j + 3) & 3]);
                e = _mm_sha1nexte_epu32(prev, w[j]);
            }
        }
        e0 = _mm_sha1nexte_epu32(prev, e_in);
        abcd = _mm_add_epi32(abcd, abcd_in);
    }
    _mm_storeu_si128((__m128i *)h, _mm_shuffle_epi32(abcd, 0x1B));
    h[4] = (uint32_t)_mm_extract_epi32(e0, 3);
}
#undef RNDS4
#endif

static void sha1_blocks(uint32_t h[5], const uint8_t *p, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(BINLAKE_NO_SIMD)
    if (g_sha_ni) { sha1_blocks_ni(h, p, n); return; }
#endif
    sha1_blocks_c(h, p, n);
}

void sha1_start(Sha1 *s) {
    static const uint32_t init[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u,
                                     0xC3D2E1F0u};
    memcpy(s->h, init, sizeof init);
    s->length = 0;
    s->used = 0;
}

void sha1_update(Sha1 *s, const uint8_t *p, size_t n) {
    s->length += n;
    if (s->used) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take; p += take; n -= take;
        if (s->used < 64) return;
        sha1_blocks(s->h, s->block, 1);
        s->used = 0;
    }
    if (n >= 64) {
        sha1_blocks(s->h, p, n / 64);
        p += n & ~(size_t)63;
        n &= 63;
    }
    memcpy(s->block, p, n);
    s->used = n;
}

/* Pad with 0x80, zeros and the bit length (big-endian), as FIPS 180-4 5.1.1 says. */
void sha1_finish(Sha1 *s, uint8_t out[20]) {
    uint64_t bits = s->length * 8;
    uint8_t pad[72] = {0x80};
    size_t zeros = (s->used < 56 ? 56 : 120) - s->used;
    for (int i = 0; i < 8; i++) pad[zeros + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha1_update(s, pad, zeros + 8);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24); out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8); out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

PyObject *sha1_py(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Sha1 s;
    uint8_t out[20];
    sha1_start(&s);
    Py_BEGIN_ALLOW_THREADS
    sha1_update(&s, view.buf, (size_t)view.len);
    sha1_finish(&s, out);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBytes_FromStringAndSize((const char *)out, 20);
}

PyObject *sha1_set_simd(PyObject *mod, PyObject *arg) {
    (void)mod;
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    int before = g_sha_ni;
    g_sha_ni = on && g_sha_ni_cpu;
    return PyBool_FromLong(before);
}
