/* The Arrow columns of a CDC batch (the Arrow/Spark path): ImageColumn, a string column of
 * row images written as the batch's events come, and run_column(), an event's fields
 * repeated over its rows.
 *
 * Why ImageColumn: copied into the Arrow column only when the batch is flushed, a batch's
 * MiB of images would have left the caches, and the copy would read them back from
 * memory. An ImageColumn copies an event's images when the event is added, while the decoder's
 * writes are still in cache, and the event's ImageRows buffers go back to their pool
 * (image_rows.c) at once, warm for the next event. The column's data goes to Arrow without
 * a copy: an ImageData, whose memory goes back to col_pool when Arrow lets go of it, so the
 * next batch's column is written into pages already there.
 *
 * A compilation unit; arrow.h declares what it gives the others. */
#include "common.h"
#include "text.h"
#include "arrow.h"

static Pooled col_pool_slots[8];
static BufPool col_pool = {col_pool_slots, 8, 0, 0, (Py_ssize_t)64 << 20};

#define IMAGE_COLUMN_MAX (((Py_ssize_t)1 << 31) - 1)  /* Arrow's string offsets are int32 */

/* A finished column's data, read by Arrow through the buffer protocol (pa.py_buffer). */
typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t len, cap;
} ImageData;

static void ImageData_dealloc(ImageData *self) {
    pool_put(&col_pool, self->p, self->cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ImageData_getbuffer(ImageData *self, Py_buffer *view, int flags) {
    static char empty[1];
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : empty, self->len, 1,
                             flags);
}

static Py_ssize_t ImageData_len(ImageData *self) { return self->len; }

static PyBufferProcs ImageData_as_buffer = {.bf_getbuffer = (getbufferproc)ImageData_getbuffer};
static PySequenceMethods ImageData_as_sequence = {.sq_length = (lenfunc)ImageData_len};

PyTypeObject ImageDataType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.ImageData",
    .tp_basicsize = sizeof(ImageData),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The data of a finished ImageColumn (read-only buffer); its memory is reused "
              "once it is freed.",
    .tp_dealloc = (destructor)ImageData_dealloc,
    .tp_as_buffer = &ImageData_as_buffer,
    .tp_as_sequence = &ImageData_as_sequence,
};


static void ImageColumn_dealloc(ImageColumn *self) {
    pool_put(&col_pool, self->data.p, self->data.cap);
    PyMem_Free(self->off);
    PyMem_Free(self->bits);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Room for k more rows: their offsets, and their validity bits once there are any. */
static int col_rows(ImageColumn *c, Py_ssize_t k) {
    Py_ssize_t need = c->n + k + 1;
    if (need > c->offcap) {
        int32_t *no = grow_array(c->off, &c->offcap, need, 1024, sizeof(int32_t));
        if (no == NULL) return -1;
        if (c->off == NULL) no[0] = 0;
        c->off = no;
    }
    if (c->bits != NULL && (c->n + k + 7) / 8 > c->bitcap) {
        Py_ssize_t old = c->bitcap;  /* > 0: the bits start at 64 bytes (col_nulls) */
        unsigned char *nb = grow_array(c->bits, &c->bitcap, (c->n + k + 7) / 8, 64, 1);
        if (nb == NULL) return -1;
        memset(nb + old, 0, c->bitcap - old);
        c->bits = nb;
    }
    return 0;
}

/* Rows [n, n + k) valid (their bits set, when there are bits). */
static void col_valid(ImageColumn *c, Py_ssize_t k) {
    if (c->bits == NULL) return;
    for (Py_ssize_t i = c->n, e = c->n + k; i < e; i++)
        c->bits[i >> 3] |= (unsigned char)(1 << (i & 7));
}

/* k null rows at the end: the bits are made on the first null (every row before valid). */
int col_nulls(ImageColumn *c, Py_ssize_t k) {
    if (k <= 0) return 0;
    if (c->bits == NULL) {
        Py_ssize_t cap = 64;
        while (cap < (c->offcap > c->n + k ? c->offcap : c->n + k) / 8 + 1) cap *= 2;
        c->bits = PyMem_Calloc(cap, 1);
        if (c->bits == NULL) { PyErr_NoMemory(); return -1; }
        c->bitcap = cap;
        memset(c->bits, 0xFF, (size_t)(c->n / 8));
        for (Py_ssize_t i = c->n & ~(Py_ssize_t)7; i < c->n; i++)
            c->bits[i >> 3] |= (unsigned char)(1 << (i & 7));
    }
    if (col_rows(c, k) < 0) return -1;
    int32_t at = c->off[c->n];
    for (Py_ssize_t e = c->n + k; c->n < e; c->n++) c->off[c->n + 1] = at;  /* bits stay 0 */
    c->nulls += k;
    return 0;
}

/* Room for `extra` more bytes of data, within Arrow's 2 GiB (the first from col_pool). */
static int col_data(ImageColumn *c, Py_ssize_t extra) {
    if (c->data.len + extra > IMAGE_COLUMN_MAX) {
        PyErr_SetString(PyExc_ValueError,
                        "a CDC batch holds 2 GiB of row images or more: lower its size");
        return -1;
    }
    if (c->data.p == NULL) pool_take(&col_pool, &c->data, extra > 65536 ? extra : 65536, 0);
    return buf_reserve(&c->data, extra);
}

/* One image (bytes) or null (None) at the end. */
int col_append(ImageColumn *c, PyObject *v) {
    if (v == Py_None) return col_nulls(c, 1);
    if (!PyBytes_Check(v)) {
        PyErr_Format(PyExc_TypeError, "row images must be bytes or None, not %.100s",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_ssize_t len = PyBytes_GET_SIZE(v);
    if (col_data(c, len) < 0 || col_rows(c, 1) < 0) return -1;
    memcpy(c->data.p + c->data.len, PyBytes_AS_STRING(v), (size_t)len);
    c->data.len += len;
    col_valid(c, 1);
    c->off[++c->n] = (int32_t)c->data.len;
    return 0;
}

static PyObject *ImageColumn_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "ImageColumn() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);  /* zeroed: empty */
}

static Py_ssize_t ImageColumn_len(ImageColumn *self) { return self->n; }

static PyObject *ImageColumn_nulls(ImageColumn *self, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0) { PyErr_SetString(PyExc_ValueError, "negative null run"); return NULL; }
    if (col_nulls(self, k) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *ImageColumn_append(ImageColumn *self, PyObject *v) {
    if (col_append(self, v) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *ImageColumn_extend(ImageColumn *self, PyObject *images) {
    PyObject *seq = PySequence_Fast(images, "images must be a sequence of bytes or None");
    if (seq == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
        if (col_append(self, PySequence_Fast_GET_ITEM(seq, i)) < 0) { Py_DECREF(seq); return NULL; }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

/* Runs this long or longer are copied into a column with streaming stores (col_copy). */
#define COL_STREAM_MIN 4096

/* memcpy into a column's data, with non-temporal stores for a run of COL_STREAM_MIN bytes
   or more. Why: a batch's columns (up to MAX_BATCH_BYTES of images each) have left the
   caches by the time their pooled memory is written again, so each plain store first read
   the line it overwrote from memory; streaming stores write whole lines without that read.
   Short runs stay plain: a small
   batch is read back while it is still in cache. The sfence orders the stores before the
   column is handed to anyone (Arrow may read it from another thread). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <emmintrin.h>
static void col_copy(char *dst, const char *src, size_t len) {
    if (len < COL_STREAM_MIN) {
        memcpy(dst, src, len);
        return;
    }
    size_t head = (64 - ((uintptr_t)dst & 63)) & 63;  /* up to dst's next 64-byte line */
    if (head > len) head = len;
    memcpy(dst, src, head);
    dst += head;
    src += head;
    len -= head;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    memcpy(dst + i, src + i, len - i);
    _mm_sfence();
}
#else
static void col_copy(char *dst, const char *src, size_t len) { memcpy(dst, src, len); }
#endif

/* Rows [start, stop) of an ImageRows' side at the end, one copy (col_copy); the bytes
   copied, or -1 with an exception. */
Py_ssize_t col_run(ImageColumn *c, ImageRows *rows, int side, Py_ssize_t start,
                   Py_ssize_t stop) {
    if (side < 0 || side >= rows->sides || start < 0 || stop < start || stop > rows->n) {
        PyErr_SetString(PyExc_ValueError, "image run out of range");
        return -1;
    }
    if (stop == start) return 0;
    Py_ssize_t *ends = rows->ends[side], base = start ? ends[start - 1] : 0;
    Py_ssize_t len = ends[stop - 1] - base;
    if (col_data(c, len) < 0 || col_rows(c, stop - start) < 0) return -1;
    col_copy(c->data.p + c->data.len, rows->data[side] + base, (size_t)len);
    col_valid(c, stop - start);
    Py_ssize_t shift = c->data.len - base;
    int32_t *off = c->off + c->n + 1;
    for (Py_ssize_t r = start; r < stop; r++) *off++ = (int32_t)(ends[r] + shift);
    c->data.len += len;
    c->n += stop - start;
    return len;
}

/* run(rows, side, start, stop): rows [start, stop) of an ImageRows' side, one memcpy. */
static PyObject *ImageColumn_run(ImageColumn *self, PyObject *args) {
    ImageRows *rows;
    int side;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "O!inn", &ImageRowsType, &rows, &side, &start, &stop)) return NULL;
    if (col_run(self, rows, side, start, stop) < 0) return NULL;
    Py_RETURN_NONE;
}

/* finish() -> (rows, validity or None, offsets, data): the column's Arrow buffers; the
   column starts empty (its data now belongs to the ImageData). */
static PyObject *ImageColumn_finish(ImageColumn *self, PyObject *unused) {
    if (col_rows(self, 0) < 0) return NULL;  /* off[0] exists */
    ImageData *data = PyObject_New(ImageData, &ImageDataType);
    if (data == NULL) return NULL;
    PyObject *offsets = PyBytes_FromStringAndSize((const char *)self->off, (self->n + 1) * 4);
    PyObject *validity = self->nulls
        ? PyBytes_FromStringAndSize((const char *)self->bits, (self->n + 7) / 8)
        : Py_NewRef(Py_None);
    if (offsets == NULL || validity == NULL) {
        data->p = NULL;
        data->len = data->cap = 0;
        Py_DECREF(data);
        Py_XDECREF(offsets);
        Py_XDECREF(validity);
        return NULL;
    }
    data->p = self->data.p;
    data->len = self->data.len;
    data->cap = self->data.cap;
    self->data.p = NULL;
    self->data.len = self->data.cap = 0;
    Py_ssize_t n = self->n;
    self->n = self->nulls = 0;
    PyMem_Free(self->bits);  /* the next batch may have no nulls at all */
    self->bits = NULL;
    self->bitcap = 0;
    return Py_BuildValue("(nNNN)", n, validity, offsets, (PyObject *)data);
}

static PyObject *ImageColumn_nbytes(ImageColumn *self, void *closure) {
    return PyLong_FromSsize_t(self->data.len);
}

static PyMethodDef ImageColumn_methods[] = {
    {"nulls", (PyCFunction)ImageColumn_nulls, METH_O, "nulls(k): k null rows."},
    {"append", (PyCFunction)ImageColumn_append, METH_O, "append(image): bytes, or None (null)."},
    {"extend", (PyCFunction)ImageColumn_extend, METH_O, "extend(images): bytes or None each."},
    {"run", (PyCFunction)ImageColumn_run, METH_VARARGS,
     "run(rows, side, start, stop): rows [start, stop) of an ImageRows' side (0, or 1 for an "
     "update's after images), copied in one go."},
    {"finish", (PyCFunction)ImageColumn_finish, METH_NOARGS,
     "finish() -> (rows, validity or None, offsets, data): the Arrow buffers of the rows so "
     "far; the column starts empty."},
    {NULL, NULL, 0, NULL}
};

static PyGetSetDef ImageColumn_getset[] = {
    {"nbytes", (getter)ImageColumn_nbytes, NULL, "Bytes of images held.", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PySequenceMethods ImageColumn_as_sequence = {.sq_length = (lenfunc)ImageColumn_len};

PyTypeObject ImageColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.ImageColumn",
    .tp_basicsize = sizeof(ImageColumn),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An Arrow string column of row images (UTF-8 JSON), written row by row or a "
              "run of an event's ImageRows at a time; finish() hands out its buffers.",
    .tp_new = ImageColumn_new,
    .tp_dealloc = (destructor)ImageColumn_dealloc,
    .tp_methods = ImageColumn_methods,
    .tp_getset = ImageColumn_getset,
    .tp_as_sequence = &ImageColumn_as_sequence,
};


/* run_column(values, ends, kind, scale, fill) -> (validity or None, data[, offsets]): the
   buffers of an Arrow column where value j fills rows [ends[j-1], ends[j]) (a CDC batch's
   per-event fields repeated over the event's rows), without pyarrow.compute (whose import
   alone costs a Python process more than a batch's flush). kind 'q' int64 (each value times
   `scale`), 'i' int32, 's' string (UTF-8; offsets returned too). None is a null, or `fill`
   when fill is not None (numbers only). */
PyObject *run_column(PyObject *mod, PyObject *args) {
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

