/* Framing (event_rows.c): RowsScanner, the common rows event framed, checksummed and
 * decoded in one C call, and a file's or a receive buffer's run of them in one iterator. */
#ifndef BINLAKE_SPEEDUPS_FRAMING_H
#define BINLAKE_SPEEDUPS_FRAMING_H

#include "common.h"

extern PyTypeObject RowsScannerType;
/* At module load: its interned names, and the type readied; 0, or -1 with an exception. */
int event_rows_init(void);

#endif  /* BINLAKE_SPEEDUPS_FRAMING_H */
