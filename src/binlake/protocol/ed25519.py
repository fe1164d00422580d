"""MariaDB's client_ed25519 authentication: an Ed25519 signature of the server's nonce.

Why our own arithmetic: MariaDB derives the signing key from the password itself (the secret
scalar and nonce prefix are SHA-512(password), where RFC 8032 hashes a 32-byte seed), and
libraries only take seeds. The rest is plain Ed25519 (RFC 8032, section 5.1), so any Ed25519
verifier accepts the signature under the public key the server stores for the account
(`IDENTIFIED VIA ed25519 USING PASSWORD('...')`). It runs once per connection (a few ms of
Python big-integer arithmetic); nothing here keeps the password.
"""
from __future__ import annotations

import hashlib

PLUGIN = "client_ed25519"
NONCE_LENGTH = 32

_P = 2 ** 255 - 19
_L = 2 ** 252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T), x = X/Z, y = Y/Z, xy = T/Z


def _x_from_y(y: int, sign: int) -> int:
    """The x of the curve point with this y and x's low bit (RFC 8032, 5.1.3)."""
    u, v = (y * y - 1) % _P, (_D * y * y + 1) % _P
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    if (v * x * x - u) % _P:
        x = x * _SQRT_M1 % _P
    if x & 1 != sign:
        x = _P - x
    return x


_BY = 4 * pow(5, _P - 2, _P) % _P
_BX = _x_from_y(_BY, 0)
_BASE: Point = (_BX, _BY, 1, _BX * _BY % _P)
_ZERO: Point = (0, 1, 1, 0)


def _add(p: Point, q: Point) -> Point:
    """Point addition on the twisted Edwards curve (complete: also doubles)."""
    x1, y1, z1, t1 = p
    x2, y2, z2, t2 = q
    a = (y1 - x1) * (y2 - x2) % _P
    b = (y1 + x1) * (y2 + x2) % _P
    c = 2 * t1 * t2 * _D % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _mul(k: int, p: Point) -> Point:
    q = _ZERO
    while k:
        if k & 1:
            q = _add(q, p)
        p = _add(p, p)
        k >>= 1
    return q


def _encode(p: Point) -> bytes:
    x, y, z, _ = p
    zi = pow(z, _P - 2, _P)
    x, y = x * zi % _P, y * zi % _P
    return (y | (x & 1) << 255).to_bytes(32, "little")


def _secret(password: bytes) -> tuple[int, bytes]:
    """The clamped secret scalar and the nonce prefix, from SHA-512 of the password."""
    h = hashlib.sha512(password).digest()
    a = int.from_bytes(h[:32], "little")
    a = (a & ((1 << 254) - 8)) | (1 << 254)
    return a, h[32:]


def public_key(password: str | bytes) -> bytes:
    """The 32-byte public key MariaDB stores for the password (base64 in mysql.global_priv)."""
    a, _ = _secret(password.encode() if isinstance(password, str) else password)
    return _encode(_mul(a, _BASE))


def sign(password: str | bytes | None, message: bytes) -> bytes:
    """The 64-byte signature (R || S) of the server's nonce: client_ed25519's whole answer."""
    pw = b"" if password is None else password.encode() if isinstance(password, str) else password
    a, prefix = _secret(pw)
    pub = _encode(_mul(a, _BASE))
    r = int.from_bytes(hashlib.sha512(prefix + message).digest(), "little") % _L
    big_r = _encode(_mul(r, _BASE))
    k = int.from_bytes(hashlib.sha512(big_r + pub + message).digest(), "little") % _L
    return big_r + ((r + k * a) % _L).to_bytes(32, "little")
