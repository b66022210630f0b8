"""Build hook for the optional C extensions (the rest of the metadata lives in pyproject.toml).

``hoibench.formats._colscan`` reads large prediction files straight into numeric columns, and
``hoibench._pcg64`` computes the seeded choice order of every multiple-choice question; both are
optional: where one cannot be compiled (no C compiler, a compiler without 128-bit integers) the
install goes on and hoibench uses its pure-Python paths (``hoibench.formats._scan``,
``hoibench._random``).
"""

import sys

from setuptools import Extension, setup

# the scanner's second thread (POSIX threads; glibc before 2.34 keeps them in libpthread)
_THREADS = [] if sys.platform == "win32" else ["-pthread"]

setup(ext_modules=[Extension("hoibench.formats._colscan", ["src/hoibench/formats/_colscan.c"],
                             optional=True, extra_compile_args=["-O3", *_THREADS], extra_link_args=_THREADS),
                   Extension("hoibench._pcg64", ["src/hoibench/_pcg64.c"],
                             optional=True, extra_compile_args=["-O3"])])
