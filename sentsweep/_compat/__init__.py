"""The names of Ray and MLflow that sentsweep uses although they are not public API.

One module per library holds each such name behind a small function with a plain name, and nothing else in sentsweep
imports it: :mod:`.ray` and :mod:`.mlflow`. ``tests/test_compat.py`` exercises every one of them, so an upgrade that
renames or removes one fails that test with a message naming it, before a sweep meets it; it also scans the rest of the
package for such names. The modules import their library inside the functions: importing this package loads neither Ray
nor MLflow."""
