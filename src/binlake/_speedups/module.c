/* binlake row-image decoder in C: the hot loop of every rows event.
 *
 * Why C: a row image is a null bitmap plus packed values; in pure Python each value costs
 * a few bytecodes plus an object, and a wide table spends most of its time in the
 * interpreter. Here a table shape becomes an array of column ops (built once per TABLE_MAP
 * shape by rowcodec.py) and a row is one pass over the bytes.
 *
 * Semantics are exactly those of the generated Python decoders in rowcodec.py (which stay
 * the reference and the fallback): the same Python objects, the same fallbacks for zero
 * dates (the Python helpers build InvalidTemporal values), and any column type not handled
 * here is decoded by a per-column Python function (OP_POSCALL). Errors are raised as
 * ValueError (truncated or malformed image), UnicodeDecodeError or binlake's DecodeError;
 * rows.py adds the table and the row number.
 *
 * This file is the module `_core`: configure() and the method table. The code is in
 * compilation units by concern, each group with a small header of what it gives the others
 * (common.h: what they all share):
 *   crc.h      crc32.c (CRC32, vectorised where the CPU can), crc_ahead.c (a file's
 *              checksums checked by a thread ahead of the decoder)
 *   utf8.h     utf8.c (UTF-8 -> str, the JSON writer's check and escaping; AVX-512 or AVX2
 *              when the CPU has it, utf8_avx2.h)
 *   text.h     json_text.c, float_text.c (JSON text: buffers, escaping, base64, floats)
 *   rows.h     values.c (bytes -> Python values), json_rows.c (bytes -> CDC JSON text),
 *              row_decoder.c (the RowDecoder type), update_pairs.c (an update's after image
 *              decoded with its before image: unchanged values not decoded twice)
 *   arrow.h    image_rows.c (an event's JSON images packed; the buffer pools),
 *              image_column.c (a CDC batch's Arrow image columns), cdc_segments.c (its
 *              per-event fields, a rows event or a record taken in one call)
 *   records.h  objects.c (records and SlotMaker), jsonl_lines.c (lists of records as the
 *              lines of --output jsonl and text)
 *   framing.h  event_rows.c (the common rows event framed, checked and decoded whole)
 *   text_rows.h  text_rows.c (a result set's text rows split into Arrow column buffers)
 *   fold.h     fold.c (a table's change records folded into one net change per key)
 *   digest.h   sha1.c (SHA-1, with SHA-NI where the CPU has it), row_sums.c (verify's row
 *              hashes folded into chunk checksums)
 */
#include "common.h"
#include "crc.h"
#include "utf8.h"
#include "text.h"
#include "rows.h"
#include "arrow.h"
#include "records.h"
#include "framing.h"
#include "text_rows.h"
#include "fold.h"
#include "digest.h"

PyObject *g_absent, *g_decimal, *g_mysqltime, *g_decode_error;
PyObject *g_date_fb, *g_dt2_fb, *g_ts2_fb, *g_empty, *g_comma;
PyObject *g_time_fields[5];

static PyObject *configure(PyObject *mod, PyObject *args) {
    PyObject *absent, *decimal, *mysqltime, *decode_error, *date_fb, *dt2_fb, *ts2_fb;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &absent, &decimal, &mysqltime, &decode_error,
                          &date_fb, &dt2_fb, &ts2_fb)) return NULL;
    if (!PyType_Check(mysqltime)) {
        PyErr_SetString(PyExc_TypeError, "MySQLTime must be a class");
        return NULL;
    }
#define SET(g, v) do { Py_INCREF(v); Py_XSETREF(g, v); } while (0)
    SET(g_absent, absent); SET(g_decimal, decimal); SET(g_mysqltime, mysqltime);
    SET(g_decode_error, decode_error); SET(g_date_fb, date_fb); SET(g_dt2_fb, dt2_fb);
    SET(g_ts2_fb, ts2_fb);
#undef SET
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_pow10", set_pow10, METH_O,
     "set_pow10(table): 126-bit powers of ten for the JSON writer's float text (rowcodec.py)."},
    {"run_column", run_column, METH_VARARGS,
     "run_column(values, ends, kind, scale, fill) -> (validity or None, data[, offsets]): an "
     "Arrow column of values repeated over runs ending at `ends` (int32 bytes); kind 'q' "
     "int64 (times scale), 'i' int32, 's' string; None a null, or fill."},
    {"utf8_decode", utf8_decode, METH_VARARGS,
     "utf8_decode(bytes, guess=None) -> str: the row decoder's UTF-8 decoding (SIMD when the "
     "CPU has it); guess=0/1/2/4: with a column's guess of the str's kind."},
    {"utf8_check", utf8_check, METH_O,
     "utf8_check(bytes) -> bool: strict UTF-8, as the JSON writer checks it."},
    {"utf8_simd", utf8_simd, METH_NOARGS,
     "utf8_simd() -> 'avx512', 'avx2' or 'off': the vector code UTF-8 text is decoded and "
     "checked with (native.py applies BINLAKE_SIMD: 0 turns it off, avx2 stops at AVX2)."},
    {"utf8_set_simd", utf8_set_simd, METH_O,
     "utf8_set_simd(level) -> the level before: for tests, to run each path the CPU has."},
    {"crc32_set_simd", crc32_set_simd, METH_O,
     "crc32_set_simd(width) -> the width before: the widest CRC32 fold, 128, 256 or 512 bits "
     "(True: the widest the CPU has, False: 128), for tests."},
    {"crc32", crc32_py, METH_VARARGS,
     "crc32(data, value=0) -> int: zlib's CRC32 (VPCLMULQDQ or PCLMULQDQ when the CPU has it)."},
    {"sha1", sha1_py, METH_O,
     "sha1(data) -> bytes: the SHA-1 digest (SHA-NI when the CPU has it)."},
    {"sha1_set_simd", sha1_set_simd, METH_O,
     "sha1_set_simd(on) -> on before: SHA-NI or the portable rounds, for tests (off without "
     "the instructions)."},
    {"row_sums", row_sums, METH_VARARGS,
     "row_sums(columns, chunks, counts, xors): each row's canonical text from its "
     "columns' value texts [(validity, offsets, data, start, int64 offsets?, framed?)], "
     "hashed with SHA-1 and folded into counts[chunk] and xors[chunk] (uint64 buffers; "
     "verify.lake.fold_rows)."},
    {"configure", configure, METH_VARARGS,
     "configure(ABSENT, Decimal, MySQLTime, DecodeError, date_fallback, datetime2_fallback, "
     "timestamp2_fallback): the Python objects the decoder builds or defers to."},
    {"record_class", record_class, METH_VARARGS,
     "record_class(cls, slot_names): the class make_records() builds (slots only)."},
    {"jsonl_records", jsonl_records, METH_VARARGS,
     "jsonl_records(records, plan_for, line_of) -> bytes: the records' JSON lines (UTF-8), "
     "with plan_for(table_map) -> cdcjson.jsonl_plan and line_of(record) -> the line of a "
     "record this writer leaves to Python."},
    {"text_records", text_records, METH_VARARGS,
     "text_records(records, plan_for, line_of) -> bytes: their lines of --output text, as "
     "jsonl_records (plan_for -> cdcjson.text_plan)."},
    {"text_columns", text_columns, METH_VARARGS,
     "Packed text rows -> Arrow binary buffers per column (results.split_text_rows)."},
    {"fold_scd1", fold_scd1, METH_VARARGS,
     "A table's change records -> net change per key as Arrow buffers (cdc.net.net_scd1)."},
    {"make_records", make_records, METH_VARARGS,
     "make_records(template, rows, mode) -> list of records (0 insert, 1 delete, 2 update)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_core", "binlake's C row-image decoder (see rowcodec.py).", -1,
    module_methods
};

PyMODINIT_FUNC PyInit__core(void) {
    utf8_simd_init();
    crc32_init();
    sha1_init();
    if (values_init() < 0 || jsonl_init() < 0) return NULL;
    if (PyType_Ready(&RowDecoderType) < 0 || PyType_Ready(&SlotMakerType) < 0
        || PyType_Ready(&ImageRowsType) < 0 || PyType_Ready(&ImageColumnType) < 0
        || PyType_Ready(&ImageDataType) < 0
        || PyType_Ready(&CdcSegmentsType) < 0 || event_rows_init() < 0) return NULL;
    static const char *names[5] = {"negative", "hours", "minutes", "seconds", "microseconds"};
    for (int i = 0; i < 5; i++) {
        g_time_fields[i] = PyUnicode_InternFromString(names[i]);
        if (g_time_fields[i] == NULL) return NULL;
    }
    g_empty = PyUnicode_FromString("");
    g_comma = PyUnicode_FromString(",");
    if (g_empty == NULL || g_comma == NULL) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&RowDecoderType);
    if (PyModule_AddObject(m, "RowDecoder", (PyObject *)&RowDecoderType) < 0) {
        Py_DECREF(&RowDecoderType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "ImageRows", (PyObject *)&ImageRowsType) < 0
        || PyModule_AddObjectRef(m, "ImageColumn", (PyObject *)&ImageColumnType) < 0
        || PyModule_AddObjectRef(m, "CdcSegments", (PyObject *)&CdcSegmentsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "RowsScanner", (PyObject *)&RowsScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (crc_ahead_add(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SlotMakerType);
    if (PyModule_AddObject(m, "SlotMaker", (PyObject *)&SlotMakerType) < 0) {
        Py_DECREF(&SlotMakerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
