"""`--tables` patterns: shell patterns over `schema.table`, comma separated."""
from __future__ import annotations


def test_table_filter_patterns_and_repeated_questions() -> None:
    from binlake.changes import table_filter

    assert table_filter(None) is None and table_filter("") is None
    f = table_filter("shop.orders, crm.*")
    for _ in range(3):  # answers are remembered per table: the same every time
        assert f("shop", "orders") and f("crm", "anything")
        assert not f("shop", "order") and not f("shopx", "orders") and not f("crmx", "a")
