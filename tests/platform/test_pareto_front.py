"""The Pareto front recorded and read back: the plot (a PNG and its CSV, every finished trial with ``on_front``,
for two and three objectives) and ``compare``'s table of it."""

from __future__ import annotations

import csv

from sentsweep.platform.objectives import parse_objective
from sentsweep.platform.report import winner
from sentsweep.platform.report.plots import TrialRecord, save_plot
from sentsweep.platform.report.winner import front_rows, pareto_plot


def _trials(n: int = 12) -> list[TrialRecord]:
    """A quality/cost trade-off: dearer trials are better, with some dominated ones."""
    trials = []
    for i in range(n):
        seconds = 20.0 + 7.0 * i
        dev = 70.0 + 8.0 * (1 - 0.93 ** i) - (3.0 if i % 3 == 1 else 0.0)
        trials.append(TrialRecord(f"train_toy_3f0c_{i:05d}", "finished", {"lr": 1e-4 * (i + 1)}, metrics={
            "stsb_dev": dev, "time_total_s": seconds, "gpus": 0.0, "sickr_trial": 60.0 + i % 4}))
    return trials


def test_two_objectives_png_and_csv(tmp_path):
    objectives = [parse_objective("stsb_dev max"), parse_objective("compute_seconds min")]
    rows = front_rows(_trials(), objectives)
    png, table = pareto_plot(rows, objectives, tmp_path)
    assert png.name == "pareto_front.png" and png.stat().st_size > 10_000
    written = list(csv.DictReader(table.open()))
    assert len(written) == 12 and list(written[0])[:4] == ["trial_id", "stsb_dev", "compute_seconds", "on_front"]
    assert sum(r["on_front"] == "1" for r in written) == 8  # every third-from-one trial is dominated


def test_three_objectives_draw_the_first_two(tmp_path, monkeypatch):
    """The points are (second objective, first objective), the title names all three, the CSV holds all three."""
    objectives = [parse_objective(t) for t in ("stsb_dev max", "compute_seconds min", "gpu_seconds min")]
    rows = front_rows(_trials(5), objectives)
    drawn = []

    def saved(figure, plotted, out_dir, name):  # the figure as pareto_plot hands it to be written
        (ax,) = figure.axes
        points = {tuple(map(float, xy)) for collection in ax.collections for xy in collection.get_offsets()}
        drawn.append((ax.get_xlabel(), ax.get_ylabel(), ax.get_title(), points))
        return save_plot(figure, plotted, out_dir, name)

    monkeypatch.setattr(winner, "save_plot", saved)
    png, table = pareto_plot(rows, objectives, tmp_path, "front3")
    ((xlabel, ylabel, title, points),) = drawn
    assert (xlabel, ylabel) == (objectives[1].label, objectives[0].label)
    assert points == {(r["compute_seconds"], r["stsb_dev"]) for r in rows} and len(points) == 5
    assert "stsb_dev, compute_seconds, gpu_seconds; the first two drawn" in title
    assert png.stat().st_size > 10_000
    written = list(csv.DictReader(table.open()))
    assert len(written) == 5 and list(written[0])[:5] == ["trial_id", "stsb_dev", "compute_seconds", "gpu_seconds",
                                                          "on_front"]


def test_compare_lists_the_front_from_the_parent_run(tmp_path, tracking_uri):
    """A sweep's parent run as :func:`~sentsweep.platform.report.winner.record_front` leaves it (real MLflow
    store):
    ``compare`` lists the front from its CSV, or only the ids while the CSV is not there."""
    from mlflow import MlflowClient

    from sentsweep.platform.report.compare import compare, render
    from sentsweep.tracking.vocabulary import OBJECTIVES_TAG, PARETO_ARTIFACTS, PARETO_TAG, ROLE_TAG, SWEEP_TAG

    objectives = [parse_objective("stsb_dev max"), parse_objective("compute_seconds min")]
    rows = front_rows(_trials(6), objectives)
    front = [r["trial_id"] for r in rows if r["on_front"]]
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("moo", artifact_location=(tmp_path / "artifacts").as_uri())
    runs = {}
    for name, with_csv in (("moo-a", True), ("moo-b", False)):
        run = client.create_run(experiment, tags={ROLE_TAG: "sweep", SWEEP_TAG: name, PARETO_TAG: ",".join(front),
                                                  OBJECTIVES_TAG: "stsb_dev max; compute_seconds min"})
        if with_csv:
            pareto_plot(rows, objectives, tmp_path / name)
            client.log_artifacts(run.info.run_id, str(tmp_path / name), PARETO_ARTIFACTS)
        runs[name] = run.info.run_id
    client.create_run(experiment, tags={ROLE_TAG: "sweep", SWEEP_TAG: "single"})  # no front: no rows
    sweeps, trials = compare(client, ["moo"])
    listed = sweeps.attrs["pareto"]
    a, b = listed[listed["sweep"] == "moo-a"], listed[listed["sweep"] == "moo-b"]
    assert list(a["trial"]) == front and list(b["trial"]) == front and set(listed["sweep"]) == {"moo-a", "moo-b"}
    assert list(a["stsb_dev"]) == [r["stsb_dev"] for r in rows if r["on_front"]]
    assert b["stsb_dev"].isna().all()  # the CSV not uploaded (yet): the ids alone
    text = render(sweeps, trials)
    assert "## Pareto front" in text and front[0] in text.split("## Pareto front")[1]
