"""Row image values (their JSON text) -> Arrow columns of a Delta column's type, in the driver.

The same conversion as Spark's `typed_value` (`spark/typing.py`) for the values a driver-held
batch folds (`cdc.net.foldable`: no geometry or vector columns): integers, BIT and YEAR,
DECIMAL, FLOAT/DOUBLE, dates and times (ISO text), base64 binary, and text as it is. Arrow's
casts parse these texts exactly as Spark's do. A value Arrow cannot cast (a zero date, an
invalid one, a decimal with more digits than its scale) raises `Untyped`: the caller then
hands the batch to Spark, whose rules (the zero-dates policy) decide, so no value is typed
here in a way Spark would not.
"""
from __future__ import annotations

import binascii

import pyarrow as pa
import pyarrow.compute as pc


class Untyped(Exception):
    """A column has a value the driver does not type (the message says which column)."""


def typed_column(texts: pa.Array | pa.ChunkedArray, target: pa.DataType, *, binary: bool,
                 name: str) -> pa.Array | pa.ChunkedArray:
    """`texts` (strings or nulls) as `target` values. `binary`: the texts are base64 (a
    BINARY/BLOB column), decoded to bytes."""
    if binary:
        if not pa.types.is_binary(target):
            raise Untyped(f"column {name}: binary text into {target}")
        return pa.array([None if v is None else _unbase64(v, name)
                         for v in texts.to_pylist()], pa.binary())
    if pa.types.is_string(target):
        return texts if texts.type == pa.string() else pc.cast(texts, pa.string())
    if not (pa.types.is_integer(target) or pa.types.is_floating(target)
            or pa.types.is_decimal(target) or pa.types.is_date32(target)
            or pa.types.is_timestamp(target)):
        raise Untyped(f"column {name}: no driver typing into {target}")
    try:
        return pc.cast(texts, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise Untyped(f"column {name}: {exc}") from None


def _unbase64(text: str, name: str) -> bytes:
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error as exc:
        raise Untyped(f"column {name}: {exc}") from None
