/* row_sums: verify's chunk checksums over a record batch's value texts, in one call.
 *
 * verify/lake.py's fold_rows is the reference (and the twin used without the C core): a
 * row's text is its columns' canonical texts joined by ',', NULL as 'N', a text-kind value
 * framed as '<byte length>:<bytes>' (canonical.row_sql); it is hashed with SHA-1, and the
 * row's chunk gets one more row and the XOR of the first 64 bits of the hash, big-endian.
 * Why C: building the row texts with Arrow kernels copied every value once more, and a
 * hashlib call, a slice and an int per row cost more than the hash (together about 0.6 of
 * the driver's 1.7 CPU s for the 1M bench's tables). Here each row is assembled in a small
 * buffer, a long value hashed where it lies, and the rows are hashed without the GIL, so
 * the source's reader threads run meanwhile. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "digest.h"

typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity;
    Py_ssize_t start;
    int wide;    /* int64 offsets (large_string / large_binary) */
    int framed;  /* a text kind: '<byte length>:' before the value */
} Column;

#define LONG_VALUE 256  /* longer values are hashed where they lie, not copied */

static int64_t offset_at(const Column *c, Py_ssize_t i) {
    if (c->wide) return ((const int64_t *)c->offsets.buf)[c->start + i];
    return ((const int32_t *)c->offsets.buf)[c->start + i];
}

static int is_null(const Column *c, Py_ssize_t i) {
    if (!c->has_validity) return 0;
    Py_ssize_t bit = c->start + i;
    return !((((const uint8_t *)c->validity.buf)[bit >> 3] >> (bit & 7)) & 1);
}

static void release(Column *c) {
    if (c->has_validity) PyBuffer_Release(&c->validity);
    PyBuffer_Release(&c->offsets);
    PyBuffer_Release(&c->data);
}

/* Take a column tuple (validity or None, offsets, data, start, int64 offsets?, framed?);
   0, or -1 with an error and nothing held. */
static int take(PyObject *t, Column *c, Py_ssize_t n) {
    PyObject *valid, *off, *data;
    if (!PyArg_ParseTuple(t, "OOOnpp", &valid, &off, &data, &c->start, &c->wide, &c->framed))
        return -1;
    c->has_validity = valid != Py_None;
    if (c->has_validity && PyObject_GetBuffer(valid, &c->validity, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(off, &c->offsets, PyBUF_SIMPLE) < 0) goto fail_valid;
    if (PyObject_GetBuffer(data, &c->data, PyBUF_SIMPLE) < 0) goto fail_off;
    if (c->start < 0 || (c->start + n + 1) * (c->wide ? 8 : 4) > c->offsets.len
            || (c->has_validity && (c->start + n + 7) / 8 > c->validity.len)) {
        PyErr_SetString(PyExc_ValueError, "row_sums: a column has fewer rows than chunks");
        release(c);
        return -1;
    }
    return 0;
fail_off:
    PyBuffer_Release(&c->offsets);
fail_valid:
    if (c->has_validity) PyBuffer_Release(&c->validity);
    return -1;
}

/* The row's text through `s`, short parts gathered in buf (at least 2 * LONG_VALUE + 32
   bytes); -1 when an offset lies outside its data. */
static int hash_row(Sha1 *s, const Column *cols, Py_ssize_t ncols, Py_ssize_t i,
                    uint8_t *buf, size_t cap) {
    size_t used = 0;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        const Column *c = &cols[k];
        if (k) buf[used++] = ',';
        if (is_null(c, i)) {
            buf[used++] = 'N';
        } else {
            int64_t a = offset_at(c, i), b = offset_at(c, i + 1);
            if (a < 0 || b < a || b > c->data.len) return -1;
            size_t len = (size_t)(b - a);
            if (c->framed) {
                char num[24];
                int m = 0;
                size_t v = len;
                do { num[m++] = (char)('0' + v % 10); v /= 10; } while (v);
                while (m) buf[used++] = (uint8_t)num[--m];
                buf[used++] = ':';
            }
            const uint8_t *p = (const uint8_t *)c->data.buf + a;
            if (len > LONG_VALUE) {
                sha1_update(s, buf, used);
                used = 0;
                sha1_update(s, p, len);
            } else {
                memcpy(buf + used, p, len);
                used += len;
            }
        }
        if (used > cap - LONG_VALUE - 32) {  /* room for one more short value and frame */
            sha1_update(s, buf, used);
            used = 0;
        }
    }
    sha1_update(s, buf, used);
    return 0;
}

PyObject *row_sums(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *cols_obj, *chunks_obj, *result = NULL;
    Py_buffer counts = {0}, xors = {0};
    if (!PyArg_ParseTuple(args, "O!O!w*w*", &PyList_Type, &cols_obj, &PyList_Type,
                          &chunks_obj, &counts, &xors))
        return NULL;
    Py_ssize_t ncols = PyList_GET_SIZE(cols_obj), n = PyList_GET_SIZE(chunks_obj);
    Py_ssize_t slots = counts.len / 8, got = 0;
    Column *cols = PyMem_Calloc((size_t)(ncols ? ncols : 1), sizeof(Column));
    int64_t *chunk = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!cols || !chunk) { PyErr_NoMemory(); goto done; }
    if (xors.len != counts.len) {
        PyErr_SetString(PyExc_ValueError, "row_sums: counts and xors differ in size");
        goto done;
    }
    for (; got < ncols; got++)
        if (take(PyList_GET_ITEM(cols_obj, got), &cols[got], n) < 0) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = PyLong_AsLongLong(PyList_GET_ITEM(chunks_obj, i));
        if (c == -1 && PyErr_Occurred()) goto done;
        if (c < 0 || c >= slots) {
            PyErr_Format(PyExc_ValueError, "row_sums: chunk %lld is not below %zd",
                         (long long)c, slots);
            goto done;
        }
        chunk[i] = c;
    }
    uint64_t *cnt = counts.buf, *x = xors.buf;
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    uint8_t buf[4096];
    for (Py_ssize_t i = 0; i < n; i++) {
        Sha1 s;
        uint8_t h[20];
        sha1_start(&s);
        if (hash_row(&s, cols, ncols, i, buf, sizeof buf) < 0) { bad = i; break; }
        sha1_finish(&s, h);
        uint64_t v = 0;
        for (int j = 0; j < 8; j++) v = v << 8 | h[j];
        cnt[chunk[i]] += 1;
        x[chunk[i]] ^= v;
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "row_sums: row %zd's offsets are out of its data", bad);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (Py_ssize_t k = 0; k < got; k++) release(&cols[k]);
    PyMem_Free(cols);
    PyMem_Free(chunk);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&xors);
    return result;
}
