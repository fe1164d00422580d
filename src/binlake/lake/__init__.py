"""Delta tables written without Spark (delta-rs), for the steps a local sync can take alone:
the first snapshot's new tables (`write`), and each batch's net MERGE and tombstones
(`merge`, with the values typed by `values`)."""
from .write import LakeWriteError, write_new_table

__all__ = ["LakeWriteError", "write_new_table"]
