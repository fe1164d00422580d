/* JSON text: Buf's growth, JSON string escaping of text known to be UTF-8, base64.
 *
 * A compilation unit; text.h declares what it gives the others. */
#include "common.h"
#include "text.h"

int buf_grow(Buf *o, Py_ssize_t extra) {
    char *np = grow_array(o->p, &o->cap, o->len + extra, 256, 1);
    if (np == NULL) return -1;
    o->p = np;
    return 0;
}

/* JSON string body of UTF-8 bytes, escaped as json.encoder.encode_basestring does. */
int put_escaped(Buf *o, const unsigned char *s, Py_ssize_t n) {
    if (buf_reserve(o, n + 2) < 0) return -1;
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t j = i;
        while (j < n && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\') j++;
        if (put(o, (const char *)s + i, j - i) < 0) return -1;
        if (j >= n) break;
        unsigned char c = s[j];
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        int k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default: esc[1] = 'u'; esc[2] = '0'; esc[3] = '0'; esc[4] = HEX[c >> 4]; esc[5] = HEX[c & 15]; k = 6;
        }
        if (put(o, esc, k) < 0) return -1;
        i = j + 1;
    }
    return 0;
}

int put_base64(Buf *o, const unsigned char *s, Py_ssize_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (buf_reserve(o, (n + 2) / 3 * 4 + 2) < 0) return -1;
    char *d = o->p + o->len;
    *d++ = '"';
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (s[i] << 16) | (s[i + 1] << 8) | s[i + 2];
        *d++ = A[v >> 18]; *d++ = A[(v >> 12) & 63]; *d++ = A[(v >> 6) & 63]; *d++ = A[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = s[i] << 16;
        *d++ = A[v >> 18]; *d++ = A[(v >> 12) & 63]; *d++ = '='; *d++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (s[i] << 16) | (s[i + 1] << 8);
        *d++ = A[v >> 18]; *d++ = A[(v >> 12) & 63]; *d++ = A[(v >> 6) & 63]; *d++ = '=';
    }
    *d++ = '"';
    o->len = d - o->p;
    return 0;
}
