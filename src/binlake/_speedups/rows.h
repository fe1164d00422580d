/* Rows (values.c, json_rows.c, row_decoder.c, update_pairs.c): a row image -> Python
 * values or CDC JSON text, through the column ops of a RowDecoder; what the rows units
 * give each other and the units that frame events (event_rows.c) and pack images
 * (image_rows.c). */
#ifndef BINLAKE_SPEEDUPS_ROWS_H
#define BINLAKE_SPEEDUPS_ROWS_H

#include "common.h"

/* ---- values.c: row bytes -> Python values ---- */

/* At module load: the datetime C API (a pointer each unit that builds dates holds). */
int values_init(void);

/* One value at b[*pp] (advanced past it), one row (its null bitmap first); NULL with an
   exception. decode_row_spans notes where each value lay in `spans` (an update's before
   image) or shares the before row's values whose bytes did not change (`before`). */
PyObject *decode_value(const ColOp *op, PyObject *bufobj, const unsigned char *b,
                       Py_ssize_t n, Py_ssize_t *pp);
PyObject *decode_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                     Py_ssize_t n, Py_ssize_t *pp);
PyObject *decode_row_spans(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                           Py_ssize_t n, Py_ssize_t *pp, Span *spans, PyObject *before);

/* Calendar fields of a temporal value; `ok` is 0 when Python's datetime cannot hold it
   (zero dates, zero-in-date parts, corrupt bytes): callers defer to the Python helpers. */
typedef struct { long Y, M, D; int h, mi, s, ok; } Civil;
Civil datetime2_fields(uint64_t intpart, int us);
Civil epoch_fields(uint64_t secs);
/* The pieces the JSON writer shares with the value decoder: a DECIMAL's digits, a TIME2's
   parts and value, a UUID/INET value's text (FBT_TEXT_MAX bytes at most). */
int decimal_digits(const ColOp *op, const unsigned char *s, char *digits, int *neg);
void time2_parts(const unsigned char *s, int fsp, int *negp, int64_t *hmsp, int64_t *microp);
PyObject *decode_time2(const unsigned char *s, int fsp);
int fbt_text(int mode, int width, const unsigned char *s, Py_ssize_t len, char *d);

/* ---- json_rows.c: row bytes -> CDC JSON text ---- */

/* One row's JSON image appended to `o`, noting or sharing spans as decode_row_spans
   (`from`: the before image's text); 0, or -1 with an exception. */
int write_row_spans(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                    Py_ssize_t n, Py_ssize_t *pp, Buf *o, Span *spans, const char *from);
/* One row's JSON image as bytes (json_many's step), and the method json(buf, pos). */
PyObject *encode_row(RowDecoder *self, PyObject *bufobj, const unsigned char *b,
                     Py_ssize_t n, Py_ssize_t *pp);
PyObject *RowDecoder_json(RowDecoder *self, PyObject *args);

/* ---- row_decoder.c: the RowDecoder type ---- */

extern PyTypeObject RowDecoderType;

/* A row's step: decode_row (values) or encode_row (JSON bytes). */
typedef PyObject *(*row_fn)(RowDecoder *, PyObject *, const unsigned char *, Py_ssize_t, Py_ssize_t *);

/* The buffer of many()/json_many()/count(), [p, end) clamped to it; -1 (view released)
   when it has no buffer or an image of no columns would have to fill bytes. */
int rows_view(RowDecoder *self, PyObject *bufobj, Py_buffer *view, Py_ssize_t *p,
              Py_ssize_t *end);
/* Each row image of [p, end) appended to `out` (pairs with `adec`, an update's after
   image); where the images end, or -1 with an exception. */
Py_ssize_t many_into(RowDecoder *self, RowDecoder *adec, row_fn one, PyObject *bufobj,
                     const unsigned char *b, Py_ssize_t p, Py_ssize_t end, PyObject *out);
/* The rows of [*pp, end) counted, not decoded (*pp: where they end); -1 with an exception. */
Py_ssize_t count_rows(RowDecoder *self, RowDecoder *adec, PyObject *bufobj,
                      const unsigned char *b, Py_ssize_t *pp, Py_ssize_t end);
/* Past one value without decoding it: 0, or -1 with an exception. */
int skip_value(const ColOp *op, PyObject *bufobj, const unsigned char *b, Py_ssize_t n,
               Py_ssize_t *pp);

/* ---- update_pairs.c: an update's after image decoded with its before image ---- */

/* Up to this many columns the spans live on the stack (a table's usual width). */
#define SPANS_ON_STACK 64

Span *spans_plan(RowDecoder *bdec, RowDecoder *adec, int json, Span *stack);
void spans_free(Span *spans, Span *stack);
/* The width of the after value at b[p] if its bytes are the before value's, else -1. */
Py_ssize_t span_same(const Span *sp, const ColOp *op, PyObject *bufobj,
                     const unsigned char *b, Py_ssize_t n, Py_ssize_t p);
/* many_into's update case for Python values. */
Py_ssize_t pairs_into(RowDecoder *bdec, RowDecoder *adec, PyObject *bufobj,
                      const unsigned char *b, Py_ssize_t p, Py_ssize_t end, PyObject *out);

#endif  /* BINLAKE_SPEEDUPS_ROWS_H */
