"""Change records: rows events become one record per row (changes), prepared XA transactions are
held until decided (xa), the JSON text of values and lines (jsontext), `--tables` patterns
(table_patterns)."""
