/* text_columns(buf, pos, ncols, max_rows, max_bytes) -> (end, rows, columns): packed text
 * rows (each a 4-byte little-endian length and a ProtocolText::ResultsetRow payload) split
 * into one Arrow binary array's buffers per column: (validity bytes or None, int32
 * offsets, data, NULL count). The same contract and errors as protocol/results.py's
 * split_text_rows (the reference): two passes, one to measure and check, one to copy. */
#include "text_rows.h"

static PyObject *g_protocol_error;

static int protocol_error(const char *fmt, Py_ssize_t a, Py_ssize_t b) {
    if (g_protocol_error == NULL) {
        PyObject *m = PyImport_ImportModule("binlake.errors");
        if (m == NULL) return -1;
        g_protocol_error = PyObject_GetAttrString(m, "ProtocolError");
        Py_DECREF(m);
        if (g_protocol_error == NULL) return -1;
    }
    char msg[200];
    PyOS_snprintf(msg, sizeof msg, fmt, a, b);
    PyErr_SetString(g_protocol_error, msg);
    return -1;
}

/* One value's header at p (inside [p, end)): its size, or -1 for NULL; *hdr its bytes.
   Returns 0, or -2 when the header or value runs past `end`, -3 for a bad marker. */
static inline int value_at(const uint8_t *p, const uint8_t *end, Py_ssize_t *size,
                           Py_ssize_t *hdr) {
    uint8_t first = p[0];
    if (first < 0xFB) { *size = first; *hdr = 1; }
    else if (first == 0xFB) { *size = -1; *hdr = 1; return 0; }
    else if (first == 0xFC) {
        if (end - p < 3) return -2;
        *size = p[1] | (p[2] << 8); *hdr = 3;
    } else if (first == 0xFD) {
        if (end - p < 4) return -2;
        *size = p[1] | (p[2] << 8) | ((Py_ssize_t)p[3] << 16); *hdr = 4;
    } else if (first == 0xFE) {
        if (end - p < 9) return -2;
        uint64_t v = 0;
        for (int i = 8; i >= 1; i--) v = (v << 8) | p[i];
        if (v > (uint64_t)PY_SSIZE_T_MAX) return -2;
        *size = (Py_ssize_t)v; *hdr = 9;
    } else return -3;
    if (*size > end - p - *hdr) return -2;
    return 0;
}

PyObject *text_columns(PyObject *mod, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, ncols, max_rows, max_bytes;
    (void)mod;
    if (!PyArg_ParseTuple(args, "y*nnnn", &view, &pos, &ncols, &max_rows, &max_bytes))
        return NULL;
    PyObject *result = NULL, *cols = NULL;
    Py_ssize_t *lens = NULL, *nulls = NULL;
    const uint8_t *buf = (const uint8_t *)view.buf;
    Py_ssize_t n = view.len;
    if (ncols < 1 || pos < 0 || pos > n) {
        PyErr_SetString(PyExc_ValueError, "text_columns: bad position or column count");
        goto done;
    }
    lens = PyMem_Calloc((size_t)ncols, sizeof(Py_ssize_t));
    nulls = PyMem_Calloc((size_t)ncols, sizeof(Py_ssize_t));
    if (lens == NULL || nulls == NULL) { PyErr_NoMemory(); goto done; }
    /* pass 1: how many rows, each column's bytes and NULLs; every row checked */
    Py_ssize_t rows = 0, taken = 0, at = pos;
    while (at < n && rows < max_rows && taken < max_bytes) {
        if (n - at < 4) {
            protocol_error("packed row at offset %zd: its length is cut short", at, 0);
            goto done;
        }
        Py_ssize_t length = (Py_ssize_t)(buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16)
                                         | ((uint32_t)buf[at + 3] << 24));
        const uint8_t *p = buf + at + 4, *end = p + length;
        if (length > n - at - 4) {
            protocol_error("packed row at offset %zd runs past the end of the rows", at, 0);
            goto done;
        }
        for (Py_ssize_t c = 0; c < ncols; c++) {
            Py_ssize_t size, hdr;
            if (p >= end) {
                protocol_error("row at offset %zd has fewer than %zd values", at, ncols);
                goto done;
            }
            int rc = value_at(p, end, &size, &hdr);
            if (rc == -3) {
                protocol_error("row at offset %zd: bad length marker in column %zd", at, c);
                goto done;
            }
            if (rc < 0) {
                protocol_error("row at offset %zd: a value runs past the end of the row",
                               at, 0);
                goto done;
            }
            if (size < 0) { nulls[c]++; p += 1; continue; }
            lens[c] += size;
            p += hdr + size;
        }
        if (p != end) {
            protocol_error("row at offset %zd has %zd bytes after its values", at, end - p);
            goto done;
        }
        taken += length;
        rows++;
        at += 4 + length;
    }
    for (Py_ssize_t c = 0; c < ncols; c++) {
        if (lens[c] >= ((Py_ssize_t)1 << 31)) {
            protocol_error("column %zd: more than 2 GiB of values in one batch", c, 0);
            goto done;
        }
    }
    /* pass 2: the buffers */
    cols = PyList_New(ncols);
    if (cols == NULL) goto done;
    {
        char **data = PyMem_Calloc((size_t)ncols, sizeof(char *));
        int32_t **offs = PyMem_Calloc((size_t)ncols, sizeof(int32_t *));
        uint8_t **bits = PyMem_Calloc((size_t)ncols, sizeof(uint8_t *));
        int ok = data != NULL && offs != NULL && bits != NULL;
        if (!ok) PyErr_NoMemory();
        for (Py_ssize_t c = 0; ok && c < ncols; c++) {
            PyObject *d = PyBytes_FromStringAndSize(NULL, lens[c]);
            PyObject *o = PyBytes_FromStringAndSize(NULL, (rows + 1) * 4);
            PyObject *v = nulls[c] ? PyBytes_FromStringAndSize(NULL, (rows + 7) / 8) : Py_None;
            if (v == Py_None) Py_INCREF(v);
            PyObject *nn = PyLong_FromSsize_t(nulls[c]);
            PyObject *t = (d && o && v && nn) ? PyTuple_Pack(4, v, o, d, nn) : NULL;
            Py_XDECREF(d); Py_XDECREF(o); Py_XDECREF(v); Py_XDECREF(nn);
            if (t == NULL) { ok = 0; break; }
            PyList_SET_ITEM(cols, c, t);
            data[c] = PyBytes_AS_STRING(PyTuple_GET_ITEM(t, 2));
            offs[c] = (int32_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(t, 1));
            offs[c][0] = 0;
            if (nulls[c]) {
                bits[c] = (uint8_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(t, 0));
                memset(bits[c], 0, (size_t)((rows + 7) / 8));
            }
            lens[c] = 0;  /* now: bytes written */
        }
        at = pos;
        for (Py_ssize_t r = 0; ok && r < rows; r++) {
            Py_ssize_t length = (Py_ssize_t)(buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16)
                                             | ((uint32_t)buf[at + 3] << 24));
            const uint8_t *p = buf + at + 4, *end = p + length;
            for (Py_ssize_t c = 0; c < ncols; c++) {
                Py_ssize_t size = -1, hdr = 1;
                value_at(p, end, &size, &hdr);  /* checked in pass 1 */
                if (size < 0) {
                    p += 1;
                } else {
                    memcpy(data[c] + lens[c], p + hdr, (size_t)size);
                    lens[c] += size;
                    p += hdr + size;
                    if (bits[c]) bits[c][r >> 3] |= (uint8_t)(1u << (r & 7));
                }
                offs[c][r + 1] = (int32_t)lens[c];
            }
            at += 4 + length;
        }
        PyMem_Free(data); PyMem_Free(offs); PyMem_Free(bits);
        if (!ok) goto done;
    }
    result = Py_BuildValue("nnO", at, rows, cols);
done:
    Py_XDECREF(cols);
    PyMem_Free(lens);
    PyMem_Free(nulls);
    PyBuffer_Release(&view);
    return result;
}
