/* A rows event's JSON images packed in one buffer per side, and Arrow string columns built
 * from them (the Arrow/Spark path).
 *
 * Why: a bytes object per image cost an allocation, a copy and a free per row, and the
 * images were copied once more into the Arrow column. ImageRows keeps an event's images
 * back to back (an update's before and after images on two sides), and image_column()
 * copies a whole run of them into the column with one memcpy. ImageRows still reads as the
 * list of rows it replaces (len, index, iterate, compare): bytes per image, (before, after)
 * pairs for an update, built on access.
 *
 * Part of _speedups.c: one translation unit, these parts included in order (every
 * function static), so the parts read as modules without a C API between them. */
#ifndef BINLAKE_SPEEDUPS_IMAGE_ROWS_H
#define BINLAKE_SPEEDUPS_IMAGE_ROWS_H

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;            /* rows */
    int sides;               /* 2 for an update (before, after), else 1 */
    char *data[2];           /* each side's images back to back */
    Py_ssize_t *ends[2];     /* ends[s][i]: where image i of side s ends in data[s] */
} ImageRows;

static PyTypeObject ImageRowsType;

static void ImageRows_dealloc(ImageRows *self) {
    for (int s = 0; s < 2; s++) {
        PyMem_Free(self->data[s]);
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

static PyTypeObject ImageRowsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake.binlog.columns._speedups.ImageRows",
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
        Py_ssize_t cap = sd->cap ? sd->cap * 2 : 16;
        Py_ssize_t *ne = PyMem_Realloc(sd->ends, cap * sizeof(Py_ssize_t));
        if (ne == NULL) { PyErr_NoMemory(); return -1; }
        sd->ends = ne;
        sd->cap = cap;
    }
    sd->ends[i] = sd->data.len;
    return 0;
}

/* json_rows(buf, pos, end[, after]) -> (ImageRows, pos): like json_many(), every image of
   [pos, end) written straight into the event's packed buffers. */
static PyObject *RowDecoder_json_rows(RowDecoder *self, PyObject *args) {
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
    for (int s = 0; s < sides; s++)
        if (buf_reserve(&sd[s].data, guess) < 0) goto fail;
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
        if (d->p != NULL && d->cap - d->len > 4096 && d->cap - d->len > d->len / 4) {
            char *np = PyMem_Realloc(d->p, d->len ? d->len : 1);  /* give back the slack */
            if (np != NULL) d->p = np;
        }
        rows->data[s] = d->p;
        rows->ends[s] = sd[s].ends;
    }
    return Py_BuildValue("(Nn)", (PyObject *)rows, p);
fail:
    spans_free(spans, stack);
    PyBuffer_Release(&view);
fail_released:
    for (int s = 0; s < 2; s++) {
        PyMem_Free(sd[s].data.p);
        PyMem_Free(sd[s].ends);
    }
    return NULL;
}

/* image_column(parts, allocate) -> (rows, validity or None, offsets, data): the buffers of
   an Arrow string column, the data written into allocate(total) (pyarrow.allocate_buffer:
   Arrow's pool reuses its pages). Parts, in order: an int k (k nulls), a list of bytes/None,
   or (ImageRows, side, start, stop), a run of an event's packed images (one memcpy). One
   pass to size, one to copy; no Python object per row. The images are UTF-8 already (the C
   writer validates every text it copies; the rest comes from str.encode()).

   (Writing the images of consecutive events into shared chunks that Arrow then views saved
   the copy, but cost as much in fresh pages for the chunks a batch pins, and more memory:
   measured no faster on the benchmark's 289 MB, peak RSS 132 -> 208 MB.) */
static int part_run(PyObject *part, ImageRows **rows, int *side, Py_ssize_t *start, Py_ssize_t *stop) {
    if (PyTuple_GET_SIZE(part) != 4 || Py_TYPE(PyTuple_GET_ITEM(part, 0)) != &ImageRowsType) {
        PyErr_SetString(PyExc_TypeError, "an image run is (ImageRows, side, start, stop)");
        return -1;
    }
    *rows = (ImageRows *)PyTuple_GET_ITEM(part, 0);
    Py_ssize_t sd = PyLong_AsSsize_t(PyTuple_GET_ITEM(part, 1));
    *start = PyLong_AsSsize_t(PyTuple_GET_ITEM(part, 2));
    *stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(part, 3));
    if (PyErr_Occurred()) return -1;
    *side = sd == 1;
    if (sd < 0 || sd >= (*rows)->sides || *start < 0 || *stop < *start || *stop > (*rows)->n) {
        PyErr_SetString(PyExc_ValueError, "image run out of range");
        return -1;
    }
    return 0;
}

static PyObject *image_column(PyObject *mod, PyObject *args) {
    PyObject *parts, *allocate;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &parts, &allocate)) return NULL;
    /* parts is our own list: copied to a tuple so allocate() (Python code) cannot change it */
    PyObject *frozen = PyList_AsTuple(parts);
    if (frozen == NULL) return NULL;
    PyObject *offsets = NULL, *validity = NULL, *data = NULL;
    Py_buffer view = {0};
    Py_ssize_t np = PyTuple_GET_SIZE(frozen), n = 0, nulls = 0, total = 0;
    ImageRows *rows;
    int side;
    Py_ssize_t start, stop;
    for (Py_ssize_t j = 0; j < np; j++) {
        PyObject *part = PyTuple_GET_ITEM(frozen, j);
        if (PyLong_Check(part)) {
            Py_ssize_t k = PyLong_AsSsize_t(part);
            if (k < 0) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative null run"); goto fail; }
            n += k;
            nulls += k;
        } else if (PyList_Check(part)) {
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(part); i++) {
                PyObject *v = PyList_GET_ITEM(part, i);
                n++;
                if (v == Py_None) { nulls++; continue; }
                if (!PyBytes_Check(v)) {
                    PyErr_Format(PyExc_TypeError, "row images must be bytes or None, not %.100s",
                                 Py_TYPE(v)->tp_name);
                    goto fail;
                }
                total += PyBytes_GET_SIZE(v);
            }
        } else if (PyTuple_Check(part)) {
            if (part_run(part, &rows, &side, &start, &stop) < 0) goto fail;
            n += stop - start;
            if (stop > start)
                total += rows->ends[side][stop - 1] - (start ? rows->ends[side][start - 1] : 0);
        } else {
            PyErr_Format(PyExc_TypeError, "not an image part: %.100s", Py_TYPE(part)->tp_name);
            goto fail;
        }
        if (total >= ((Py_ssize_t)1 << 31)) {  /* Arrow's string offsets are int32 */
            PyErr_SetString(PyExc_ValueError,
                            "a CDC batch holds 2 GiB of row images or more: lower its size");
            goto fail;
        }
    }
    offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 4);
    validity = nulls ? PyBytes_FromStringAndSize(NULL, (n + 7) / 8) : Py_NewRef(Py_None);
    if (offsets == NULL || validity == NULL) goto fail;
    data = PyObject_CallFunction(allocate, "n", total);
    if (data == NULL || PyObject_GetBuffer(data, &view, PyBUF_WRITABLE) < 0) goto fail;
    if (view.len < total) goto changed;
    char *d = view.buf;
    int32_t *off = (int32_t *)PyBytes_AS_STRING(offsets);
    unsigned char *bits = nulls ? (unsigned char *)PyBytes_AS_STRING(validity) : NULL;
    if (bits) memset(bits, 0xFF, (n + 7) / 8);
    Py_ssize_t at = 0, i = 0;
    off[0] = 0;
    for (Py_ssize_t j = 0; j < np; j++) {
        PyObject *part = PyTuple_GET_ITEM(frozen, j);
        if (PyLong_Check(part)) {
            Py_ssize_t k = PyLong_AsSsize_t(part);
            if (i + k > n || (k && bits == NULL)) goto changed;
            for (Py_ssize_t e = i + k; i < e; i++) {
                bits[i >> 3] &= (unsigned char)~(1 << (i & 7));
                off[i + 1] = (int32_t)at;
            }
        } else if (PyList_Check(part)) {
            /* allocate() ran Python code: the lists are checked again, not trusted */
            for (Py_ssize_t q = 0; q < PyList_GET_SIZE(part); q++, i++) {
                PyObject *v = PyList_GET_ITEM(part, q);
                if (i >= n) goto changed;
                if (v == Py_None) {
                    if (bits == NULL) goto changed;
                    bits[i >> 3] &= (unsigned char)~(1 << (i & 7));
                } else {
                    if (!PyBytes_Check(v) || at + PyBytes_GET_SIZE(v) > total) goto changed;
                    memcpy(d + at, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
                    at += PyBytes_GET_SIZE(v);
                }
                off[i + 1] = (int32_t)at;
            }
        } else {
            if (part_run(part, &rows, &side, &start, &stop) < 0) goto fail;
            if (stop == start) continue;
            Py_ssize_t *ends = rows->ends[side], base = start ? ends[start - 1] : 0;
            Py_ssize_t len = ends[stop - 1] - base;
            if (at + len > total || i + (stop - start) > n) goto changed;
            memcpy(d + at, rows->data[side] + base, len);
            Py_ssize_t shift = at - base;
            for (Py_ssize_t r = start; r < stop; r++) off[++i] = (int32_t)(ends[r] + shift);
            at += len;
        }
    }
    if (i != n || at != total) goto changed;
    if (view.obj) PyBuffer_Release(&view);
    Py_DECREF(frozen);
    return Py_BuildValue("(nNNN)", n, validity, offsets, data);
changed:
    PyErr_SetString(PyExc_RuntimeError, "row images changed while their column was built");
fail:
    if (view.obj) PyBuffer_Release(&view);
    Py_XDECREF(offsets);
    Py_XDECREF(validity);
    Py_XDECREF(data);
    Py_DECREF(frozen);
    return NULL;
}

/* run_column(values, ends, kind, scale, fill) -> (validity or None, data[, offsets]): the
   buffers of an Arrow column where value j fills rows [ends[j-1], ends[j]) (a CDC batch's
   per-event fields repeated over the event's rows), without pyarrow.compute (whose import
   alone costs a Python process more than a batch's flush). kind 'q' int64 (each value times
   `scale`), 'i' int32, 's' string (UTF-8; offsets returned too). None is a null, or `fill`
   when fill is not None (numbers only). */
static PyObject *run_column(PyObject *mod, PyObject *args) {
    PyObject *values, *fill;
    Py_buffer ends = {0};
    int kind;
    long long scale;
    if (!PyArg_ParseTuple(args, "Oy*CLO", &values, &ends, &kind, &scale, &fill)) return NULL;
    PyObject *seq = NULL, *validity = NULL, *data = NULL, *offsets = NULL, *res = NULL;
    if (ends.len % 4) {
        PyErr_SetString(PyExc_TypeError, "ends must be an int32 buffer");
        goto done;
    }
    seq = PySequence_Fast(values, "values must be a sequence");
    if (seq == NULL) goto done;
    Py_ssize_t nseg = PySequence_Fast_GET_SIZE(seq);
    if (nseg != ends.len / 4) {
        PyErr_SetString(PyExc_ValueError, "one run end per value");
        goto done;
    }
    const int32_t *end = ends.buf;
    Py_ssize_t n = nseg ? end[nseg - 1] : 0, nulls = 0;
    for (Py_ssize_t j = 0; j < nseg; j++)
        if (end[j] < (j ? end[j - 1] : 0)) { PyErr_SetString(PyExc_ValueError, "run ends must not decrease"); goto done; }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    if (fill == Py_None || kind == 's')
        for (Py_ssize_t j = 0; j < nseg; j++) if (items[j] == Py_None) nulls += end[j] - (j ? end[j - 1] : 0);
    unsigned char *bits = NULL;
    if (nulls) {
        validity = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
        if (validity == NULL) goto done;
        bits = (unsigned char *)PyBytes_AS_STRING(validity);
        memset(bits, 0, (n + 7) / 8);
    }
    if (kind == 'q' || kind == 'i') {
        int w = kind == 'q' ? 8 : 4;
        long long dflt = 0;
        if (fill != Py_None && (dflt = PyLong_AsLongLong(fill)) == -1 && PyErr_Occurred()) goto done;
        data = PyBytes_FromStringAndSize(NULL, n * w);
        if (data == NULL) goto done;
        char *d = PyBytes_AS_STRING(data);
        Py_ssize_t r = 0;
        for (Py_ssize_t j = 0; j < nseg; j++) {
            PyObject *v = items[j];
            long long x = dflt;
            int present = v != Py_None;
            if (present) {
                x = PyLong_AsLongLong(v);
                if (x == -1 && PyErr_Occurred()) goto done;
                if (__builtin_mul_overflow(x, scale, &x)
                    || (w == 4 && (x < INT32_MIN || x > INT32_MAX))) {
                    PyErr_SetString(PyExc_OverflowError, "value out of the column's range");
                    goto done;
                }
            }
            for (; r < end[j]; r++) {
                if (w == 8) { int64_t y = x; memcpy(d + r * 8, &y, 8); }
                else { int32_t y = (int32_t)x; memcpy(d + r * 4, &y, 4); }
                if (bits && (present || fill != Py_None)) bits[r >> 3] |= (unsigned char)(1 << (r & 7));
            }
        }
        res = Py_BuildValue("(OO)", validity ? validity : Py_None, data);
    } else if (kind == 's') {
        Py_ssize_t total = 0;
        for (Py_ssize_t j = 0; j < nseg; j++) {
            PyObject *v = items[j];
            if (v == Py_None) continue;
            Py_ssize_t len;
            if (!PyUnicode_Check(v)) { PyErr_Format(PyExc_TypeError, "a string column got %.100s", Py_TYPE(v)->tp_name); goto done; }
            if (PyUnicode_AsUTF8AndSize(v, &len) == NULL) goto done;
            total += len * (end[j] - (j ? end[j - 1] : 0));
            if (total >= ((Py_ssize_t)1 << 31)) { PyErr_SetString(PyExc_ValueError, "string column over 2 GiB"); goto done; }
        }
        data = PyBytes_FromStringAndSize(NULL, total);
        offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 4);
        if (data == NULL || offsets == NULL) goto done;
        char *d = PyBytes_AS_STRING(data);
        int32_t *off = (int32_t *)PyBytes_AS_STRING(offsets);
        Py_ssize_t r = 0, at = 0;
        off[0] = 0;
        for (Py_ssize_t j = 0; j < nseg; j++) {
            PyObject *v = items[j];
            Py_ssize_t len = 0;
            const char *u = v == Py_None ? NULL : PyUnicode_AsUTF8AndSize(v, &len);
            for (; r < end[j]; r++) {
                if (u != NULL) {
                    memcpy(d + at, u, len);
                    at += len;
                    if (bits) bits[r >> 3] |= (unsigned char)(1 << (r & 7));
                }
                off[r + 1] = (int32_t)at;
            }
        }
        res = Py_BuildValue("(OOO)", validity ? validity : Py_None, data, offsets);
    } else {
        PyErr_SetString(PyExc_ValueError, "kind must be 'q', 'i' or 's'");
    }
done:
    Py_XDECREF(seq);
    Py_XDECREF(validity);
    Py_XDECREF(data);
    Py_XDECREF(offsets);
    PyBuffer_Release(&ends);
    return res;
}

#endif  /* BINLAKE_SPEEDUPS_IMAGE_ROWS_H */
