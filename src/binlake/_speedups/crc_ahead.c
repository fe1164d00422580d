/* CrcAhead: a binlog file's event checksums checked by a thread of its own, ahead of the
 * decoder, with no GIL.
 *
 * Why: reading a closed binlog, checking each event's CRC32 is the first touch of its
 * bytes, so the decoder's thread would pay for the checksum and for bringing the bytes
 * from memory. A second core can do both while
 * the decoder works on the window before: the decoder then checks only what this thread
 * did not vouch for.
 *
 * Use (files.py): submit(window, offset) hands over the next mapped window of the file
 * (the bytes from file offset `offset`, following the previous window's), and with
 * drop=old a window the decoder is done with, whose pages the thread lets go (Linux's
 * MADV_DONTNEED) before it walks the new one; wait() blocks
 * until the oldest window is walked and returns `verified`, the file offset up to which
 * every event was found whole with a matching CRC32. The walk follows the events by their
 * lengths from the first window's offset (an event boundary), across windows (a CRC is
 * carried over), as the decoder does. It stops for good at anything it cannot vouch for:
 * a length under a header and a checksum, a CRC that does not match, MariaDB's
 * START_ENCRYPTION (the events after it are not checksummed in the clear). The decoder
 * then checks everything from there and raises its usual located error: the thread never
 * decides what is an error, only what need not be checked twice.
 *
 * Why drop: unmapping an 8 MiB window takes its 2,048 pages out of the page tables one by
 * one (and out of the memory cgroup's counts), work the decoder's thread would otherwise
 * do. Done here first, the decoder's munmap finds no page left to take out. It
 * cannot change what is read: the mapping is of a file, read-only and shared, so a page
 * touched again after MADV_DONTNEED is mapped again from the page cache, with the same
 * bytes.
 *
 * The thread touches no Python object: submit() takes the window's buffer with the GIL,
 * wait() gives it back with the GIL, and deallocation stops and joins the thread first.
 * A forked child's copy (a worker pool started while a file is read) has no thread behind
 * it: it refuses work, and letting it go only gives its buffers back.
 *
 * A compilation unit of its own: crc.h declares crc_ahead_add, which adds the type to the
 * module (where threads and mappings exist: Unix). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "crc.h"

#if defined(__unix__) || defined(__APPLE__)
#define BINLAKE_CRC_AHEAD 1
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22  /* Linux 5.14 */
#endif

#define AHEAD_SLOTS 4
#define EV_HEADER_LEN 19
#define EV_START_ENCRYPTION 164
#define EV_FORMAT_DESCRIPTION 15

typedef struct {
    Py_buffer view;
    Py_buffer drop;      /* a window to let go of first (has_drop), given back by wait() */
    int has_drop;
    long long offset;    /* file offset of view.buf[0] */
    long long verified;  /* the walk's `verified` after this window */
    int done;
} AheadSlot;

typedef struct {
    PyObject_HEAD
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, stop;
    pid_t owner;         /* the process that started the thread (a fork's child has none) */
    AheadSlot slot[AHEAD_SLOTS];
    int first, count;    /* the windows handed over and not yet waited for, oldest first */
    int next_walk;       /* how many of those the thread has walked */
    /* the walk (the thread's own between windows) */
    long long at;        /* file offset of the next byte to walk */
    long long start;     /* where the current event starts */
    long long verified;
    int failed;
    uint8_t head[EV_HEADER_LEN];
    int head_len;        /* header bytes of the current event seen */
    long long size;      /* its length, once the header is whole */
    uint32_t crc;        /* of its bytes before the checksum seen so far */
    uint8_t tail[4];
    int tail_len;
} CrcAhead;

static PyTypeObject CrcAheadType;

static inline uint32_t le32(const uint8_t *s) {
    return (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}

/* Walk n bytes at p (file offset self->at): every event completed in them checked. */
static void ahead_walk(CrcAhead *self, const uint8_t *p, long long n) {
    long long i = 0;
    while (i < n && !self->failed) {
        if (self->head_len < EV_HEADER_LEN) {
            int take = (int)(n - i < EV_HEADER_LEN - self->head_len ? n - i : EV_HEADER_LEN - self->head_len);
            memcpy(self->head + self->head_len, p + i, (size_t)take);
            self->head_len += take;
            i += take;
            if (self->head_len < EV_HEADER_LEN) break;
            self->size = (long long)le32(self->head + 9);
            int code = self->head[4];
            if (self->size < EV_HEADER_LEN + 4 || code == EV_START_ENCRYPTION) { self->failed = 1; break; }
            uint8_t h[EV_HEADER_LEN];
            memcpy(h, self->head, EV_HEADER_LEN);
            if (code == EV_FORMAT_DESCRIPTION) h[17] &= (uint8_t)~1;  /* computed before the
                                                                          in-use flag was set */
            self->crc = crc32_update(0, h, EV_HEADER_LEN);
            self->tail_len = 0;
        }
        long long body_left = self->size - 4 - (self->at + i - self->start);
        if (body_left > 0) {
            long long take = n - i < body_left ? n - i : body_left;
            self->crc = crc32_update(self->crc, p + i, (size_t)take);
            i += take;
            if (take < body_left) break;
        }
        int t = (int)(n - i < 4 - self->tail_len ? n - i : 4 - self->tail_len);
        memcpy(self->tail + self->tail_len, p + i, (size_t)t);
        self->tail_len += t;
        i += t;
        if (self->tail_len < 4) break;
        if (le32(self->tail) != self->crc) { self->failed = 1; break; }
        self->verified = self->start + self->size;
        self->start = self->verified;
        self->head_len = 0;
    }
    self->at += n;
}

static void *ahead_thread(void *arg) {
    CrcAhead *self = arg;
    pthread_mutex_lock(&self->mu);
    for (;;) {
        while (!self->stop && self->next_walk >= self->count)
            pthread_cond_wait(&self->cv, &self->mu);
        if (self->stop) break;
        AheadSlot *s = &self->slot[(self->first + self->next_walk) % AHEAD_SLOTS];
        pthread_mutex_unlock(&self->mu);
#if defined(__linux__) && defined(MADV_DONTNEED)
        if (s->has_drop && s->drop.len > 0) {  /* (an error: the decoder's munmap does it) */
            long page = sysconf(_SC_PAGESIZE);
            uintptr_t lo = (uintptr_t)s->drop.buf & ~(uintptr_t)(page - 1);
            madvise((void *)lo, (uintptr_t)s->drop.buf + s->drop.len - lo, MADV_DONTNEED);
        }
#endif
        if (!self->failed) {
            if (s->offset != self->at) self->failed = 1;  /* not the next bytes: vouch no more */
            else {
#ifdef MADV_POPULATE_READ
                /* A mapped window's pages mapped in one call, here, rather than by a fault
                   per 64 KiB (an error, e.g. an older kernel or not a mapping: faults then). */
                long page = sysconf(_SC_PAGESIZE);
                uintptr_t lo = (uintptr_t)s->view.buf & ~(uintptr_t)(page - 1);
                madvise((void *)lo, (uintptr_t)s->view.buf + s->view.len - lo, MADV_POPULATE_READ);
#endif
                ahead_walk(self, s->view.buf, s->view.len);
            }
        }
        pthread_mutex_lock(&self->mu);
        s->verified = self->verified;
        s->done = 1;
        self->next_walk++;
        pthread_cond_broadcast(&self->cv);
    }
    pthread_mutex_unlock(&self->mu);
    return NULL;
}

static int CrcAhead_init(CrcAhead *self, PyObject *args, PyObject *kw) {
    long long start;
    if (!PyArg_ParseTuple(args, "L", &start)) return -1;
    if (self->started) { PyErr_SetString(PyExc_RuntimeError, "CrcAhead is running"); return -1; }
    self->at = self->start = self->verified = start;
    if (pthread_mutex_init(&self->mu, NULL) != 0) { PyErr_SetString(PyExc_OSError, "no mutex"); return -1; }
    if (pthread_cond_init(&self->cv, NULL) != 0) {
        pthread_mutex_destroy(&self->mu);
        PyErr_SetString(PyExc_OSError, "no condition variable");
        return -1;
    }
    if (pthread_create(&self->thread, NULL, ahead_thread, self) != 0) {
        pthread_cond_destroy(&self->cv);
        pthread_mutex_destroy(&self->mu);
        PyErr_SetString(PyExc_OSError, "cannot start the checksum thread");
        return -1;
    }
    self->owner = getpid();
    self->started = 1;
    return 0;
}

/* submit(window, offset, drop=None): the next bytes of the file, from file offset `offset`;
   `drop`, a mapped window of the file nothing will read again (read again, it is mapped
   anew from the page cache), let go of first. */
static PyObject *CrcAhead_submit(CrcAhead *self, PyObject *args) {
    PyObject *obj, *drop = Py_None;
    long long offset;
    if (!PyArg_ParseTuple(args, "OL|O", &obj, &offset, &drop)) return NULL;
    if (!self->started) { PyErr_SetString(PyExc_RuntimeError, "CrcAhead not started"); return NULL; }
    if (getpid() != self->owner) { PyErr_SetString(PyExc_RuntimeError, "CrcAhead of another process"); return NULL; }
    if (self->count >= AHEAD_SLOTS) { PyErr_SetString(PyExc_RuntimeError, "too many windows ahead"); return NULL; }
    AheadSlot *s = &self->slot[(self->first + self->count) % AHEAD_SLOTS];
    if (PyObject_GetBuffer(obj, &s->view, PyBUF_SIMPLE) < 0) return NULL;
    s->has_drop = 0;
    if (drop != Py_None) {
        /* Only a read-only view of an mmap: there MADV_DONTNEED cannot change a byte (a
           file's page is mapped anew from the page cache). A private or heap buffer would
           lose its contents. */
        if (!PyMemoryView_Check(drop) || PyMemoryView_GET_BUFFER(drop)->readonly == 0 ||
            PyMemoryView_GET_BASE(drop) == NULL ||
            strcmp(Py_TYPE(PyMemoryView_GET_BASE(drop))->tp_name, "mmap.mmap") != 0) {
            PyBuffer_Release(&s->view);
            PyErr_SetString(PyExc_TypeError, "drop must be a read-only memoryview of an mmap");
            return NULL;
        }
        if (PyObject_GetBuffer(drop, &s->drop, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&s->view);
            return NULL;
        }
        s->has_drop = 1;
    }
    s->offset = offset;
    s->done = 0;
    pthread_mutex_lock(&self->mu);
    self->count++;
    pthread_cond_broadcast(&self->cv);
    pthread_mutex_unlock(&self->mu);
    Py_RETURN_NONE;
}

/* A slot's buffers given back (with the GIL): a dropped window's munmap may follow. */
static void ahead_release(AheadSlot *s) {
    PyBuffer_Release(&s->view);
    if (s->has_drop) PyBuffer_Release(&s->drop);
    s->has_drop = 0;
}

/* wait() -> verified: the oldest window walked (its buffers given back) */
static PyObject *CrcAhead_wait(CrcAhead *self, PyObject *unused) {
    if (self->count == 0) { PyErr_SetString(PyExc_RuntimeError, "no window to wait for"); return NULL; }
    if (getpid() != self->owner) { PyErr_SetString(PyExc_RuntimeError, "CrcAhead of another process"); return NULL; }
    AheadSlot *s = &self->slot[self->first];
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&self->mu);
    while (!s->done) pthread_cond_wait(&self->cv, &self->mu);
    self->first = (self->first + 1) % AHEAD_SLOTS;
    self->count--;
    self->next_walk--;
    pthread_mutex_unlock(&self->mu);
    Py_END_ALLOW_THREADS
    long long verified = s->verified;
    ahead_release(s);
    return PyLong_FromLongLong(verified);
}

static void ahead_stop(CrcAhead *self) {
    if (!self->started) return;
    /* (a copy in a forked child has no thread to stop, and its lock may have been copied
       held: it only gives its buffers back) */
    if (getpid() == self->owner) {
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&self->mu);
        self->stop = 1;
        pthread_cond_broadcast(&self->cv);
        pthread_mutex_unlock(&self->mu);
        pthread_join(self->thread, NULL);  /* (it finishes the window it walks: milliseconds) */
        Py_END_ALLOW_THREADS
        pthread_cond_destroy(&self->cv);
        pthread_mutex_destroy(&self->mu);
    }
    self->started = 0;
    for (int k = 0; k < self->count; k++) ahead_release(&self->slot[(self->first + k) % AHEAD_SLOTS]);
    self->count = self->next_walk = 0;
}

static PyObject *CrcAhead_close(CrcAhead *self, PyObject *unused) {
    ahead_stop(self);
    Py_RETURN_NONE;
}

static void CrcAhead_dealloc(CrcAhead *self) {
    ahead_stop(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef CrcAhead_methods[] = {
    {"submit", (PyCFunction)CrcAhead_submit, METH_VARARGS,
     "submit(window, offset, drop=None): the file's next bytes (from file offset `offset`), "
     "to walk; `drop`, a mapped window nothing will read again, its pages let go of first."},
    {"wait", (PyCFunction)CrcAhead_wait, METH_NOARGS,
     "wait() -> verified: blocks until the oldest window is walked; the file offset below "
     "which every event's CRC32 was found to match."},
    {"close", (PyCFunction)CrcAhead_close, METH_NOARGS,
     "close(): stop the thread and give back the windows not waited for."},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef CrcAhead_members[] = {
    {"failed", T_INT, offsetof(CrcAhead, failed), READONLY,
     "1 once the walk stopped at an event it could not vouch for (the decoder checks on)."},
    {NULL, 0, 0, 0, NULL}
};

static PyTypeObject CrcAheadType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlake._speedups._core.CrcAhead",
    .tp_basicsize = sizeof(CrcAhead),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CrcAhead(start): a thread that checks a binlog file's event checksums from "
              "file offset `start` (an event boundary), ahead of the decoder (crc_ahead.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CrcAhead_init,
    .tp_dealloc = (destructor)CrcAhead_dealloc,
    .tp_methods = CrcAhead_methods,
    .tp_members = CrcAhead_members,
};

#endif  /* unix */

int crc_ahead_add(PyObject *module) {
#ifdef BINLAKE_CRC_AHEAD
    if (PyType_Ready(&CrcAheadType) < 0
        || PyModule_AddObjectRef(module, "CrcAhead", (PyObject *)&CrcAheadType) < 0) return -1;
#endif
    return 0;
}
