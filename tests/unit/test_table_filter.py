"""`--tables` patterns: shell patterns over `schema.table`, comma separated."""
from __future__ import annotations

import pytest

from binlake.errors import ConfigError


def test_table_filter_patterns_and_repeated_questions() -> None:
    from binlake.cdc.changes import table_filter

    assert table_filter(None) is None
    f = table_filter("shop.orders, crm.*")
    for _ in range(3):  # answers are remembered per table: the same every time
        assert f("shop", "orders") and f("crm", "anything")
        assert not f("shop", "order") and not f("shopx", "orders") and not f("crmx", "a")
    g = table_filter("shop.t[0-9], shop.[[]x]")  # a set, and a literal '[' written as '[[]'
    assert g("shop", "t1") and g("shop", "[x]") and not g("shop", "tx")


@pytest.mark.parametrize("spec, words", [
    ("", "names no table"), (",,", "names no table"), ("shop.a,,shop.b", "empty entry"),
    ("db", "no dot"), ("[", "not closed"), ("shop.t[0-9", "not closed"), ("a.b.c", "2 dots"),
    ("shop.", "empty table part"), (".t", "empty database part"),
    ("shop.[z-a]", "impossible table part"),
])
def test_a_pattern_that_can_match_nothing_is_refused(spec: str, words: str) -> None:
    from binlake.cdc.changes import table_filter

    with pytest.raises(ConfigError) as info:
        table_filter(spec, "--tables")
    assert words in str(info.value) and f"--tables {spec!r}" in str(info.value)
