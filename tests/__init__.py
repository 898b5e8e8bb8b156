"""The test suite. A package (as is each layer's folder), so that pytest imports each test file
under its full name (``tests.core.test_fuzz``, ``tests.files.test_fuzz``): files of the same name
in two folders do not clash, and ``tests.support`` is importable from any of them."""
