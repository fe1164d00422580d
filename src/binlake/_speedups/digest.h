/* Hashing for `binlake verify`, two compilation units: sha1.c (SHA-1, with the CPU's SHA
 * instructions where it has them) and row_sums.c (rows' canonical texts hashed and folded
 * into chunk checksums, verify/lake.py's fold). What module.c calls. */
#ifndef BINLAKE_SPEEDUPS_DIGEST_H
#define BINLAKE_SPEEDUPS_DIGEST_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[5];
    uint64_t length;        /* bytes hashed so far */
    uint8_t block[64];      /* a partial block */
    size_t used;            /* bytes in `block` */
} Sha1;

/* Find whether the CPU has SHA instructions (at module load). */
void sha1_init(void);
void sha1_start(Sha1 *s);
void sha1_update(Sha1 *s, const uint8_t *p, size_t n);
void sha1_finish(Sha1 *s, uint8_t out[20]);

/* The module's sha1(data) -> 20 bytes and sha1_set_simd(on) -> on before. */
PyObject *sha1_py(PyObject *mod, PyObject *arg);
PyObject *sha1_set_simd(PyObject *mod, PyObject *arg);
/* The module's row_sums(columns, chunks, counts, xors) (see row_sums.c). */
PyObject *row_sums(PyObject *mod, PyObject *args);

#endif  /* BINLAKE_SPEEDUPS_DIGEST_H */
