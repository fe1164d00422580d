/* The checksums, two compilation units of their own: crc32.c (zlib's CRC32, vectorised
 * where the CPU can) and crc_ahead.c (CrcAhead: a file's checksums checked by a thread
 * ahead of the decoder). What the rest of the module (module.c, event_rows.c) calls. */
#ifndef BINLAKE_SPEEDUPS_CRC_H
#define BINLAKE_SPEEDUPS_CRC_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* Set up the tables and find the CPU's widest fold (at module load). */
void crc32_init(void);
/* zlib's crc32(crc, p, n): the checksum of the bytes after those `crc` covers (no GIL
   needed). */
uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n);
/* The module's crc32(data, value=0) and crc32_set_simd(width). */
PyObject *crc32_py(PyObject *mod, PyObject *args);
PyObject *crc32_set_simd(PyObject *mod, PyObject *arg);
/* Add the CrcAhead type to the module where it is built (Unix); 0, or -1 with an error. */
int crc_ahead_add(PyObject *module);

#endif  /* BINLAKE_SPEEDUPS_CRC_H */
