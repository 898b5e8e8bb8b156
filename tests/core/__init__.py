"""Tests of the core: relu and its ufunc, types and versions, out=, layouts, the kernel's threads
and tuning, concurrency, leaks, bad inputs, fuzzing of the public API, the package itself."""
