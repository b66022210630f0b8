"""Build hook for the optional C scanner (the rest of the metadata lives in pyproject.toml).

``hoibench.formats._colscan`` reads large prediction files straight into numeric columns; it is
optional: where it cannot be compiled (no C compiler, a compiler without 128-bit integers) the
install goes on and the readers use their pure-Python paths (``hoibench.formats._scan``).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("hoibench.formats._colscan", ["src/hoibench/formats/_colscan.c"],
                             optional=True, extra_compile_args=["-O3"])])
