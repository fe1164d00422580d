/* UTF-8 (utf8.c): bytes -> str and the JSON writer's strict check and escaping, with
 * AVX-512 or AVX2 code when the CPU has it (CPython's decoder stays the reference). */
#ifndef BINLAKE_SPEEDUPS_UTF8_H
#define BINLAKE_SPEEDUPS_UTF8_H

#include "common.h"

/* At module load: the tables, and the widest vector code the CPU has. */
void utf8_simd_init(void);

/* The str of UTF-8 bytes, or NULL with CPython's exact UnicodeDecodeError. `guess` (may
   be NULL): a column's guess of its next str's kind (ColOp.kind_guess), updated here. */
PyObject *utf8_str_hinted(const char *s, Py_ssize_t n, uint8_t *guess);

/* s, checked as strict UTF-8, written JSON-escaped (no quotes): 1, 0 if it is not UTF-8
   (nothing written), -1 with MemoryError. */
int put_utf8_escaped(Buf *o, const unsigned char *s, Py_ssize_t n);

/* The module's utf8_decode(bytes, guess=None), utf8_check(bytes), utf8_simd() and
   utf8_set_simd(level). */
PyObject *utf8_decode(PyObject *mod, PyObject *args);
PyObject *utf8_check(PyObject *mod, PyObject *arg);
PyObject *utf8_simd(PyObject *mod, PyObject *unused);
PyObject *utf8_set_simd(PyObject *mod, PyObject *arg);

#endif  /* BINLAKE_SPEEDUPS_UTF8_H */
