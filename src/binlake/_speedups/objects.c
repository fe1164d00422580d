/* Objects made without __init__: change records and SlotMaker.
 *
 * A compilation unit; records.h declares what it gives the others. */
#include "common.h"
#include <structmember.h>
#include "records.h"

/* ---- change records: rows -> record objects without running __init__ ----
 * Why: binlake makes one record per row of the binlog, and calling a Python __init__ for
 * each costs more than decoding a narrow row. The record class stays a plain
 * Python class with __slots__ (its methods and properties are Python); here its instances
 * are allocated and their slots filled directly, at the offsets its own member descriptors
 * give (checked once by record_class()). */
PyTypeObject *g_rec_type;
Py_ssize_t g_rec_nslots, g_rec_off[REC_MAX_SLOTS];
static Py_ssize_t g_rec_before = -1, g_rec_after = -1, g_rec_row = -1;

/* Offsets of `names`, which must be exactly the object slots of the class and its bases
   (so no instance is ever left with an empty slot); -1 with TypeError otherwise. */
static int slot_offsets(PyTypeObject *tp, PyObject *names, Py_ssize_t *off) {
    Py_ssize_t n = PyTuple_GET_SIZE(names), total = 0;
    if (n > REC_MAX_SLOTS || tp->tp_dictoffset != 0 || tp->tp_itemsize != 0
        || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_mro == NULL) {
        PyErr_SetString(PyExc_TypeError, "expected a Python class with __slots__ only");
        return -1;
    }
    PyObject *mro = tp->tp_mro;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(mro); k++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, k);
        PyObject *key, *d;
        Py_ssize_t it = 0;
        while (base->tp_dict && PyDict_Next(base->tp_dict, &it, &key, &d))
            if (Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyDescrObject *)d)->d_type == base
                && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX) total++;
    }
    if (total != n) {
        PyErr_Format(PyExc_TypeError, "%zd names given for %zd slots of %s", n, total, tp->tp_name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        off[i] = PyUnicode_Check(name) ? object_slot_offset(tp, name) : -1;
        if (off[i] < 0) {
            PyErr_Format(PyExc_TypeError, "%R is not an object slot of %s", name, tp->tp_name);
            return -1;
        }
        for (Py_ssize_t j = 0; j < i; j++)
            if (off[j] == off[i]) {
                PyErr_Format(PyExc_TypeError, "slot %R named twice", name);
                return -1;
            }
    }
    return 0;
}

PyObject *record_class(PyObject *mod, PyObject *args) {
    PyObject *cls, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &names)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(names), before = -1, after = -1, row = -1;
    Py_ssize_t off[REC_MAX_SLOTS];
    if (slot_offsets((PyTypeObject *)cls, names, off) < 0) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (PyUnicode_CompareWithASCIIString(name, "_before") == 0) before = i;
        else if (PyUnicode_CompareWithASCIIString(name, "_after") == 0) after = i;
        else if (PyUnicode_CompareWithASCIIString(name, "row") == 0) row = i;
    }
    if (before < 0 || after < 0 || row < 0) {
        PyErr_SetString(PyExc_TypeError, "record slots must include _before, _after and row");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(g_rec_type, (PyTypeObject *)cls);
    g_rec_nslots = n;
    memcpy(g_rec_off, off, sizeof(Py_ssize_t) * (size_t)n);
    g_rec_before = before; g_rec_after = after; g_rec_row = row;
    Py_RETURN_NONE;
}

/* SlotMaker(cls, names): calling it with one value per name makes an instance of `cls`
   with those slots filled, skipping __init__ (for frozen dataclasses: its object.__setattr__
   per field). For the objects made once per event (headers, rows events), where __init__
   costs more than decoding a small event. */

static PyObject *SlotMaker_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf,
                                      PyObject *kwnames) {
    SlotMaker *self = (SlotMaker *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != self->n || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "%s maker takes %zd positional values, got %zd",
                     self->cls->tp_name, self->n, nargs);
        return NULL;
    }
    PyObject *o = self->cls->tp_alloc(self->cls, 0);
    if (o == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        *(PyObject **)((char *)o + self->off[i]) = args[i];
    }
    return o;
}

/* A new instance of the maker's class with the first k slots from `first` and the rest from
   `src` (an instance of that very class): TableMapEvent.moved() in C. NULL with no exception
   set when `src` is not of the class or has a slot unset (the caller's general path). */
PyObject *slot_copy(SlotMaker *self, PyObject *src, PyObject *const *first, Py_ssize_t k) {
    if (self->cls == NULL || !Py_IS_TYPE(src, self->cls) || k > self->n) return NULL;
    for (Py_ssize_t i = k; i < self->n; i++)
        if (*(PyObject **)((char *)src + self->off[i]) == NULL) return NULL;
    PyObject *o = self->cls->tp_alloc(self->cls, 0);
    if (o == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        PyObject *v = i < k ? first[i] : *(PyObject **)((char *)src + self->off[i]);
        Py_INCREF(v);
        *(PyObject **)((char *)o + self->off[i]) = v;
    }
    return o;
}

static int SlotMaker_init(SlotMaker *self, PyObject *args, PyObject *kw) {
    PyObject *cls, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &names)) return -1;
    if (self->cls != NULL) { PyErr_SetString(PyExc_TypeError, "SlotMaker is set once"); return -1; }
    if (slot_offsets((PyTypeObject *)cls, names, self->off) < 0) return -1;
    Py_INCREF(cls);
    self->cls = (PyTypeObject *)cls;
    self->n = PyTuple_GET_SIZE(names);
    self->vectorcall = SlotMaker_vectorcall;
    return 0;
}

static PyObject *SlotMaker_call(PyObject *self, PyObject *args, PyObject *kw) {
    if (((SlotMaker *)self)->cls == NULL) { PyErr_SetString(PyExc_TypeError, "SlotMaker not set"); return NULL; }
    return PyVectorcall_Call(self, args, kw);
}

static void SlotMaker_dealloc(SlotMaker *self) {
    Py_XDECREF(self->cls);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject SlotMakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.SlotMaker",
    .tp_basicsize = sizeof(SlotMaker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "SlotMaker(cls, names)(*values) -> cls instance with its slots set, no __init__.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SlotMaker_init,
    .tp_dealloc = (destructor)SlotMaker_dealloc,
    .tp_call = SlotMaker_call,
    .tp_vectorcall_offset = offsetof(SlotMaker, vectorcall),
};

/* One record per row of rows[0:n] appended to `out` (a list), every slot from `tmpl` (in
   record_class's slot order) except the row number and the images: mode 0 insert (after =
   row), 1 delete (before = row), 2 update (row = (before, after)). The rows must not change
   while this runs (allocation may run the GC and finalizers): a tuple or a list of the
   caller's own. 0, or -1 with an error (the records appended so far stay). */
int records_into(PyObject *out, PyObject *const *tmpl, PyObject *const *rows,
                 Py_ssize_t n, int mode) {
    if (g_rec_type == NULL || mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_TypeError, "make_records: record_class() not set or bad mode");
        return -1;
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *row = rows[r], *before = Py_None, *after = Py_None;
        if (mode == 0) after = row;
        else if (mode == 1) before = row;
        else if (PyTuple_Check(row) && PyTuple_GET_SIZE(row) == 2) {
            before = PyTuple_GET_ITEM(row, 0); after = PyTuple_GET_ITEM(row, 1);
        } else {
            PyErr_SetString(PyExc_TypeError, "update rows must be (before, after) pairs");
            return -1;
        }
        PyObject *num = PyLong_FromSsize_t(r);
        if (num == NULL) return -1;
        PyObject *rec = g_rec_type->tp_alloc(g_rec_type, 0);
        if (rec == NULL) { Py_DECREF(num); return -1; }
        for (Py_ssize_t i = 0; i < g_rec_nslots; i++) {
            PyObject *v = i == g_rec_before ? before : i == g_rec_after ? after
                          : i == g_rec_row ? num : tmpl[i];
            if (i != g_rec_row) Py_INCREF(v);  /* `num` is handed over */
            *(PyObject **)((char *)rec + g_rec_off[i]) = v;
        }
        int rc = PyList_Append(out, rec);
        Py_DECREF(rec);
        if (rc < 0) return -1;
    }
    return 0;
}

/* make_records(template, rows, mode) -> list: records_into for a template tuple. */
PyObject *make_records(PyObject *mod, PyObject *args) {
    PyObject *tmpl, *rows_arg;
    int mode;
    if (!PyArg_ParseTuple(args, "O!Oi", &PyTuple_Type, &tmpl, &rows_arg, &mode)) return NULL;
    if (g_rec_type == NULL || PyTuple_GET_SIZE(tmpl) != g_rec_nslots || mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_TypeError, "make_records: record_class() not set or bad template/mode");
        return NULL;
    }
    /* A tuple of our own: allocation may run the GC and finalizers, which must not be able
       to change the rows under the loop. */
    PyObject *rows = PySequence_Tuple(rows_arg);
    if (rows == NULL) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL || records_into(out, &PyTuple_GET_ITEM(tmpl, 0), &PyTuple_GET_ITEM(rows, 0),
                                    PyTuple_GET_SIZE(rows), mode) < 0) {
        Py_XDECREF(out);
        out = NULL;
    }
    Py_DECREF(rows);
    return out;
}

