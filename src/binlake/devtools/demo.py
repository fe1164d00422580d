"""A small sample shop database for the quickstart: a few tables of typical types, rows to
snapshot, and a round of changes (insert, update incl. a key change, delete, ALTER, TRUNCATE)
that the Delta tables must then catch up with."""
from __future__ import annotations

import random
from typing import Any

SCHEMA = "shop"

CREATE = [
    f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.customers (
        id INT PRIMARY KEY, name VARCHAR(80) NOT NULL, email VARCHAR(120),
        country CHAR(2), created DATETIME(3) NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.products (
        sku VARCHAR(16) PRIMARY KEY, title VARCHAR(200) NOT NULL, price DECIMAL(10,2) NOT NULL,
        stock INT UNSIGNED NOT NULL, kind ENUM('book','game','tool') NOT NULL, attrs JSON)""",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.orders (
        id BIGINT PRIMARY KEY, customer_id INT NOT NULL, sku VARCHAR(16) NOT NULL,
        qty SMALLINT NOT NULL, total DECIMAL(12,2) NOT NULL, placed TIMESTAMP(6) NOT NULL,
        status ENUM('new','paid','shipped','cancelled') NOT NULL DEFAULT 'new')""",
]


def load_statements(seed: int = 7, customers: int = 40, products: int = 25, orders: int = 120
                    ) -> list[str]:
    """Deterministic INSERTs for the initial state."""
    rnd = random.Random(seed)
    out = list(CREATE)
    rows = []
    for i in range(1, customers + 1):
        rows.append(f"({i}, 'Customer {i}', 'c{i}@example.com', '{rnd.choice(['DE', 'FR', 'US', 'JP'])}', "
                    f"'2024-01-{1 + i % 28:02d} 10:{i % 60:02d}:00.{i:03d}')")
    out.append(f"INSERT INTO {SCHEMA}.customers VALUES " + ",".join(rows))
    rows = []
    for i in range(1, products + 1):
        rows.append(f"('SKU-{i:04d}', 'Product {i}', {rnd.randint(100, 99999) / 100:.2f}, "
                    f"{rnd.randint(0, 500)}, '{rnd.choice(['book', 'game', 'tool'])}', "
                    f"'{{\"color\": \"{rnd.choice(['red', 'blue'])}\", \"tags\": [{i}]}}')")
    out.append(f"INSERT INTO {SCHEMA}.products VALUES " + ",".join(rows))
    rows = []
    for i in range(1, orders + 1):
        qty = rnd.randint(1, 5)
        rows.append(f"({i}, {rnd.randint(1, customers)}, 'SKU-{rnd.randint(1, products):04d}', {qty}, "
                    f"{qty * rnd.randint(100, 9999) / 100:.2f}, '2024-03-{1 + i % 28:02d} 12:00:00.{i:06d}', "
                    f"'{rnd.choice(['new', 'paid', 'shipped'])}')")
    out.append(f"INSERT INTO {SCHEMA}.orders VALUES " + ",".join(rows))
    return out


def change_statements(round_no: int) -> list[str]:
    """One round of changes; `round_no` keeps new keys unique when the demo runs again."""
    new_id = 1000 + round_no
    moved = 2000 + round_no
    return [
        f"INSERT INTO {SCHEMA}.customers (id, name, email, country, created) "
        f"VALUES ({new_id}, 'Ada {round_no}', 'ada{round_no}@example.com', 'GB', NOW(3))",
        f"UPDATE {SCHEMA}.products SET price = price + 1.25, stock = GREATEST(stock, 1) - 1 "
        "WHERE kind = 'book'",
        # a primary-key change: the row moves to a new key
        f"UPDATE {SCHEMA}.customers SET id = {moved} WHERE id = (SELECT MIN(id) FROM "
        f"(SELECT id FROM {SCHEMA}.customers WHERE id < 1000) AS x)",
        f"DELETE FROM {SCHEMA}.orders WHERE id % 10 = {round_no % 10}",
        f"UPDATE {SCHEMA}.orders SET status = 'shipped' WHERE status = 'paid'",
        f"INSERT INTO {SCHEMA}.orders (id, customer_id, sku, qty, total, placed) VALUES "
        f"({100000 + round_no}, {new_id}, 'SKU-0001', 2, 19.98, NOW(6))",
    ]


def table_counts(conn: Any) -> dict[str, int]:
    with conn.cursor() as cur:
        out = {}
        for table in ("customers", "products", "orders"):
            cur.execute(f"SELECT COUNT(*) FROM {SCHEMA}.{table}")
            out[table] = int(cur.fetchone()[0])
        return out
