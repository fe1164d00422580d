"""Delta tables written without Spark (delta-rs), for the steps a local sync can take alone."""
from .write import LakeWriteError, write_new_table

__all__ = ["LakeWriteError", "write_new_table"]
