/* Text rows (text_rows.c): a result set's packed text rows split into Arrow binary column
 * buffers, the snapshot's fast read (protocol/results.py's split_text_rows is the twin). */
#ifndef BINLAKE_SPEEDUPS_TEXT_ROWS_H
#define BINLAKE_SPEEDUPS_TEXT_ROWS_H

#include "common.h"

PyObject *text_columns(PyObject *mod, PyObject *args);

#endif  /* BINLAKE_SPEEDUPS_TEXT_ROWS_H */
