"""The names of Ray and MLflow that sentsweep uses although they are not public API, each behind a small function in
:mod:`.ray` or :mod:`.mlflow`, which import their library inside the functions. ``tests/test_compat.py`` exercises
every one of them, so an upgrade that renames or removes one fails there, and scans the package for others."""
