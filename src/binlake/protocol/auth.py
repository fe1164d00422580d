"""Authentication plugins, client and server side, as pure functions and small state machines.

mysql_native_password:  SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))); the server stores SHA1(SHA1(pw)).
caching_sha2_password:  SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + nonce); the server caches
    SHA256(SHA256(pw)) after one full authentication and then checks scrambles against it ("fast
    auth", answered 0x01 0x03). Without a cache entry it answers 0x01 0x04 and needs the password
    itself: in clear (password + NUL) over TLS, or RSA-OAEP encrypted (password + NUL XOR nonce)
    with the server's public key, which a client may ask for by sending 0x02.
client_ed25519 (MariaDB):  an Ed25519 signature of the server's 32-byte nonce, made with a key
    derived from the password (ed25519.py); the server checks it with the stored public key.

Nothing here keeps a password in a repr, error or log line.
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import BinlakeError, ProtocolError
from . import wire

if TYPE_CHECKING:  # pragma: no cover
    from cryptography.hazmat.primitives.asymmetric.padding import OAEP
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey, RSAPublicKey

NATIVE_PASSWORD = "mysql_native_password"
CACHING_SHA2_PASSWORD = "caching_sha2_password"
SHA256_PASSWORD = "sha256_password"
CLEAR_PASSWORD = "mysql_clear_password"
ED25519 = "client_ed25519"

#: first byte of a server's "more auth data" packet
AUTH_MORE_DATA = 0x01
#: first byte of an auth switch request (same value as an EOF header)
AUTH_SWITCH = 0xFE
#: caching_sha2 "fast auth" results (second byte of AuthMoreData)
FAST_AUTH_SUCCESS = 0x03
PERFORM_FULL_AUTH = 0x04
#: caching_sha2 client request for the server's RSA public key
REQUEST_PUBLIC_KEY = 0x02
#: sha256_password client request for the public key
SHA256_REQUEST_PUBLIC_KEY = 0x01

NONCE_LENGTH = 20
ER_ACCESS_DENIED = 1045
ER_NOT_SUPPORTED_AUTH_MODE = 1251


class AuthError(BinlakeError):
    """The client cannot complete the server's authentication (not the server saying no)."""


def _as_bytes(password: str | bytes | None) -> bytes:
    if password is None:
        return b""
    return password.encode("utf-8") if isinstance(password, str) else bytes(password)


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


# -- mysql_native_password -------------------------------------------------------------------


def native_password_hash(password: str | bytes) -> bytes:
    """SHA1(SHA1(password)): what a server stores (mysql.user shows it hex with a '*')."""
    return hashlib.sha1(hashlib.sha1(_as_bytes(password)).digest()).digest()


def scramble_native(password: str | bytes | None, nonce: bytes) -> bytes:
    """The 20-byte native auth response (empty for an empty password)."""
    pw = _as_bytes(password)
    if not pw:
        return b""
    stage1 = hashlib.sha1(pw).digest()
    stage2 = hashlib.sha1(stage1).digest()
    return _xor(stage1, hashlib.sha1(nonce[:NONCE_LENGTH] + stage2).digest())


def verify_native(stored_hash: bytes, nonce: bytes, response: bytes) -> bool:
    """Check a native response against SHA1(SHA1(pw)) without knowing the password."""
    if len(response) != 20:
        return False
    stage1 = _xor(response, hashlib.sha1(nonce[:NONCE_LENGTH] + stored_hash).digest())
    return hmac.compare_digest(hashlib.sha1(stage1).digest(), stored_hash)


# -- caching_sha2_password -------------------------------------------------------------------


def sha2_cache_entry(password: str | bytes) -> bytes:
    """SHA256(SHA256(password)): the value a caching_sha2 server keeps for fast auth."""
    return hashlib.sha256(hashlib.sha256(_as_bytes(password)).digest()).digest()


def scramble_caching_sha2(password: str | bytes | None, nonce: bytes) -> bytes:
    """The 32-byte caching_sha2 auth response (empty for an empty password)."""
    pw = _as_bytes(password)
    if not pw:
        return b""
    m1 = hashlib.sha256(pw).digest()
    m2 = hashlib.sha256(m1).digest()
    m3 = hashlib.sha256(m2 + nonce[:NONCE_LENGTH]).digest()
    return _xor(m1, m3)


def verify_caching_sha2(cached: bytes, nonce: bytes, response: bytes) -> bool:
    """Fast auth: check a scramble against the cached SHA256(SHA256(pw))."""
    if len(response) != 32:
        return False
    m1 = _xor(response, hashlib.sha256(cached + nonce[:NONCE_LENGTH]).digest())
    return hmac.compare_digest(hashlib.sha256(m1).digest(), cached)


def xor_password(password: str | bytes, nonce: bytes) -> bytes:
    """(password + NUL) XOR the nonce repeated: what goes inside the RSA envelope."""
    pw = _as_bytes(password) + b"\x00"
    n = nonce[:NONCE_LENGTH] or b"\x00"
    return bytes(b ^ n[i % len(n)] for i, b in enumerate(pw))


def _oaep() -> "OAEP":
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    # MySQL uses RSA_PKCS1_OAEP_PADDING: OAEP with SHA-1 and MGF1(SHA-1)
    return padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)


def load_public_key(pem: bytes | str) -> "RSAPublicKey":
    """A PEM public key (the server's) as a cryptography object; a clear error if it is not one."""
    from cryptography.hazmat.primitives import serialization

    data = pem.encode("ascii") if isinstance(pem, str) else bytes(pem)
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise AuthError("the server public key is not a valid PEM RSA public key",
                        hint="check server_public_key_path, or the server's caching_sha2_password_public_key_path") from exc
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

    if not isinstance(key, RSAPublicKey):
        raise AuthError("the server public key is not an RSA key")
    return key


def rsa_encrypt_password(password: str | bytes, nonce: bytes, public_key_pem: bytes | str) -> bytes:
    """RSA-OAEP((password + NUL) XOR nonce) with the server's public key."""
    key = load_public_key(public_key_pem)
    plain = xor_password(password, nonce)
    try:
        return key.encrypt(plain, _oaep())
    except ValueError as exc:
        raise AuthError("the password is too long for the server's RSA key") from exc


def rsa_decrypt_password(ciphertext: bytes, nonce: bytes, private_key: "RSAPrivateKey") -> bytes:
    """Server side: the password bytes from an RSA-encrypted auth response."""
    plain = private_key.decrypt(bytes(ciphertext), _oaep())
    n = nonce[:NONCE_LENGTH] or b"\x00"
    pw = bytes(b ^ n[i % len(n)] for i, b in enumerate(plain))
    return pw[:-1] if pw.endswith(b"\x00") else pw


def generate_rsa_key(bits: int = 2048) -> "RSAPrivateKey":
    """A fresh RSA private key for a caching_sha2 server that has no TLS."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def public_key_pem(private_key: "RSAPrivateKey") -> bytes:
    """The SubjectPublicKeyInfo PEM a server sends on a 0x02 request."""
    from cryptography.hazmat.primitives import serialization

    return private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


# -- packets ---------------------------------------------------------------------------------


@dataclass
class AuthSwitchRequest:
    """Protocol::AuthSwitchRequest: the server wants another plugin (and gives its data)."""

    plugin_name: str
    plugin_data: bytes = b""

    @property
    def nonce(self) -> bytes:
        data = self.plugin_data
        return data[:-1] if data.endswith(b"\x00") else data

    @classmethod
    def parse(cls, payload: wire.Buffer) -> "AuthSwitchRequest":
        r = wire.Reader(payload)
        if r.u8("auth switch header") != AUTH_SWITCH:
            raise ProtocolError("expected an auth switch request")
        if r.at_end():
            # the pre-4.1 "use old passwords" request; binlake does not speak mysql_old_password
            return cls("mysql_old_password", b"")
        name = r.nul_bytes_or_rest().decode("ascii", "replace")
        return cls(name, r.rest())

    def build(self) -> bytes:
        return b"\xfe" + wire.nul_str(self.plugin_name) + self.plugin_data


def auth_more_data(data: bytes) -> bytes:
    """Protocol::AuthMoreData payload."""
    return bytes((AUTH_MORE_DATA,)) + data


# -- client side -----------------------------------------------------------------------------


SUPPORTED_CLIENT_PLUGINS = (NATIVE_PASSWORD, CACHING_SHA2_PASSWORD, SHA256_PASSWORD, CLEAR_PASSWORD,
                            ED25519)


@dataclass(repr=False)
class ClientAuth:
    """One client-side auth plugin run: gives the first response, then answers AuthMoreData.

    ``secure`` means the transport is TLS (or a local socket), so the password may go in clear.
    """

    plugin: str
    nonce: bytes
    password: str | bytes | None
    secure: bool = False
    server_public_key: bytes | None = None
    allow_public_key_retrieval: bool = False
    #: set once the server said fast auth succeeded or the full password was sent
    done: bool = field(default=False, init=False)
    _awaiting_key: bool = field(default=False, init=False)

    def __repr__(self) -> str:
        return f"ClientAuth(plugin={self.plugin!r}, secure={self.secure})"

    @staticmethod
    def supports(plugin: str) -> bool:
        return plugin in SUPPORTED_CLIENT_PLUGINS

    def initial_response(self) -> bytes:
        p = self.plugin
        if p == NATIVE_PASSWORD:
            return scramble_native(self.password, self.nonce)
        if p == CACHING_SHA2_PASSWORD:
            return scramble_caching_sha2(self.password, self.nonce)
        if p == ED25519:
            from . import ed25519

            if len(self.nonce) != ed25519.NONCE_LENGTH:
                raise ProtocolError(f"client_ed25519 nonce of {len(self.nonce)} bytes, expected "
                                    f"{ed25519.NONCE_LENGTH}")
            return ed25519.sign(self.password, self.nonce)
        if p == SHA256_PASSWORD:
            if not _as_bytes(self.password):
                return b"\x00"
            return self._full_password(SHA256_REQUEST_PUBLIC_KEY)
        if p == CLEAR_PASSWORD:
            if not self.secure:
                raise AuthError("the server asks for the password in clear text (mysql_clear_password) "
                                "over an unencrypted connection; refused",
                                hint="connect with ssl_mode REQUIRED or stronger")
            return _as_bytes(self.password) + b"\x00"
        raise AuthError(f"authentication plugin {p!r} is not supported by binlake",
                        hint="use mysql_native_password, caching_sha2_password or ed25519 for "
                             "this account")

    def _full_password(self, request_byte: int) -> bytes:
        """The cleartext (TLS) or RSA-encrypted password, or a public key request."""
        if self.secure:
            return _as_bytes(self.password) + b"\x00"
        if self.server_public_key is not None:
            return rsa_encrypt_password(self.password or b"", self.nonce, self.server_public_key)
        if self.allow_public_key_retrieval:
            self._awaiting_key = True
            return bytes((request_byte,))
        raise AuthError(
            "the server needs the full password and the connection is not encrypted",
            hint="use TLS (ssl_mode REQUIRED), pass server_public_key_path, "
                 "or set allow_public_key_retrieval=True",
        )

    def on_more_data(self, data: bytes) -> bytes | None:
        """React to an AuthMoreData body (without the 0x01); returns bytes to send, or None."""
        if self._awaiting_key:
            self._awaiting_key = False
            if not data.lstrip().startswith(b"-----BEGIN"):
                raise ProtocolError("expected the server's PEM public key")
            self.server_public_key = bytes(data)
            self.done = True
            return rsa_encrypt_password(self.password or b"", self.nonce, self.server_public_key)
        if self.plugin == CACHING_SHA2_PASSWORD and len(data) == 1:
            if data[0] == FAST_AUTH_SUCCESS:
                self.done = True
                return None
            if data[0] == PERFORM_FULL_AUTH:
                out = self._full_password(REQUEST_PUBLIC_KEY)
                self.done = not self._awaiting_key
                return out
        if self.plugin == SHA256_PASSWORD and data.lstrip().startswith(b"-----BEGIN"):
            self.server_public_key = bytes(data)
            return rsa_encrypt_password(self.password or b"", self.nonce, self.server_public_key)
        raise ProtocolError(f"unexpected auth data from the server for {self.plugin}")


# -- server side -----------------------------------------------------------------------------


@dataclass(repr=False)
class Account:
    """A user binlake's server accepts: the password and the plugin it must be checked with."""

    password: str | bytes
    plugin: str = CACHING_SHA2_PASSWORD

    def __repr__(self) -> str:
        return f"Account(plugin={self.plugin!r}, password=***)"


class Sha2Cache:
    """caching_sha2 fast-auth cache shared by the connections of one server: user → SHA256²(pw)."""

    def __init__(self) -> None:
        self._entries: dict[str, bytes] = {}

    def get(self, user: str) -> bytes | None:
        return self._entries.get(user)

    def put(self, user: str, password: str | bytes) -> None:
        self._entries[user] = sha2_cache_entry(password)

    def forget(self, user: str) -> None:
        self._entries.pop(user, None)

    def __contains__(self, user: str) -> bool:
        return user in self._entries

    def __repr__(self) -> str:
        return f"Sha2Cache({len(self._entries)} users)"


class ServerAuthResult:
    """What a server auth step decided: send ``reply`` payloads, then maybe finish."""

    __slots__ = ("replies", "outcome", "reason")

    def __init__(self, replies: list[bytes], outcome: str | None = None, reason: str = "") -> None:
        self.replies = replies
        self.outcome = outcome  # None: wait for the client; "ok" or "fail"
        self.reason = reason


class ServerAuth:
    """Server side of one plugin run against a known account (plugin already agreed)."""

    def __init__(self, user: str, account: Account, nonce: bytes, *, secure: bool,
                 cache: Sha2Cache | None, rsa_private_key: "RSAPrivateKey | None" = None) -> None:
        self.user = user
        self.account = account
        self.nonce = nonce
        self.secure = secure
        self.cache = cache
        self.rsa_private_key = rsa_private_key
        self._stage = "first"

    @property
    def plugin(self) -> str:
        return self.account.plugin

    def _password_matches(self, candidate: bytes) -> bool:
        return hmac.compare_digest(candidate, _as_bytes(self.account.password))

    def first(self, response: bytes) -> ServerAuthResult:
        """The first auth response (from HandshakeResponse or AuthSwitchResponse)."""
        pw = _as_bytes(self.account.password)
        if self.plugin == NATIVE_PASSWORD:
            if not response:
                ok = not pw
            else:
                ok = bool(pw) and verify_native(native_password_hash(pw), self.nonce, response)
            return ServerAuthResult([], "ok" if ok else "fail", "" if ok else "wrong password")
        if self.plugin != CACHING_SHA2_PASSWORD:
            return ServerAuthResult([], "fail", f"plugin {self.plugin} not supported by this server")
        if not response:
            return ServerAuthResult([], "ok" if not pw else "fail", "" if not pw else "no password given")
        cached = self.cache.get(self.user) if self.cache is not None else None
        if cached is not None:
            if verify_caching_sha2(cached, self.nonce, response):
                return ServerAuthResult([auth_more_data(bytes((FAST_AUTH_SUCCESS,)))], "ok")
            return ServerAuthResult([], "fail", "wrong password (fast auth)")
        self._stage = "full"
        return ServerAuthResult([auth_more_data(bytes((PERFORM_FULL_AUTH,)))])

    def more(self, data: bytes) -> ServerAuthResult:
        """A later client packet in the same plugin run."""
        if self._stage != "full":
            return ServerAuthResult([], "fail", "unexpected authentication data")
        if self.secure:
            candidate = data[:-1] if data.endswith(b"\x00") else data
            return self._full(candidate)
        if data == bytes((REQUEST_PUBLIC_KEY,)):
            if self.rsa_private_key is None:
                return ServerAuthResult([], "fail", "client asked for the RSA public key but the "
                                        "server has none (use TLS)")
            return ServerAuthResult([auth_more_data(public_key_pem(self.rsa_private_key))])
        if self.rsa_private_key is None:
            return ServerAuthResult([], "fail", "full authentication needs TLS or an RSA key")
        key_bytes = (self.rsa_private_key.key_size + 7) // 8
        if len(data) != key_bytes:
            # a cleartext password on an insecure channel is refused, never checked
            return ServerAuthResult([], "fail", "password sent in clear over an unencrypted connection")
        try:
            candidate = rsa_decrypt_password(data, self.nonce, self.rsa_private_key)
        except ValueError:
            return ServerAuthResult([], "fail", "RSA decryption failed")
        return self._full(candidate)

    def _full(self, candidate: bytes) -> ServerAuthResult:
        if self._password_matches(candidate):
            if self.cache is not None:
                self.cache.put(self.user, candidate)
            return ServerAuthResult([], "ok")
        return ServerAuthResult([], "fail", "wrong password")
