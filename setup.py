"""Build hook for the optional C extension (the rest of the metadata lives in pyproject.toml).

``hoibench.formats._colscan`` reads large prediction files straight into numeric columns; it is
optional: where it cannot be compiled (no C compiler, a compiler without 128-bit integers) the
install goes on and hoibench uses its pure-Python path (``hoibench.formats._scan``).
"""

import sys

from setuptools import Extension, setup

# the scanner's second thread (POSIX threads; glibc before 2.34 keeps them in libpthread)
_THREADS = [] if sys.platform == "win32" else ["-pthread"]

setup(ext_modules=[Extension("hoibench.formats._colscan", ["src/hoibench/formats/_colscan.c"],
                             optional=True, extra_compile_args=["-O3", *_THREADS], extra_link_args=_THREADS)])
