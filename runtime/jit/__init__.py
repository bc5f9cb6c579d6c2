"""Compiling and caching the runtime's Numba code: disk caches keyed on the sources a kernel compiles in, source hashing, lazy address cells, scratch arrays, the package's warning class."""
