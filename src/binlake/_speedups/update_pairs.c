/* An update's after image decoded with its before image at hand: a value whose bytes did
 * not change is not decoded twice.
 *
 * Why: an UPDATE usually changes a few columns of a row, and with binlog_row_image=FULL
 * (the default, and what a CDC tool needs) the event holds every column twice. Decoding
 * the after image's unchanged values again (a long text's UTF-8 check and conversion, a
 * DECIMAL's digits, a DATETIME's fields) would do that work twice.
 *
 * How: the before image is decoded noting where each value lay (decode_row_spans,
 * write_row_spans for JSON images); for each value of the after image the width is read
 * (skip_value: the length prefix or the type's size) and, when the bytes are the before
 * value's, the value is the before one: the same object (Python values: every type shared
 * here is immutable: int, float, str, bytes, Decimal, date/time values) or a copy of its
 * JSON text (JSON images). A column
 * the two sides decode differently (not the case for a table's own two images, checked
 * anyway), a value decoded by a Python call (its width is not known without it) and, for
 * Python values, a JSON document (a mutable dict or list) are decoded as before.
 *
 * A compilation unit; rows.h declares what it gives the others. */
#include "common.h"
#include "rows.h"


/* Whether column i may be shared: decoded alike on both sides, by an op whose value
   depends on its bytes alone (json: as JSON text, which a JSON document's is too). The
   op and its parameters are compared; a JSON image's formatter and labels are not: both
   sides' come from the same column of the same TABLE_MAP (rowcodec's compile_json_row_decoder). */
static int span_shares(const ColOp *bop, const ColOp *aop, int json) {
    if (bop->op != aop->op || bop->a != aop->a || bop->b != aop->b || bop->c != aop->c)
        return 0;
    switch (aop->op) {
    case OP_ABSENT: case OP_NONE: case OP_POSCALL: return 0;
    case OP_LENCALL: if (!json) return 0; break;  /* (a dict is mutable) */
    default: break;
    }
    if (bop->obj == aop->obj) return 1;
    if (bop->obj == NULL || aop->obj == NULL) return 0;
    /* ENUM/SET labels, a codec name, a charmap: equal ones decode alike */
    return PyObject_RichCompareBool(bop->obj, aop->obj, Py_EQ) == 1 ? 1 : (PyErr_Clear(), 0);
}

/* The spans of an update event's two decoders, `share` set per column; NULL (no sharing,
   nothing raised) when the decoders do not cover the same columns. Free with spans_free. */
Span *spans_plan(RowDecoder *bdec, RowDecoder *adec, int json, Span *stack) {
    Py_ssize_t ncols = bdec->ncols;
    if (adec->ncols != ncols) return NULL;
    Span *spans = ncols <= SPANS_ON_STACK ? stack : PyMem_Malloc(ncols * sizeof(Span));
    if (spans == NULL) return NULL;
    int any = 0;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        spans[i].at = -1;
        any |= spans[i].share = span_shares(&bdec->ops[i], &adec->ops[i], json);
    }
    if (!any && spans != stack) PyMem_Free(spans);
    return any ? spans : NULL;
}

void spans_free(Span *spans, Span *stack) {
    if (spans != NULL && spans != stack) PyMem_Free(spans);
}

/* The width of column i's after value at b[p] if its bytes are the before value's, else
   -1 (a truncated value too: the decoding that follows raises the located error). */
Py_ssize_t span_same(const Span *sp, const ColOp *op, PyObject *bufobj,
                     const unsigned char *b, Py_ssize_t n, Py_ssize_t p) {
    if (!sp->share || sp->at < 0) return -1;
    Py_ssize_t q = p;
    if (skip_value(op, bufobj, b, n, &q) < 0) { PyErr_Clear(); return -1; }
    Py_ssize_t w = q - p;
    return w == sp->width && memcmp(b + p, b + sp->at, (size_t)w) == 0 ? w : -1;
}

/* An update's (before, after) pairs of [p, end) appended to `out` (many_into's update
   case for Python values); returns where they end, or -1 with an exception. */
Py_ssize_t pairs_into(RowDecoder *bdec, RowDecoder *adec, PyObject *bufobj,
                      const unsigned char *b, Py_ssize_t p, Py_ssize_t end,
                      PyObject *out) {
    Span stack[SPANS_ON_STACK];
    Span *spans = spans_plan(bdec, adec, 0, stack);
    while (p < end) {
        PyObject *row = decode_row_spans(bdec, bufobj, b, end, &p, spans, NULL);
        if (row == NULL) { p = -1; break; }
        PyObject *arow = decode_row_spans(adec, bufobj, b, end, &p, spans,
                                          spans != NULL ? row : NULL);
        PyObject *pair = arow == NULL ? NULL : PyTuple_Pack(2, row, arow);
        Py_DECREF(row);
        Py_XDECREF(arow);
        if (pair == NULL || PyList_Append(out, pair) < 0) { Py_XDECREF(pair); p = -1; break; }
        Py_DECREF(pair);
    }
    spans_free(spans, stack);
    return p;
}

