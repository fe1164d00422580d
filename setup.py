"""Build the optional C core; binlake falls back to pure Python if it cannot be built."""
import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "binlake._speedups._core",
            # module.c and the units by concern (their headers: see module.c)
            sorted(glob.glob("src/binlake/_speedups/*.c")),
            depends=sorted(glob.glob("src/binlake/_speedups/*.h")),
            # only PyInit__core is exported; the units' shared functions stay inside
            extra_compile_args=["-O2", "-fvisibility=hidden"],
            optional=True,
        )
    ]
)
