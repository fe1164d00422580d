"""Build the optional C row decoder; binlake falls back to pure Python if it cannot be built."""
import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "binlake.binlog.columns._speedups",
            ["src/binlake/binlog/columns/_speedups.c"],
            depends=sorted(glob.glob("src/binlake/binlog/columns/speedups/*.h")),
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
