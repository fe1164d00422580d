"""binlake sync prints a binlake error raised inside a Spark task as its one line."""
from __future__ import annotations

from binlake.spark.cli import spark_error_line

WRAPPED = """pyspark.errors.exceptions.captured.PythonException: An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/x/binlake/spark/snapshot.py", line 172, in read
    res = read_chunk(self.url, c, server_id=self.server_id_base + c.ordinal)
binlake.snapshot.server.SnapshotError: shop.t: the table changed shape (run the snapshot again)
"""


def test_the_binlake_line_is_taken_from_a_spark_traceback() -> None:
    assert spark_error_line(Exception(WRAPPED)) == "shop.t: the table changed shape (run the snapshot again)"


def test_the_last_binlake_error_wins_and_others_are_not_taken() -> None:
    text = WRAPPED + "\nbinlake.replica.position.PositionUnavailable: gone at f.000002:4\n"
    assert spark_error_line(Exception(text)) == "gone at f.000002:4"
    assert spark_error_line(Exception("py4j.protocol.Py4JJavaError: ValueError: boom")) is None
    assert spark_error_line(Exception("binlake is fine\nValueError: boom")) is None
