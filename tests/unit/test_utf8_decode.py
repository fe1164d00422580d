"""The C UTF-8 decoder (AVX-512 or AVX2 where the CPU has it) must be CPython's decoder, faster.

CPython is the reference: for any bytes, valid or not, both give the same str (of the same
kind: str equality compares kinds, so a non-canonical UCS2/UCS4 result would not be equal)
or the same UnicodeDecodeError. Window edges (8, 32 and 64 bytes, the 48-byte scalar tail)
and the short-string cut-over are where a vector decoder goes wrong, so the lengths drawn
cluster around them. Every test runs once per vector level this CPU has (and without).
"""
from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

speedups = pytest.importorskip("binlake._speedups._core")

from simd import levels, simd_level  # noqa: E402,F401  (tests/unit is on sys.path)


@pytest.fixture(autouse=True)
def _every_level(simd_level: str) -> str:  # noqa: F811  (the fixture, imported above)
    """Each test below runs once per vector level (simd.py's fixture)."""
    return simd_level


# (the level fixture only sets which code runs: the same for every example)
_SETTINGS = {"suppress_health_check": [HealthCheck.function_scoped_fixture], "deadline": None}

ALPHABETS = ["abc xyz019", "éàüßøÅñç\x80\xff", "€你好世界ſĀ\u07ff\u0800", "😀🚀\U0010FFFF\U00010000",
             "\ud7ff\ue000\uffff\x7f\x00"]
INVALID = [b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xe0\x9f\xbf",
           b"\xf0\x80\x80\xaf", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
           b"\xf8\x88\x80\x80\x80", b"\xf8\x90\x80\x80", b"\xff", b"\x80", b"\xbf\xbf\xbf\xbf\xbf",
           b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3"]


def outcome(fn, data: bytes) -> tuple[str, object]:
    try:
        return "ok", fn(data)
    except UnicodeDecodeError as e:
        return "error", (e.start, e.end, e.reason)


def same_as_cpython(data: bytes) -> None:
    assert outcome(speedups.utf8_decode, data) == outcome(lambda b: b.decode("utf-8"), data)


def text(rng: random.Random, n: int) -> str:
    chars = "".join(rng.sample(ALPHABETS, rng.randint(1, len(ALPHABETS))))
    return "".join(rng.choice(chars) for _ in range(n))


@pytest.mark.parametrize("seed", range(4))
def test_valid_text_of_every_length_near_the_window_edges(seed: int) -> None:
    rng = random.Random(seed)
    for n in [*range(0, 140), 191, 192, 193, 255, 256, 257, 1000, 5000, 16_000]:
        s = text(rng, n)
        got = speedups.utf8_decode(s.encode())
        assert got == s and type(got) is str


@pytest.mark.parametrize("seed", range(4))
def test_every_kind_of_invalid_sequence_anywhere(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(400):
        data = bytearray(text(rng, rng.randint(0, 300)).encode())
        at = rng.randint(0, len(data))
        data[at:at] = rng.choice(INVALID)
        same_as_cpython(bytes(data))


def test_lone_and_misplaced_continuation_bytes() -> None:
    base = ("x" * 70 + "é" * 30 + "😀" * 20).encode()
    for at in range(0, len(base), 3):
        same_as_cpython(base[:at] + b"\x80" + base[at:])
        same_as_cpython(base[at:])  # may start inside a character
        same_as_cpython(base[:at])  # may end inside a character


@settings(max_examples=300, **_SETTINGS)
@given(st.binary(min_size=40, max_size=400))
def test_arbitrary_bytes(data: bytes) -> None:
    same_as_cpython(data)


@settings(max_examples=300, **_SETTINGS)
@given(st.text(min_size=40, max_size=400), st.integers(0, 399), st.integers(0, 255))
def test_text_with_one_byte_changed(s: str, where: int, byte: int) -> None:
    data = bytearray(s.encode())
    data[where % len(data)] = byte
    same_as_cpython(bytes(data))


def test_simd_path_is_on_where_the_cpu_has_it() -> None:
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(f.read().split())
    except OSError:
        pytest.skip("no /proc/cpuinfo")
    best = ("avx512" if {"avx512bw", "avx512vl", "avx512vbmi", "avx512_vbmi2", "bmi2"} <= flags
            else "avx2" if "avx2" in flags else "off")
    assert levels()[-1] == best
    # what a fresh load chooses, BINLAKE_SIMD applied (this process's level is the fixture's)
    setting = os.environ.get("BINLAKE_SIMD")
    expected = "off" if setting == "0" else "avx2" if setting == "avx2" and best == "avx512" else best
    code = "from binlake._speedups.native import c_module as s; print(s.utf8_simd())"
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == expected


def test_a_level_the_cpu_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError):
        speedups.utf8_set_simd("sse9")
    if "avx512" not in levels():
        with pytest.raises(ValueError, match="does not have"):
            speedups.utf8_set_simd("avx512")


@settings(max_examples=400, **_SETTINGS)
@given(st.one_of(st.binary(min_size=0, max_size=300),
                 st.text(min_size=0, max_size=300).map(lambda s: s.encode()),
                 st.tuples(st.text(min_size=30, max_size=300), st.sampled_from(INVALID),
                           st.integers(0, 10_000)).map(
                     lambda t: (lambda b, bad, at: b[:at % (len(b) + 1)] + bad + b[at % (len(b) + 1):])(
                         t[0].encode(), t[1], t[2]))))
def test_json_writer_utf8_check_agrees_with_cpython(data: bytes) -> None:
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert speedups.utf8_check(data) is valid


def valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("seed", range(3))
def test_utf8_check_finds_every_invalid_sequence_at_every_block_edge(seed: int) -> None:
    """The 64-byte-block validator looks up to three bytes back across a block edge and
    checks the end for an unfinished character: each invalid form at each offset around
    the edges (and at the end), and each valid text cut at every length."""
    rng = random.Random(300 + seed)
    for bad in INVALID:
        for at in [*range(40, 70), *range(120, 134), 190, 191, 192]:
            data = text(rng, 200).encode()
            data = data[:at] + bad + data[at:]
            assert speedups.utf8_check(data) is valid_utf8(data), (bad, at)
            assert speedups.utf8_check(data[:at + len(bad)]) is valid_utf8(data[:at + len(bad)])
    whole = text(rng, 150).encode()
    for n in range(len(whole) + 1):
        assert speedups.utf8_check(whole[:n]) is valid_utf8(whole[:n]), n
        assert speedups.utf8_check(whole[n:]) is valid_utf8(whole[n:]), n


@settings(max_examples=400, **_SETTINGS)
@given(st.text(min_size=48, max_size=400), st.integers(0, 399), st.integers(128, 255))
def test_utf8_check_with_one_byte_changed(s: str, where: int, byte: int) -> None:
    data = bytearray(s.encode())
    data[where % len(data)] = byte
    assert speedups.utf8_check(bytes(data)) is valid_utf8(bytes(data))


# -- the one-pass path: a column's guess of its next str's kind ----------------------------
# Texts of 512 bytes or more with a guess (1, 2 or 4) are converted into a str of that kind
# and checked in the same pass (AVX-512 only); the result must still be CPython's str (of
# the canonical kind: str equality compares kinds) or CPython's error, whatever the guess:
# right, too wide (narrowed after), too narrow (characters cut, converted again) or none.

GUESSES = (0, 1, 2, 4)


def canonical_outcome(fn, data: bytes) -> tuple[str, object]:
    """outcome(), with the str's size: a str of the same text but not the canonical kind
    (Latin-1 where ASCII would do, UCS-2 where Latin-1 would) differs in it."""
    what, value = outcome(fn, data)
    return (what, (value, sys.getsizeof(value))) if what == "ok" else (what, value)


def same_as_cpython_guessing(data: bytes) -> None:
    want = canonical_outcome(lambda b: b.decode("utf-8"), data)
    for guess in GUESSES:
        assert canonical_outcome(lambda b: speedups.utf8_decode(b, guess), data) == want, guess


# One alphabet per canonical kind: ASCII, Latin-1, UCS-2 from 2-byte and from 3-byte
# sequences, UCS-4.
KIND_ALPHABETS = ["abc xyz019", "abcéàüß\xff", "abcĀſ\u07ff", "abc€你\uffff", "abc😀\U0010ffff"]


@pytest.mark.parametrize("seed", range(3))
def test_guessed_valid_text_of_every_kind_and_length(seed: int) -> None:
    """Every guess against text of every kind, around the one-pass threshold and the 64-byte
    windows, which advance by whole characters."""
    rng = random.Random(400 + seed)
    for n in [*range(120, 200), 255, 256, 257, 500, 511, 512, 513, 1000, 4097, 20_000]:
        s = text(rng, n)
        for guess in GUESSES:
            got = speedups.utf8_decode(s.encode(), guess)
            assert got == s and type(got) is str, (n, guess)
    for alphabet in KIND_ALPHABETS:  # each kind alone, after each guess
        for n in (511, 512, 700, 3000):
            same_as_cpython_guessing("".join(rng.choice(alphabet) for _ in range(n)).encode())


def test_a_guess_that_is_not_a_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        speedups.utf8_decode(b"abc", 3)


def _boundaries(s: str) -> list[int]:
    """The byte offset of each character of s encoded."""
    out, at = [], 0
    for ch in s:
        out.append(at)
        at += len(ch.encode())
    return out


@pytest.mark.parametrize("bad", INVALID, ids=[b.hex() for b in INVALID])
def test_guessed_text_with_an_invalid_sequence_at_every_offset(bad: bytes) -> None:
    """The one-pass check looks at each window as if ASCII came before it and at the last
    one for an unfinished character: each invalid form after every character of a stretch
    longer than several windows, inside the text and at its very end."""
    rng = random.Random(bad[0])
    s = text(rng, 900)
    data = s.encode()
    for at in _boundaries(s)[300:700]:
        same_as_cpython_guessing(data[:at] + bad + data[at:])
        if at >= 512:
            same_as_cpython_guessing(data[:at] + bad)


@pytest.mark.parametrize("seed", range(3))
def test_guessed_text_cut_anywhere(seed: int) -> None:
    rng = random.Random(500 + seed)
    whole = (text(rng, 300) + "😀" + text(rng, 300)).encode()
    for n in range(512, len(whole) + 1):
        same_as_cpython_guessing(whole[:n])  # may end inside a character
        same_as_cpython_guessing(whole[len(whole) - n:])  # may start inside one


@settings(max_examples=300, **_SETTINGS)
@given(st.text(min_size=520, max_size=3000), st.integers(0, 10**6), st.integers(0, 255))
def test_guessed_text_with_one_byte_changed(s: str, where: int, byte: int) -> None:
    data = bytearray(s.encode())
    data[where % len(data)] = byte
    same_as_cpython_guessing(bytes(data))


@settings(max_examples=200, **_SETTINGS)
@given(st.binary(min_size=512, max_size=2000))
def test_guessed_arbitrary_bytes(data: bytes) -> None:
    same_as_cpython_guessing(data)
