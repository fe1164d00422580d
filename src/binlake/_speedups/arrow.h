/* Arrow columns of a CDC batch (image_rows.c, image_column.c, cdc_segments.c): a rows
 * event's JSON images packed (ImageRows), the batch's image columns (ImageColumn, with
 * ImageData handing their memory to Arrow) and its per-event fields (CdcSegments); what
 * they give each other, the row decoder (json_rows) and the event scanner's segments mode. */
#ifndef BINLAKE_SPEEDUPS_ARROW_H
#define BINLAKE_SPEEDUPS_ARROW_H

#include "common.h"

/* ---- image_rows.c ---- */

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;            /* rows */
    int sides;               /* 2 for an update (before, after), else 1 */
    char *data[2];           /* each side's images back to back */
    Py_ssize_t cap[2];       /* the size of data[s] (it goes back to the pool whole) */
    Py_ssize_t *ends[2];     /* ends[s][i]: where image i of side s ends in data[s] */
} ImageRows;

extern PyTypeObject ImageRowsType;

/* Freed buffers kept for reuse, bounded (image_rows.c says why). */
typedef struct { char *p; Py_ssize_t cap; } Pooled;
typedef struct { Pooled *slot; int slots, n; Py_ssize_t bytes, limit; } BufPool;
void pool_put(BufPool *pool, char *p, Py_ssize_t cap);
/* An empty buffer of at least `want` bytes from the pool into *b: the smallest that fits,
   and with `close` set not over four times `want`; b is left as it is when none fits. */
void pool_take(BufPool *pool, Buf *b, Py_ssize_t want, int close);

/* RowDecoder.json_rows(buf, pos, end[, after]) -> (ImageRows, pos). */
PyObject *RowDecoder_json_rows(RowDecoder *self, PyObject *args);

/* ---- image_column.c ---- */

typedef struct {
    PyObject_HEAD
    Buf data;                /* the images back to back */
    int32_t *off;            /* off[i + 1]: where row i's image ends (off[0] = 0) */
    Py_ssize_t n, offcap;    /* rows; room in off */
    unsigned char *bits;     /* validity, a bit per row; NULL while no row is null */
    Py_ssize_t bitcap, nulls;
} ImageColumn;

extern PyTypeObject ImageColumnType, ImageDataType;

/* An image (bytes) or None appended; k nulls appended; rows [start, stop) of side `side` of
   `rows` copied in. 0 (col_run: the bytes added), or -1 with an exception. */
int col_append(ImageColumn *c, PyObject *v);
int col_nulls(ImageColumn *c, Py_ssize_t k);
Py_ssize_t col_run(ImageColumn *c, ImageRows *rows, int side, Py_ssize_t start,
                   Py_ssize_t stop);
/* The module's run_column(values, ends, kind, scale, fill). */
PyObject *run_column(PyObject *mod, PyObject *args);

/* ---- cdc_segments.c ---- */

typedef struct { int32_t *p; Py_ssize_t n, cap; } I32s;

typedef struct {
    PyObject_HEAD
    PyObject *segs;        /* list: per segment (op, schema, table, file, pos, end_pos, inner,
                              gtid, ts, file index, query, ddl) */
    I32s ends;             /* rows up to each segment's end */
    I32s rows;             /* per row: its row number in its event */
    Py_ssize_t nbytes;     /* bytes of images added */
    PyObject *fidx;        /* dict: file -> file index (the builder's own) */
    PyObject *file_index;  /* file -> file index, for a file not in fidx yet */
} CdcSegments;

extern PyTypeObject CdcSegmentsType;

/* A rows event's rows [start, stop) added to the batch: its fields as a segment, its images
   into `before`/`after`. The bytes of images added, or -1 with an exception. */
Py_ssize_t seg_rows(CdcSegments *self, ImageColumn *before, ImageColumn *after,
                    ImageRows *rows, int kind, Py_ssize_t start, Py_ssize_t stop,
                    PyObject *op, PyObject *schema, PyObject *table, PyObject *file,
                    PyObject *pos, PyObject *end, PyObject *inner, PyObject *gtid,
                    PyObject *ts);

#endif  /* BINLAKE_SPEEDUPS_ARROW_H */
