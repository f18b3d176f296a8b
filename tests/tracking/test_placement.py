"""Placement tags: none outside Ray; inside a Ray task, the node and Ray's (logical) GPU ids, which a trial reports
in its run record (the driver sets them on its run) and ``compare`` shows per trial."""

from __future__ import annotations

from mlflow.entities import Run, RunData, RunInfo, RunTag

from sentsweep.platform.report.compare import trial_rows
from sentsweep.tracking.names import GPU_IDS_TAG, NODE_ID_TAG, NODE_IP_TAG, placement_label, placement_tags
from sentsweep.trainables.cosent import COSENT
from sentsweep.trainables.run_record import RunRecord


def _run(tags: dict[str, str]) -> Run:
    info = RunInfo(run_id="r", experiment_id="0", user_id="u", status="FINISHED", start_time=0, end_time=1,
                   lifecycle_stage="active")
    return Run(info, RunData(tags=[RunTag(k, v) for k, v in tags.items()]))


def test_no_placement_outside_ray_and_no_tags_reported_for_it(tiny_bert_dir) -> None:
    assert placement_tags() == {}
    config = COSENT.parse({"model": str(tiny_bert_dir), "device": "cpu"})
    record = RunRecord.for_trial("cosent", config).additions({}, {})
    assert not {NODE_IP_TAG, NODE_ID_TAG, GPU_IDS_TAG} & set(record["sentsweep_run"]["tags"])


def test_compare_shows_the_node_and_gpu_of_each_trial() -> None:
    sweep = _run({})
    placed = _run({NODE_ID_TAG: "4bf38495f7ed659de8fefbd1", NODE_IP_TAG: "10.0.0.7", GPU_IDS_TAG: "1"})
    cpu_only = _run({NODE_ID_TAG: "74e9351b9eb1", NODE_IP_TAG: "10.0.0.8", GPU_IDS_TAG: ""})
    rows = trial_rows(sweep, [placed, cpu_only, _run({})], [])
    assert [row["placement"] for row in rows] == ["4bf38495@10.0.0.7 gpu 1", "74e9351b@10.0.0.8", ""]
    assert placement_label({NODE_ID_TAG: "abcdefghij", GPU_IDS_TAG: "0,1"}) == "abcdefgh@? gpu 0,1"


def test_inside_ray_the_node_and_gpu_ids(ray_session: None) -> None:
    import ray

    tags = ray.get(ray.remote(num_cpus=1)(placement_tags).remote())
    assert tags[NODE_ID_TAG] == ray.get_runtime_context().get_node_id()
    assert tags[NODE_IP_TAG] and tags[GPU_IDS_TAG] == ""  # the session's Ray has no GPU
