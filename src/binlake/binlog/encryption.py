"""MariaDB binlog encryption (``encrypt_binlog=ON``): key files and per-event decryption.

Sans-IO: bytes in, bytes out. The reader hands over each raw event as it sits in the file,
with its file offset, and gets back the event as an unencrypted binlog would hold it, so the
ordinary decoder (CRC check included) runs on the result unchanged.

The on-disk scheme, as MariaDB writes it (crypto scheme 1):

* The START_ENCRYPTION event (type 164, right after the FDE, itself in clear) carries
  ``scheme (1 byte) | key_version (uint32 LE) | nonce (12 bytes)``.
* Each later event is encrypted with AES under system key id 1 at that key version, with
  ``IV = nonce || uint32_le(offset of the event's first byte in the file)``.
* Before encrypting, the server moves the 4 timestamp bytes (0..4) over the length field
  (9..13), then encrypts bytes 4..end (type, server id, timestamp, log pos, flags, body and
  CRC; the CRC was computed over the plaintext event in its normal layout). It then stores
  the 4 cipher bytes that landed at 9..13 at 0..4 and writes the clear event length at 9..13,
  so a reader can find event boundaries without the key.
* The AES mode is not recorded in the file: it is the key plugin's setting
  (``file_key_management_encryption_algorithm``): AES_CBC (default) or AES_CTR.
  CBC is used without padding: whole blocks are plain CBC; a trailing partial block of
  ``n`` bytes is XORed with the first ``n`` bytes of ``AES-ECB(key, IV)`` (the original IV
  of the event, not the last cipher block). CTR is plain AES-CTR with a 128-bit big-endian
  counter starting at the IV.
* file_key_management has no key rotation: key version is always 1 and the key bytes from
  the key file are used as they are (no derivation).

Replication streams are decrypted by the server's dump thread; only files need this.
"""
from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from ..errors import ConfigError, DecodeError, TruncatedError
from .constants import HEADER_LEN, EventType

__all__ = [
    "SYSTEM_KEY_ID",
    "StartEncryption",
    "parse_start_encryption",
    "load_key_file",
    "BinlogDecryptor",
]

SYSTEM_KEY_ID = 1  # ENCRYPTION_KEY_SYSTEM_DATA: the key id MariaDB uses for binlogs
START_ENCRYPTION_BODY_LEN = 17  # scheme 1 + key_version 4 + nonce 12
NONCE_LEN = 12
_BLOCK = 16
_KEY_LENGTHS = (16, 24, 32)
_ALGORITHMS = ("aes_cbc", "aes_ctr", "auto")
_KNOWN_TYPES = frozenset(int(t) for t in EventType)
# File offsets wrap at 4 GiB in the IV (the server stores a uint32).
_U32_MASK = 0xFFFFFFFF
# key id -> key, or (key id, key version) -> key for key plugins that rotate.
KeyMap = Mapping[int, bytes] | Mapping[int | tuple[int, int], bytes]
_LINE_RE = re.compile(r"[ \t\f\v\r]*(\d+);([0-9a-fA-F]*)(.*)")


@dataclass(frozen=True, slots=True)
class StartEncryption:
    """The body of a START_ENCRYPTION event (type 164)."""

    scheme: int
    key_version: int
    nonce: bytes


def parse_start_encryption(body: bytes | memoryview) -> StartEncryption:
    """Parse a START_ENCRYPTION body (after the 19-byte header; a trailing CRC is ignored)."""
    if len(body) < START_ENCRYPTION_BODY_LEN:
        raise TruncatedError(
            f"START_ENCRYPTION body has {len(body)} bytes, needs {START_ENCRYPTION_BODY_LEN}",
            event_type="MARIADB_START_ENCRYPTION",
        )
    scheme = body[0]
    (key_version,) = struct.unpack_from("<I", body, 1)
    nonce = bytes(body[5:5 + NONCE_LEN])
    if scheme != 1:
        raise DecodeError(
            f"unknown binlog crypto scheme {scheme} (MariaDB knows only scheme 1)",
            event_type="MARIADB_START_ENCRYPTION",
        )
    return StartEncryption(scheme, key_version, nonce)


def load_key_file(text: str | bytes) -> dict[int, bytes]:
    """Parse a file_key_management key file (``key_id;hex_key`` lines, ``#`` comments).

    Follows MariaDB's parser: leading blanks are skipped, ids are 1..2^32-1, keys are 16, 24
    or 32 bytes of hex, and text after the hex digits is ignored. Bad lines raise ConfigError
    naming the line. OpenSSL-encrypted key files (``file_key_management_filekey``) start with
    ``Salted__`` and are refused with a hint to decrypt them first.
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        if raw.startswith(b"Salted__"):
            raise _encrypted_key_file_error()
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"key file is not ASCII text (byte {exc.start})") from None
    if text.startswith("Salted__"):
        raise _encrypted_key_file_error()
    keys: dict[int, bytes] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE_RE.fullmatch(line)
        if match is None:
            raise ConfigError(f"key file line {number}: syntax error, expected 'id;hex_key'")
        key_id = int(match.group(1))
        if not 1 <= key_id <= _U32_MASK:
            raise ConfigError(f"key file line {number}: invalid key id {key_id}")
        hex_key = match.group(2)
        if len(hex_key) % 2 or len(hex_key) // 2 not in _KEY_LENGTHS:
            raise ConfigError(
                f"key file line {number}: key for id {key_id} has {len(hex_key)} hex digits; "
                "AES keys need 32, 48 or 64 (128, 192 or 256 bits)"
            )
        keys[key_id] = bytes.fromhex(hex_key)
    if not keys:
        raise ConfigError("key file holds no keys")
    return keys


def _encrypted_key_file_error() -> ConfigError:
    return ConfigError(
        "the key file is encrypted (file_key_management_filekey); this is not supported",
        hint="decrypt it first, e.g. openssl enc -d -aes-256-cbc -md sha1 -pass pass:SECRET "
        "-in keys.enc -out keys.txt",
    )


def _ecb_block(key: bytes, block: bytes) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def _xor(data: bytes | bytearray | memoryview, mask: bytes) -> bytes:
    n = len(data)
    return (int.from_bytes(data, "little") ^ int.from_bytes(mask[:n], "little")).to_bytes(n, "little")


def _cbc_nopad_decrypt(key: bytes, iv: bytes, data: bytes | bytearray | memoryview) -> bytes:
    """MariaDB's AES-CBC without padding: CBC on whole blocks, ECB(IV)-mask on the tail."""
    full = len(data) - len(data) % _BLOCK
    out = b""
    if full:
        dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        out = dec.update(data[:full]) + dec.finalize()
    if full != len(data):
        out += _xor(data[full:], _ecb_block(key, iv))
    return out


def _ctr_crypt(key: bytes, iv: bytes, data: bytes | bytearray | memoryview) -> bytes:
    dec = Cipher(algorithms.AES(key), modes.CTR(iv)).decryptor()
    return dec.update(data) + dec.finalize()


_MODES = {"aes_cbc": _cbc_nopad_decrypt, "aes_ctr": _ctr_crypt}


class BinlogDecryptor:
    """Decrypts the events of one MariaDB binlog file after its START_ENCRYPTION event.

    ``algorithm`` is the server's ``file_key_management_encryption_algorithm``: "aes_cbc",
    "aes_ctr", or "auto" (default) to pick whichever makes the first event plausible.
    ``keys`` maps key id to key bytes (as from :func:`load_key_file`); a key for a specific
    version of a rotating key plugin may be given as ``keys[(key_id, version)]``.
    ``relay_log=True`` skips the end-position check (relay logs carry the source's positions).
    """

    __slots__ = ("start", "key", "algorithm", "relay_log", "_crypt")

    def __init__(
        self,
        start_encryption_body: bytes | memoryview,
        keys: KeyMap,
        *,
        algorithm: str = "auto",
        key_id: int = SYSTEM_KEY_ID,
        relay_log: bool = False,
    ) -> None:
        if algorithm not in _ALGORITHMS:
            raise ConfigError(f"unknown encryption algorithm {algorithm!r}; use one of {_ALGORITHMS}")
        self.start = parse_start_encryption(start_encryption_body)
        self.key = _pick_key(keys, key_id, self.start.key_version)
        self.algorithm = algorithm
        self.relay_log = relay_log
        self._crypt = _MODES.get(algorithm)

    def iv(self, offset: int) -> bytes:
        """The AES IV of the event that starts at this file offset."""
        return self.start.nonce + struct.pack("<I", offset & _U32_MASK)

    def decrypt_event(self, raw: bytes | memoryview, offset: int) -> bytes:
        """Return the plaintext event (normal header layout + body + CRC) for the raw event."""
        if len(raw) < HEADER_LEN:
            raise TruncatedError(
                f"encrypted event has {len(raw)} bytes, shorter than a header", offset=offset
            )
        (size,) = struct.unpack_from("<I", raw, 9)
        if size != len(raw):
            raise DecodeError(
                f"encrypted event length field says {size} bytes but {len(raw)} were given",
                offset=offset,
            )
        iv = self.iv(offset)
        # Put the cipher bytes stored at 0..4 back where they were encrypted (9..13).
        cipher = bytearray(raw[4:])
        cipher[5:9] = raw[0:4]
        if self._crypt is not None:
            plain = self._crypt(self.key, iv, cipher)
            problem = self._implausible(plain, size, offset)
            if problem:
                raise DecodeError(
                    f"decrypted event is implausible ({problem}); wrong key?",
                    offset=offset,
                    hint="check the key file and file_key_management_encryption_algorithm",
                )
        else:
            plain = self._detect(cipher, iv, size, offset)
        return self._assemble(plain, size)

    def _detect(self, cipher: bytearray, iv: bytes, size: int, offset: int) -> bytes:
        """Try CBC then CTR; keep the first that decrypts to a plausible event."""
        problems = []
        for name in ("aes_cbc", "aes_ctr"):
            plain = _MODES[name](self.key, iv, cipher)
            problem = self._implausible(plain, size, offset)
            if not problem:
                self.algorithm = name
                self._crypt = _MODES[name]
                return plain
            problems.append(f"{name}: {problem}")
        raise DecodeError(
            f"decrypted event is implausible with both AES modes ({'; '.join(problems)}); wrong key?",
            offset=offset,
            hint="check the key file (key id 1) against the server's",
        )

    @staticmethod
    def _assemble(plain: bytes, size: int) -> bytes:
        # plain holds bytes 4..end; its 5..9 are the timestamp moved there by the writer.
        out = bytearray(size)
        out[0:4] = plain[5:9]
        out[4:] = plain
        struct.pack_into("<I", out, 9, size)
        return bytes(out)

    def _implausible(self, plain: bytes, size: int, offset: int) -> str:
        """Why this decryption cannot be a real event (empty if it can)."""
        type_code = plain[0]
        if type_code not in _KNOWN_TYPES or type_code in (0, EventType.FORMAT_DESCRIPTION,
                                                          EventType.MARIADB_START_ENCRYPTION):
            return f"event type {type_code}"
        if not self.relay_log:
            (log_pos,) = struct.unpack_from("<I", plain, 9)  # header 13..17 = plain 9..13
            if log_pos != ((offset + size) & _U32_MASK):
                return f"end position {log_pos}, expected {offset + size}"
        return ""


def _pick_key(keys: KeyMap, key_id: int, key_version: int) -> bytes:
    """The key for (key_id, key_version): an exact (id, version) entry, else id when version 1."""
    by_id: Mapping[Any, bytes] = keys  # (keys by id alone, or by id and version too)
    key = by_id.get((key_id, key_version))
    if key is None:
        key = by_id.get(key_id)
        if key is not None and key_version != 1:
            raise ConfigError(
                f"the binlog was encrypted with version {key_version} of key {key_id}; "
                "file_key_management keys have only version 1",
                hint=f"supply that version's key as keys[({key_id}, {key_version})]",
            )
    if key is None:
        raise ConfigError(f"no key with id {key_id} in the key file (MariaDB encrypts binlogs with key id 1)")
    key = bytes(key)
    if len(key) not in _KEY_LENGTHS:
        raise ConfigError(f"key {key_id} has {len(key)} bytes; AES needs 16, 24 or 32")
    return key
