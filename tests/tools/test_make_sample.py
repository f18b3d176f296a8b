"""The bundled sample is exactly what tools/make_sample.py writes from the shared data (so it is up to date)."""

from __future__ import annotations

from pathlib import Path

from sentsweep.data.source import SAMPLE_DIR, resolve_data_dir
from tools.make_sample import main


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_make_sample_reproduces_the_bundled_sample(shared_data: Path, tmp_path: Path) -> None:
    main([str(shared_data), "--out", str(tmp_path)])
    made, bundled = _files(tmp_path), _files(resolve_data_dir(SAMPLE_DIR).root)
    assert sorted(made) == sorted(bundled)
    assert [name for name in made if made[name] != bundled[name]] == []
