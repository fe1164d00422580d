/* The RowDecoder type: __call__, many, json_many, count, construction (json_rows: image_rows.c).
 *
 * A compilation unit; rows.h declares what it gives the others. */
#include "common.h"
#include <structmember.h>
#include "rows.h"
#include "arrow.h"

static PyObject *RowDecoder_call(RowDecoder *self, PyObject *args, PyObject *kw) {
    PyObject *bufobj;
    Py_ssize_t p;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "On", &bufobj, &p)) return NULL;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (p < 0) p = 0;
    PyObject *row = decode_row(self, bufobj, view.buf, view.len, &p);
    PyBuffer_Release(&view);
    if (row == NULL) return NULL;
    PyObject *res = Py_BuildValue("(Nn)", row, p);
    return res;
}

/* The buffer of many()/json_many()/count(), [p, end) clamped to it; -1 (view released)
   when it has no buffer or an image of no columns would have to fill bytes. */
int rows_view(RowDecoder *self, PyObject *bufobj, Py_buffer *view, Py_ssize_t *p,
              Py_ssize_t *end) {
    if (PyObject_GetBuffer(bufobj, view, PyBUF_SIMPLE) < 0) return -1;
    if (*end > view->len) *end = view->len;
    if (*p < 0) *p = 0;
    if (self->npresent == 0 && *p < *end) {
        PyErr_Format(PyExc_ValueError, "row image with no columns but %zd bytes left", *end - *p);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}


/* many()/json_many(): every row image in [pos, end) appended to `out` (with `after`:
   (before, after) pairs of an update), as value tuples or as JSON bytes. */
/* Append each row image of [p, end) to `out` (pairs with `adec`, an update's after
   image); returns where the images end, or -1 with an exception. Shared by many(),
   json_many() and the rows-event scanner (event_rows.c). */

Py_ssize_t many_into(RowDecoder *self, RowDecoder *adec, row_fn one, PyObject *bufobj,
                     const unsigned char *b, Py_ssize_t p, Py_ssize_t end, PyObject *out) {
    if (adec != NULL && one == decode_row)  /* an update: unchanged values decoded once */
        return pairs_into(self, adec, bufobj, b, p, end, out);
    while (p < end) {
        PyObject *row = one(self, bufobj, b, end, &p);
        if (row == NULL) return -1;
        if (adec != NULL) {
            PyObject *arow = one(adec, bufobj, b, end, &p);
            if (arow == NULL) { Py_DECREF(row); return -1; }
            PyObject *pair = PyTuple_Pack(2, row, arow);
            Py_DECREF(row);
            Py_DECREF(arow);
            if (pair == NULL) return -1;
            row = pair;
        }
        int rc = PyList_Append(out, row);
        Py_DECREF(row);
        if (rc < 0) return -1;
    }
    return p;
}

static PyObject *run_many(RowDecoder *self, PyObject *args, int json) {
    PyObject *bufobj, *out, *after = Py_None;
    Py_ssize_t p, end;
    Py_buffer view;
    if (json && !self->json) { PyErr_SetString(PyExc_TypeError, "built without JSON formatters"); return NULL; }
    if (!PyArg_ParseTuple(args, "OnnO!|O", &bufobj, &p, &end, &PyList_Type, &out, &after)) return NULL;
    RowDecoder *adec = NULL;
    if (after != Py_None) {
        if (Py_TYPE(after) != Py_TYPE((PyObject *)self) || (json && !((RowDecoder *)after)->json)) {
            PyErr_SetString(PyExc_TypeError, "after must be a RowDecoder (with JSON formatters for json_many)");
            return NULL;
        }
        adec = (RowDecoder *)after;
    }
    if (rows_view(self, bufobj, &view, &p, &end) < 0) return NULL;
    p = many_into(self, adec, json ? encode_row : decode_row, bufobj, view.buf, p, end, out);
    PyBuffer_Release(&view);
    return p < 0 ? NULL : PyLong_FromSsize_t(p);
}

static PyObject *RowDecoder_many(RowDecoder *self, PyObject *args) { return run_many(self, args, 0); }

static PyObject *RowDecoder_json_many(RowDecoder *self, PyObject *args) { return run_many(self, args, 1); }

/* ---- counting rows without decoding them ----
 * A replica that filters tables still has to know how many rows each skipped event holds
 * (a resume inside a transaction skips a count of rows that must not depend on the filter);
 * walking the images by their widths costs a fraction of building their values. */
/* A column op's width, for skip_value and skip_row's plan (row_widths): fixed (>= 0), minus
   the bytes of a length prefix, or INT32_MIN when only its Python decoder knows it. */
static int32_t op_width(const ColOp *op) {
    switch (op->op) {
    case OP_INT: case OP_ENUM: case OP_SET: case OP_BIT: return op->a;
    case OP_FLOAT: return 4;
    case OP_DOUBLE: return 8;
    case OP_YEAR: return 1;
    case OP_DATE: return 3;
    case OP_DATETIME2: return 5 + FRAC_BYTES[op->a];
    case OP_TIMESTAMP2: return 4 + FRAC_BYTES[op->a];
    case OP_TIME2: return 3 + FRAC_BYTES[op->a];
    case OP_DECIMAL: {
        int intg = op->a - op->b;
        return DIG2BYTES[intg % 9] + 4 * (intg / 9 + op->b / 9) + DIG2BYTES[op->b % 9];
    }
    case OP_STR: case OP_LENCALL: return -op->a;
    case OP_NONE: return 0;
    default: return INT32_MIN;
    }
}

int skip_value(const ColOp *op, PyObject *bufobj, const unsigned char *b, Py_ssize_t n,
               Py_ssize_t *pp) {
    Py_ssize_t p = *pp, len;
    int32_t w = op_width(op);
    if (w > 0) {
        NEEDI(w);
        p += w;
    } else if (w < 0 && w != INT32_MIN) {  /* a length prefix of -w bytes, then the value */
        NEEDI(-w);
        len = (Py_ssize_t)le(b + p, -w);
        p += -w;
        NEEDI(len);
        p += len;
    } else if (w == INT32_MIN) {  /* OP_POSCALL: only the Python decoder knows the width */
        PyObject *v = decode_value(op, bufobj, b, n, &p);
        if (v == NULL) return -1;
        Py_DECREF(v);
    }
    *pp = p;
    return 0;
}

/* The widths of the present columns (RowDecoder.widths), or NULL with none to give. Why:
   a replica that leaves a table out still walks its rows to count them (see above), and a
   switch per value with a bounds check in each is slow there; with a plan a value is an
   add. */
static int32_t *row_widths(const ColOp *ops, Py_ssize_t ncols, Py_ssize_t npresent) {
    int32_t *w = PyMem_Malloc((npresent ? npresent : 1) * sizeof(int32_t));
    if (w == NULL) return NULL;
    for (Py_ssize_t i = 0, k = 0; i < ncols; i++) {
        if (ops[i].op == OP_ABSENT) continue;
        if ((w[k++] = op_width(&ops[i])) == INT32_MIN) { PyMem_Free(w); return NULL; }
    }
    return w;
}

static int skip_row_slow(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                         Py_ssize_t n, Py_ssize_t *pp);

/* One row image walked: *pp moved past it; -1 with ValueError if it is cut short. */
static int skip_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b, Py_ssize_t n,
                    Py_ssize_t *pp) {
    const int32_t *w = self->widths;
    if (w == NULL) return skip_row_slow(self, bufobj, b, n, pp);
    Py_ssize_t p = *pp, nb = (self->npresent + 7) / 8;
    if (nb > n - p) return skip_row_slow(self, bufobj, b, n, pp);  /* (it names the fault) */
    const unsigned char *nulls = b + p;
    p += nb;
    for (Py_ssize_t k = 0; k < self->npresent; k++) {
        if (nulls[k >> 3] & (1 << (k & 7))) continue;
        int32_t x = w[k];
        if (x >= 0) { p += x; continue; }
        /* a length prefix is read only whole inside the image (p may have run past its end
           on fixed widths: then so does the prefix) */
        if (p > n + x) return skip_row_slow(self, bufobj, b, n, pp);
        p += (Py_ssize_t)le(b + p, -x) - x;
    }
    if (p > n) return skip_row_slow(self, bufobj, b, n, pp);
    *pp = p;
    return 0;
}

static int skip_row_slow(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                         Py_ssize_t n, Py_ssize_t *pp) {
    Py_ssize_t p = *pp, nb = (self->npresent + 7) / 8, k = 0;
    NEEDI(nb);
    const unsigned char *nulls = b + p;
    p += nb;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        const ColOp *op = &self->ops[i];
        if (op->op == OP_ABSENT) continue;
        if (!(nulls[k >> 3] & (1 << (k & 7))) && skip_value(op, bufobj, b, n, &p) < 0) return -1;
        k++;
    }
    *pp = p;
    return 0;
}

/* count(buf, pos, end[, after]) -> (rows, pos): the row images (pairs with `after`) in
   [pos, end), walked but not decoded. */
/* The row images (pairs with `adec`) of [*pp, end) walked: how many, *pp moved to their
   end; -1 with an exception. */
Py_ssize_t count_rows(RowDecoder *self, RowDecoder *adec, PyObject *bufobj,
                      const unsigned char *b, Py_ssize_t *pp, Py_ssize_t end) {
    Py_ssize_t rows = 0;
    while (*pp < end) {
        if (skip_row(self, bufobj, b, end, pp) < 0) return -1;
        if (adec != NULL && skip_row(adec, bufobj, b, end, pp) < 0) return -1;
        rows++;
    }
    return rows;
}

static PyObject *RowDecoder_count(RowDecoder *self, PyObject *args) {
    PyObject *bufobj, *after = Py_None;
    Py_ssize_t p, end;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "Onn|O", &bufobj, &p, &end, &after)) return NULL;
    if (after != Py_None && Py_TYPE(after) != Py_TYPE((PyObject *)self)) {
        PyErr_SetString(PyExc_TypeError, "after must be a RowDecoder");
        return NULL;
    }
    if (rows_view(self, bufobj, &view, &p, &end) < 0) return NULL;
    Py_ssize_t rows = count_rows(self, after == Py_None ? NULL : (RowDecoder *)after, bufobj,
                                 view.buf, &p, end);
    PyBuffer_Release(&view);
    return rows < 0 ? NULL : Py_BuildValue("nn", rows, p);
}

static void free_op(ColOp *op) {
    Py_XDECREF(op->obj);
    Py_XDECREF(op->fmt);
    Py_XDECREF(op->key);
    Py_XDECREF(op->jlabels);
    PyMem_Free(op->charmap);
}

static void RowDecoder_dealloc(RowDecoder *self) {
    if (self->ops != NULL) {
        for (Py_ssize_t i = 0; i < self->ncols; i++) free_op(&self->ops[i]);
        PyMem_Free(self->ops);
    }
    PyMem_Free(self->out.p);
    PyMem_Free(self->widths);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* RowDecoder(ops): ops is a sequence of (op, a, b, c, obj) per column of the table. */
static int RowDecoder_init(RowDecoder *self, PyObject *args, PyObject *kw) {
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "O", &seq)) return -1;
    PyObject *fast = PySequence_Fast(seq, "ops must be a sequence");
    if (fast == NULL) return -1;
    Py_ssize_t ncols = PySequence_Fast_GET_SIZE(fast);
    ColOp *ops = PyMem_Calloc(ncols ? ncols : 1, sizeof(ColOp));
    if (ops == NULL) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    Py_ssize_t npresent = 0;
    int json = 0;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i), *obj, *fmt = NULL, *key = NULL, *jl = NULL;
        ColOp *op = &ops[i];
        if (!PyArg_ParseTuple(item, "iiiiO|OSO", &op->op, &op->a, &op->b, &op->c, &obj, &fmt, &key, &jl))
            goto fail;
        Py_INCREF(obj);
        op->obj = obj;
        if (i == 0) json = fmt != NULL;
        if ((fmt != NULL) != json || (fmt != NULL && key == NULL)) {
            PyErr_SetString(PyExc_TypeError, "give (fmt, key[, labels]) for every column or none");
            goto fail;
        }
        if (fmt != NULL) {
            Py_INCREF(fmt); op->fmt = fmt;
            Py_INCREF(key); op->key = key;
            if (jl != NULL && jl != Py_None) {
                if (!PyTuple_Check(jl)) { PyErr_SetString(PyExc_TypeError, "labels must be a tuple"); goto fail; }
                for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(jl); j++)
                    if (!PyBytes_Check(PyTuple_GET_ITEM(jl, j))) {
                        PyErr_SetString(PyExc_TypeError, "JSON labels must be bytes");
                        goto fail;
                    }
                Py_INCREF(jl); op->jlabels = jl;
            }
        }
        if (op->op == OP_STR && op->c == TXT_CHARMAP) {
            if (!PyUnicode_Check(obj) || PyUnicode_GET_LENGTH(obj) != 256) {
                PyErr_SetString(PyExc_TypeError, "charmap must be a 256-character str");
                goto fail;
            }
            op->charmap = PyMem_Malloc(256 * sizeof(uint32_t));
            if (op->charmap == NULL) { PyErr_NoMemory(); goto fail; }
            for (int j = 0; j < 256; j++) op->charmap[j] = PyUnicode_ReadChar(obj, j);
        }
        if (op->op < OP_ABSENT || op->op > OP_POSCALL) {
            PyErr_Format(PyExc_ValueError, "unknown column op %d", op->op);
            goto fail;
        }
        if ((op->op == OP_INT || op->op == OP_BIT || op->op == OP_ENUM || op->op == OP_SET)
            && (op->a < 1 || op->a > 8)) {
            PyErr_Format(PyExc_ValueError, "column %zd: width %d out of range", i, op->a);
            goto fail;
        }
        if ((op->op == OP_STR || op->op == OP_LENCALL) && (op->a < 1 || op->a > 4)) {
            PyErr_Format(PyExc_ValueError, "column %zd: length prefix %d out of range", i, op->a);
            goto fail;
        }
        if ((op->op == OP_DATETIME2 || op->op == OP_TIMESTAMP2 || op->op == OP_TIME2)
            && (op->a < 0 || op->a > 6)) {
            PyErr_Format(PyExc_ValueError, "column %zd: fsp %d out of range", i, op->a);
            goto fail;
        }
        if (op->op == OP_DECIMAL && (op->a < 1 || op->a > 65 || op->b < 0 || op->b > op->a || op->b > 38)) {
            PyErr_Format(g_decode_error ? g_decode_error : PyExc_ValueError,
                         "invalid DECIMAL(%d,%d) metadata", op->a, op->b);
            goto fail;
        }
        if ((op->op == OP_ENUM || op->op == OP_SET) && obj != Py_None && !PyTuple_Check(obj)) {
            PyErr_SetString(PyExc_TypeError, "ENUM/SET labels must be a tuple or None");
            goto fail;
        }
        if (op->op == OP_STR && (op->c < TXT_BYTES || op->c > TXT_INET4
                                 || (op->c >= TXT_UUID && op->b != (op->c == TXT_INET4 ? 4 : 16)))) {
            PyErr_Format(PyExc_ValueError, "column %zd: text mode %d (width %d) out of range",
                         i, op->c, op->b);
            goto fail;
        }
        if (op->op == OP_STR && op->c == TXT_CODEC) {
            if (!PyUnicode_Check(obj)) { PyErr_SetString(PyExc_TypeError, "codec must be a str"); goto fail; }
            op->codec = PyUnicode_AsUTF8(obj);
            if (op->codec == NULL) goto fail;
        }
        if (op->op != OP_ABSENT) npresent++;
    }
    Py_DECREF(fast);
    self->ops = ops;
    self->ncols = ncols;
    self->npresent = npresent;
    self->widths = row_widths(ops, ncols, npresent);  /* (NULL: the slow walk) */
    self->json = json;
    return 0;
fail:
    for (Py_ssize_t i = 0; i < ncols; i++) free_op(&ops[i]);
    PyMem_Free(ops);
    Py_DECREF(fast);
    return -1;
}


static PyMethodDef RowDecoder_methods[] = {
    {"many", (PyCFunction)RowDecoder_many, METH_VARARGS,
     "many(buf, pos, end, out[, after]) -> pos: append each row image in [pos, end) to out "
     "(with after: (before, after) pairs of an update)."},
    {"json", (PyCFunction)RowDecoder_json, METH_VARARGS,
     "json(buf, pos) -> (image as JSON bytes, pos) (decoders built with formatters only)."},
    {"json_many", (PyCFunction)RowDecoder_json_many, METH_VARARGS,
     "json_many(buf, pos, end, out[, after]) -> pos: like many(), images as JSON bytes."},
    {"json_rows", (PyCFunction)RowDecoder_json_rows, METH_VARARGS,
     "json_rows(buf, pos, end[, after]) -> (ImageRows, pos): the images as JSON, packed."},
    {"count", (PyCFunction)RowDecoder_count, METH_VARARGS,
     "count(buf, pos, end[, after]) -> (rows, pos): row images walked, not decoded."},
    {NULL, NULL, 0, NULL}
};

PyTypeObject RowDecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.RowDecoder",
    .tp_basicsize = sizeof(RowDecoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled row-image decoder for one table shape: decoder(buf, pos) -> (row, pos).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RowDecoder_init,
    .tp_dealloc = (destructor)RowDecoder_dealloc,
    .tp_call = (ternaryfunc)RowDecoder_call,
    .tp_methods = RowDecoder_methods,
};

