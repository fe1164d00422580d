/* A rows event's JSON images packed in one buffer per side (the Arrow/Spark path).
 *
 * Why: a bytes object per image costs an allocation, a copy and a free per row, and the
 * images would be copied once more into the Arrow column. ImageRows keeps an event's images
 * back to back (an update's before and after images on two sides), and an ImageColumn
 * (image_column.c) copies a whole run of them into its column with one memcpy. ImageRows
 * still reads as the list of rows it replaces (len, index, iterate, compare): bytes per
 * image, (before, after) pairs for an update, built on access.
 *
 * A compilation unit; arrow.h declares what it gives the others. */
#include "common.h"
#include "text.h"
#include "rows.h"
#include "arrow.h"

/* Freed buffers kept for reuse (all under the GIL): the image buffers of freed ImageRows
 * (img_pool) and the data of freed Arrow image columns (col_pool, image_column.c).
 *
 * Why: a CDC batch holds some MiB of images, all freed at once when it is flushed or
 * dropped; malloc would give that memory back to the OS (the heap's top trimmed, a big
 * block unmapped) and the next batch's images would be written into fresh pages, each one
 * faulted in and zeroed by the kernel. Bounded: at most `slots` buffers and `limit` bytes
 * in a pool; what does not fit is freed. (Pooled and BufPool: arrow.h.) */
static Pooled img_pool_slots[256];
static BufPool img_pool = {img_pool_slots, 256, 0, 0, (Py_ssize_t)32 << 20};

void pool_put(BufPool *pool, char *p, Py_ssize_t cap) {
    if (p == NULL) return;
    if (pool->n < pool->slots && pool->bytes + cap <= pool->limit) {
        pool->slot[pool->n].p = p;
        pool->slot[pool->n].cap = cap;
        pool->n++;
        pool->bytes += cap;
        return;
    }
    PyMem_Free(p);
}

/* An empty buffer of at least `want` bytes from the pool into *b: the smallest that fits,
   and, with `close` set, not over four times `want` (a small event must not pin a big
   buffer); b is left as it is when none fits. */
void pool_take(BufPool *pool, Buf *b, Py_ssize_t want, int close) {
    int best = -1;
    for (int i = pool->n - 1; i >= 0; i--) {
        Py_ssize_t cap = pool->slot[i].cap;
        if (cap >= want && (!close || cap / 4 <= want)
                && (best < 0 || cap < pool->slot[best].cap)) {
            best = i;
            if (cap - want <= want / 8) break;  /* close enough */
        }
    }
    if (best < 0) return;
    b->p = pool->slot[best].p;
    b->cap = pool->slot[best].cap;
    b->len = 0;
    pool->bytes -= b->cap;
    pool->slot[best] = pool->slot[--pool->n];
}

static void ImageRows_dealloc(ImageRows *self) {
    for (int s = 0; s < 2; s++) {
        pool_put(&img_pool, self->data[s], self->cap[s]);
        PyMem_Free(self->ends[s]);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t ImageRows_len(ImageRows *self) { return self->n; }

static PyObject *image_bytes(ImageRows *self, int s, Py_ssize_t i) {
    Py_ssize_t start = i ? self->ends[s][i - 1] : 0;
    return PyBytes_FromStringAndSize(self->data[s] + start, self->ends[s][i] - start);
}

static PyObject *ImageRows_item(ImageRows *self, Py_ssize_t i) {
    if (i < 0 || i >= self->n) {
        PyErr_SetString(PyExc_IndexError, "row index out of range");
        return NULL;
    }
    if (self->sides == 1) return image_bytes(self, 0, i);
    PyObject *before = image_bytes(self, 0, i), *after = image_bytes(self, 1, i);
    if (before == NULL || after == NULL) {
        Py_XDECREF(before);
        Py_XDECREF(after);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, before, after);
    Py_DECREF(before);
    Py_DECREF(after);
    return pair;
}

/* `count` rows from `start`, every `step`-th, as a list */
static PyObject *ImageRows_list(ImageRows *self, Py_ssize_t start, Py_ssize_t step,
                                Py_ssize_t count) {
    PyObject *out = PyList_New(count);
    if (out == NULL) return NULL;
    for (Py_ssize_t k = 0, i = start; k < count; k++, i += step) {
        PyObject *row = ImageRows_item(self, i);
        if (row == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, k, row);
    }
    return out;
}

static PyObject *ImageRows_subscript(ImageRows *self, PyObject *key) {
    if (PySlice_Check(key)) {  /* a slice is a plain list of rows */
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
        Py_ssize_t count = PySlice_AdjustIndices(self->n, &start, &stop, step);
        return ImageRows_list(self, start, step, count);
    }
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0) i += self->n;
    return ImageRows_item(self, i);
}

static PyObject *ImageRows_richcompare(ImageRows *self, PyObject *other, int opid) {
    if ((opid != Py_EQ && opid != Py_NE) || !(PyList_Check(other) || Py_TYPE(other) == &ImageRowsType))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *mine = ImageRows_list(self, 0, 1, self->n);
    if (mine == NULL) return NULL;
    PyObject *theirs = other;
    if (Py_TYPE(other) == &ImageRowsType) {
        ImageRows *o = (ImageRows *)other;
        theirs = ImageRows_list(o, 0, 1, o->n);
        if (theirs == NULL) { Py_DECREF(mine); return NULL; }
    } else {
        Py_INCREF(theirs);
    }
    PyObject *res = PyObject_RichCompare(mine, theirs, opid);
    Py_DECREF(mine);
    Py_DECREF(theirs);
    return res;
}

static PyObject *ImageRows_repr(ImageRows *self) {
    PyObject *rows = ImageRows_list(self, 0, 1, self->n);
    if (rows == NULL) return NULL;
    PyObject *r = PyObject_Repr(rows);
    Py_DECREF(rows);
    return r;
}

static PyObject *ImageRows_nbytes(ImageRows *self, PyObject *args) {
    Py_ssize_t start = 0, stop = self->n, total = 0;
    if (!PyArg_ParseTuple(args, "|nn", &start, &stop)) return NULL;
    if (start < 0) start = 0;
    if (stop > self->n) stop = self->n;
    for (int s = 0; s < self->sides && start < stop; s++)
        total += self->ends[s][stop - 1] - (start ? self->ends[s][start - 1] : 0);
    return PyLong_FromSsize_t(total);
}

static PyMethodDef ImageRows_methods[] = {
    {"nbytes", (PyCFunction)ImageRows_nbytes, METH_VARARGS,
     "nbytes([start, stop]) -> int: the size of the images of rows [start, stop), both sides."},
    {NULL, NULL, 0, NULL}
};

static PySequenceMethods ImageRows_as_sequence = {
    .sq_length = (lenfunc)ImageRows_len,
    .sq_item = (ssizeargfunc)ImageRows_item,
};

static PyMappingMethods ImageRows_as_mapping = {
    .mp_length = (lenfunc)ImageRows_len,
    .mp_subscript = (binaryfunc)ImageRows_subscript,
};

PyTypeObject ImageRowsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.ImageRows",
    .tp_basicsize = sizeof(ImageRows),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A rows event's JSON images, packed; reads as the list of rows (bytes per image, "
              "(before, after) pairs for an update). Made by RowDecoder.json_rows().",
    .tp_dealloc = (destructor)ImageRows_dealloc,
    .tp_as_sequence = &ImageRows_as_sequence,
    .tp_as_mapping = &ImageRows_as_mapping,
    .tp_richcompare = (richcmpfunc)ImageRows_richcompare,
    .tp_repr = (reprfunc)ImageRows_repr,
    .tp_methods = ImageRows_methods,
    .tp_hash = PyObject_HashNotImplemented,
};

/* One side being written: its images' bytes and where each ends. */
typedef struct { Buf data; Py_ssize_t *ends, cap; } Side;

static int side_mark(Side *sd, Py_ssize_t i) {
    if (i >= sd->cap) {
        Py_ssize_t *ne = grow_array(sd->ends, &sd->cap, i + 1, 16, sizeof(Py_ssize_t));
        if (ne == NULL) return -1;
        sd->ends = ne;
    }
    sd->ends[i] = sd->data.len;
    return 0;
}

/* json_rows(buf, pos, end[, after]) -> (ImageRows, pos): like json_many(), every image of
   [pos, end) written straight into the event's packed buffers. */
PyObject *RowDecoder_json_rows(RowDecoder *self, PyObject *args) {
    PyObject *bufobj, *after = Py_None;
    Py_ssize_t p, end;
    Py_buffer view;
    if (!self->json) { PyErr_SetString(PyExc_TypeError, "built without JSON formatters"); return NULL; }
    if (!PyArg_ParseTuple(args, "Onn|O", &bufobj, &p, &end, &after)) return NULL;
    RowDecoder *dec[2] = {self, NULL};
    if (after != Py_None) {
        if (Py_TYPE(after) != Py_TYPE((PyObject *)self) || !((RowDecoder *)after)->json) {
            PyErr_SetString(PyExc_TypeError, "after must be a RowDecoder with JSON formatters");
            return NULL;
        }
        dec[1] = (RowDecoder *)after;
    }
    int sides = dec[1] ? 2 : 1;
    if (rows_view(self, bufobj, &view, &p, &end) < 0) return NULL;
    const unsigned char *b = view.buf;
    Side sd[2] = {{{0}}, {{0}}};
    Span stack[SPANS_ON_STACK], *spans = NULL;
    /* JSON text runs a little longer than the binary image: one allocation in the common case */
    Py_ssize_t guess = (end - p) / sides + (end - p) / (2 * sides) + 64;
    for (int s = 0; s < sides; s++) {
        pool_take(&img_pool, &sd[s].data, guess, 1);
        if (buf_reserve(&sd[s].data, guess) < 0) goto fail;
    }
    Py_ssize_t n = 0;
    /* an update's after image: its unchanged values' text copied from the before image's */
    if (sides == 2) spans = spans_plan(dec[0], dec[1], 1, stack);
    while (p < end) {
        if (write_row_spans(dec[0], bufobj, b, end, &p, &sd[0].data, spans, NULL) < 0
            || side_mark(&sd[0], n) < 0)
            goto fail;
        if (sides == 2 && (write_row_spans(dec[1], bufobj, b, end, &p, &sd[1].data, spans,
                                           spans != NULL ? sd[0].data.p : NULL) < 0
                           || side_mark(&sd[1], n) < 0))
            goto fail;
        n++;
    }
    spans_free(spans, stack);
    PyBuffer_Release(&view);
    ImageRows *rows = PyObject_New(ImageRows, &ImageRowsType);
    if (rows == NULL) goto fail_released;
    rows->n = n;
    rows->sides = sides;
    for (int s = 0; s < 2; s++) {
        Buf *d = &sd[s].data;
        if (d->p != NULL && d->cap - d->len > 4096 && d->cap - d->len > d->len) {
            /* give back the slack (the buffer held twice its images or more) */
            char *np = PyMem_Realloc(d->p, d->len ? d->len : 1);
            if (np != NULL) {
                d->p = np;
                d->cap = d->len ? d->len : 1;
            }
        }
        rows->data[s] = d->p;
        rows->cap[s] = d->cap;
        rows->ends[s] = sd[s].ends;
    }
    return Py_BuildValue("(Nn)", (PyObject *)rows, p);
fail:
    spans_free(spans, stack);
    PyBuffer_Release(&view);
fail_released:
    for (int s = 0; s < 2; s++) {
        pool_put(&img_pool, sd[s].data.p, sd[s].data.cap);
        PyMem_Free(sd[s].ends);
    }
    return NULL;
}

