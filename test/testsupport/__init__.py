"""Helpers shared by the test suite, `make bench` and `make soak`: polling with a deadline,
the repository's paths, the project's wheel, canned HTTP answers, and the harnesses that
start the simulators and the operator (in process, as in `test/integration/controller/`,
or as processes, as in `test/e2e/` and the soak).

Importable as `testsupport` because pytest puts `test/` on `sys.path` (`pythonpath` in
pyproject.toml's [tool.pytest.ini_options]) and the Makefile runs the bench and the soak with
`PYTHONPATH=test`. `test/` itself is not a package: it would shadow the standard library's
`test`. Fixtures stay in the conftest.py files; what a test module imports lives here.
"""
