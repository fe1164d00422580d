/* The driver-side fold (fold.c): a table's change records folded into one net change per key,
 * as Arrow buffers (cdc/net.py's net_scd1 is the twin). */
#ifndef BINLAKE_SPEEDUPS_FOLD_H
#define BINLAKE_SPEEDUPS_FOLD_H

#include "common.h"

PyObject *fold_scd1(PyObject *mod, PyObject *args);

#endif  /* BINLAKE_SPEEDUPS_FOLD_H */
