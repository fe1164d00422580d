"""Dataclass instances made without running __init__, for objects built once per event.

A frozen slots dataclass's __init__ sets each field through object.__setattr__; for the
event header and the rows event that costs more than decoding a small event. The C
extension's SlotMaker allocates the instance and fills its slots directly (every slot, in
field order, checked when the maker is built); without the extension the class itself is
called, with the same result.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from .._speedups.native import switches


def slot_maker(cls: type) -> Callable[..., Any]:
    """A callable taking every field of the dataclass `cls` positionally, in field order."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    c = switches.c
    if c is not None and not any(f.init is False for f in dataclasses.fields(cls)) \
            and not hasattr(cls, "__post_init__"):
        maker: Callable[..., Any] = c.SlotMaker(cls, names)
        return maker

    def make(*values: Any) -> Any:
        return cls(**dict(zip(names, values)))

    return make
