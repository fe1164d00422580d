/* Change records (objects.c, jsonl_lines.c): records and other slots-only objects made
 * without __init__, and lists of records as the lines `binlake decode` prints; what they
 * give the event scanner's records mode (event_rows.c) and the module. */
#ifndef BINLAKE_SPEEDUPS_RECORDS_H
#define BINLAKE_SPEEDUPS_RECORDS_H

#include "common.h"
#include <structmember.h>

/* ---- objects.c ---- */

/* The offset of tp's object slot (a __slots__ member) called `name`, or -1 when it has
   none by that name (nothing raised). */
static inline Py_ssize_t object_slot_offset(PyTypeObject *tp, PyObject *name) {
    PyObject *d = _PyType_Lookup(tp, name);  /* borrowed */
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)
        || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) return -1;
    return ((PyMemberDescrObject *)d)->d_member->offset;
}

/* The record class record_class() was given, its slot count and each slot's offset. */
#define REC_MAX_SLOTS 32
extern PyTypeObject *g_rec_type;
extern Py_ssize_t g_rec_nslots, g_rec_off[REC_MAX_SLOTS];

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    Py_ssize_t n;
    Py_ssize_t off[REC_MAX_SLOTS];
    vectorcallfunc vectorcall;
} SlotMaker;

extern PyTypeObject SlotMakerType;

/* A copy of `src` (an instance of self's class) with its first k slots replaced by
   `first`; NULL (nothing raised) when it cannot be made so. */
PyObject *slot_copy(SlotMaker *self, PyObject *src, PyObject *const *first, Py_ssize_t k);
/* n records appended to `out` from the template's fields and the rows (mode 0 insert,
   1 delete, 2 update); 0, or -1 with an exception. */
int records_into(PyObject *out, PyObject *const *tmpl, PyObject *const *rows,
                 Py_ssize_t n, int mode);
/* The module's record_class(cls, slot_names) and make_records(template, rows, mode). */
PyObject *record_class(PyObject *mod, PyObject *args);
PyObject *make_records(PyObject *mod, PyObject *args);

/* ---- jsonl_lines.c ---- */

/* At module load: the datetime C API and the strings the writers use. */
int jsonl_init(void);
/* The module's jsonl_records(records, plan_for, line_of) and text_records(...). */
PyObject *jsonl_records(PyObject *mod, PyObject *args);
PyObject *text_records(PyObject *mod, PyObject *args);

#endif  /* BINLAKE_SPEEDUPS_RECORDS_H */
