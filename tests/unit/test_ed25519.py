"""client_ed25519 signatures: RFC 8032 Ed25519 with the key derived from SHA-512(password).

For a 32-byte password the derivation is RFC 8032's own (the seed is hashed), so our
signature and public key must equal those of `cryptography`'s Ed25519; for any password the
signature must verify under the public key we derive (which the server stores)."""
from __future__ import annotations

import os

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given, settings, strategies as st

from binlake.protocol import ed25519
from binlake.protocol.auth import ED25519, ClientAuth


@settings(max_examples=20, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32))
def test_equals_rfc8032_for_a_seed_sized_password(seed: bytes, nonce: bytes) -> None:
    key = Ed25519PrivateKey.from_private_bytes(seed)
    pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert ed25519.public_key(seed) == pub
    assert ed25519.sign(seed, nonce) == key.sign(nonce)


@settings(max_examples=20, deadline=None)
@given(st.text(max_size=40), st.binary(min_size=32, max_size=32))
def test_signature_verifies_under_the_derived_key(password: str, nonce: bytes) -> None:
    sig = ed25519.sign(password, nonce)
    assert len(sig) == 64
    Ed25519PublicKey.from_public_bytes(ed25519.public_key(password)).verify(sig, nonce)


def test_client_auth_answers_a_32_byte_nonce_and_refuses_others() -> None:
    nonce = os.urandom(31) + b"\x00"  # a nonce may end in a zero byte: it is not a terminator
    auth = ClientAuth(ED25519, nonce, "pw")
    assert ClientAuth.supports(ED25519)
    assert auth.initial_response() == ed25519.sign("pw", nonce)
    import pytest
    from binlake.errors import ProtocolError

    with pytest.raises(ProtocolError):
        ClientAuth(ED25519, nonce[:20], "pw").initial_response()
