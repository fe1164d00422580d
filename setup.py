"""Build the optional C row decoder; binlake falls back to pure Python if it cannot be built."""
import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "binlake.binlog.columns._speedups",
            # the module (which includes the speedups/*.h parts) and the units of their own
            ["src/binlake/binlog/columns/_speedups.c",
             *sorted(glob.glob("src/binlake/binlog/columns/speedups/*.c"))],
            depends=sorted(glob.glob("src/binlake/binlog/columns/speedups/*.h")),
            # only PyInit__speedups is exported; the units' shared functions stay inside
            extra_compile_args=["-O2", "-fvisibility=hidden"],
            optional=True,
        )
    ]
)
