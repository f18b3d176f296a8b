"""The bundled sample is exactly what make_sample writes from the shared data (so it is up to date)."""

from __future__ import annotations

from pathlib import Path

from sentsweep.data import DataSource
from sentsweep.data.make_sample import main


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_make_sample_reproduces_the_bundled_sample(
    shared_data: DataSource, sample: DataSource, tmp_path: Path
) -> None:
    main([str(shared_data.root), "--out", str(tmp_path)])
    made, bundled = _files(tmp_path), _files(sample.root)
    assert sorted(made) == sorted(bundled)
    assert [name for name in made if made[name] != bundled[name]] == []
