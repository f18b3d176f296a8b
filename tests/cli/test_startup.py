"""The CLI's parser loads none of the heavy libraries: ``sentsweep --help`` (and a mistyped flag) answers at once
instead of after importing torch, scipy, scikit-learn, transformers, MLflow and Ray (6.5 s on the 2-core machine)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "scipy", "sklearn", "pandas", "transformers", "mlflow", "ray", "spacy", "optuna")


def test_building_the_parser_and_its_help_load_no_heavy_library() -> None:
    script = (
        "import contextlib, io, json, sys\n"
        "from sentsweep.cli import build_parser\n"
        "parser = build_parser()\n"
        "for argv in (['--help'], ['evaluate', '--help'], ['sweep', '--help'], ['resume', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "        parser.parse_args(argv)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                                       text=True).stdout)
    assert [name for name in HEAVY if name in loaded] == []


def test_reading_runs_back_loads_no_training_library() -> None:
    """``sentsweep compare`` reads MLflow: its modules load neither torch nor Ray (it took 19 s on the demo's
    database, 12 of them importing torch and Ray Tune; 7 s without)."""
    script = (
        "import json, sys\n"
        "import sentsweep.platform.report.compare, sentsweep.platform.report.protocols\n"
        "import sentsweep.platform.tracking.store\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                                       text=True).stdout)
    training = ("torch", "sklearn", "transformers", "ray", "spacy")  # not scipy: MLflow's own imports load it
    assert [name for name in training if name in loaded] == []


def test_the_lazy_packages_still_export_every_name() -> None:
    import importlib

    import sentsweep.evaluation as evaluation
    import sentsweep.evaluation.senteval as senteval

    faces = [importlib.import_module(f"sentsweep.platform.{sub}")
             for sub in ("driver", "search", "confirm", "folder", "tracking", "report")]
    for package in (evaluation, senteval, *faces):
        assert sorted(package.__all__) == sorted(package._WHERE), package.__name__
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"
        assert set(package.__all__) <= set(dir(package))


def test_a_new_sqlite_stores_table_lines_are_quiet(tmp_path, capfd, monkeypatch) -> None:
    """MLflow's "Creating initial MLflow database tables" says nothing a sweep's user acts on."""
    import logging
    import os

    for name in ("RAY_AIR_NEW_OUTPUT", "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "TUNE_PRINT_ALL_TRIAL_ERRORS"):
        monkeypatch.setenv(name, os.environ.get(name, ""))  # restored after the test; the call only sets defaults

    from mlflow import MlflowClient

    from sentsweep.cli.sweeps import _quiet_libraries

    level = logging.getLogger("mlflow.store.db.utils").level
    try:
        _quiet_libraries()
        MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'new.db'}").search_experiments()
    finally:
        logging.getLogger("mlflow.store.db.utils").setLevel(level)
    out, err = capfd.readouterr()
    assert "database tables" not in out + err and (tmp_path / "new.db").is_file()


def test_python_dash_m_runs_the_command_with_its_exit_status() -> None:
    """``python -m sentsweep`` is the ``sentsweep`` command: its help, and exit status 2 for a mistyped command."""
    shown = subprocess.run([sys.executable, "-m", "sentsweep", "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: sentsweep ")
    wrong = subprocess.run([sys.executable, "-m", "sentsweep", "swep"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "invalid choice: 'swep'" in wrong.stderr
