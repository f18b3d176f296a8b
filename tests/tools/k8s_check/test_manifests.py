"""The Kubernetes manifests (k8s/), rendered with kubectl and validated offline; planted mistakes must be caught.

Planted mistakes are made in a copy of k8s/ and go through the whole pipeline (render, schema, policy,
entrypoint); each test checks that exactly the planted problem appears.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentsweep.platform.config import parse_sweep_config
from tools import k8s_check
from tools.k8s_check.entrypoint import driver_groups
from tools.k8s_check.objects import format_bytes, pod_specs, quantity
from tools.k8s_check.policy import project_ray_version
from tools.k8s_check.scheduling import SPOT_LABELS, runs_on_spot, spot_labels_allowed
from tools.k8s_check.sizing import surge_pods
from tools.k8s_check.tracking_hosts import allowed_hosts, host_part

REPO = Path(__file__).resolve().parents[3]
K8S = REPO / "k8s"
#: platform kustomization -> its sweep's
PAIRS = {"overlays/local": "overlays/local/sweep", "overlays/gpu": "overlays/gpu/sweep",
         "overlays/gpu-spot": "overlays/gpu-spot/sweep", "examples/team": "examples/team/sweep"}
#: platform kustomization -> the kustomization of its namespace and guard rails (a cluster admin's)
NAMESPACES = {"overlays/local": "namespace", "overlays/gpu": "namespace", "overlays/gpu-spot": "namespace",
              "examples/team": "examples/team/namespace"}
KUSTOMIZATIONS = tuple({p: None for pair in [*PAIRS.items(), *NAMESPACES.items()] for p in pair})


@pytest.fixture(scope="module")
def rendered() -> dict[str, k8s_check.Rendered]:
    return {path: k8s_check.render(K8S / path) for path in KUSTOMIZATIONS}


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


@pytest.mark.parametrize("overlay", sorted(PAIRS))
def test_every_object_of_the_overlay_validates(overlay: str, rendered: dict[str, k8s_check.Rendered]) -> None:
    platform, sweep, namespace = rendered[overlay], rendered[PAIRS[overlay]], rendered[NAMESPACES[overlay]]
    assert platform.objects and sweep.objects  # the counts per kind: test_kubectl.py
    problems = k8s_check.validate_objects(namespace.objects + platform.objects + sweep.objects)
    assert [str(p) for p in problems] == []


@pytest.mark.parametrize("overlay", sorted(PAIRS))
def test_the_rayjob_cluster_is_the_raycluster(overlay: str, rendered: dict[str, k8s_check.Rendered]) -> None:
    """k8s/sweep/rayjob.yaml repeats k8s/base/raycluster.yaml (and the overlays their patches): only the
    configs mount on the head and on the cpu group (where the driver runs) may differ."""
    cluster = _one(rendered[overlay].objects, "RayCluster")["spec"]
    job = json.loads(json.dumps(_one(rendered[PAIRS[overlay]].objects, "RayJob")))
    spec = job["spec"]["rayClusterSpec"]
    for group in [spec["headGroupSpec"]] + [g for g in spec["workerGroupSpecs"] if g["groupName"] == "cpu"]:
        pod = group["template"]["spec"]
        assert [v["name"] for v in pod["volumes"]][-1] == "configs"
        pod["volumes"].pop()
        assert pod["containers"][0]["volumeMounts"].pop()["mountPath"] == "/configs"
    assert spec == cluster


@pytest.mark.parametrize("overlay", sorted(PAIRS))
def test_every_group_that_can_run_the_driver_mounts_the_configs(overlay: str,
                                                                rendered: dict[str, k8s_check.Rendered]) -> None:
    """The driver (`sentsweep sweep /configs/...`) runs on a worker of a group offering entrypointResources:
    that group mounts the generated ConfigMap (kustomizeconfig.yaml rewrites its hashed name there too)."""
    objects = rendered[PAIRS[overlay]].objects
    job, config_map = _one(objects, "RayJob"), _one(objects, "ConfigMap")["metadata"]["name"]
    groups = driver_groups(job)
    assert [name for name, _ in groups] == ["worker group cpu"]
    for _, pod in groups:
        mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] == "/configs")
        assert mount["readOnly"] is True
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert volume["configMap"]["name"] == config_map and config_map.startswith("sweep-configs-")


def test_driver_groups_follow_entrypoint_resources() -> None:
    def group(name: str, resources: str | None) -> dict[str, Any]:
        return {"groupName": name, "rayStartParams": {"resources": resources} if resources else {}}

    cluster = {"headGroupSpec": group("head", None),
               "workerGroupSpecs": [group("gpu", None), group("cpu", '"{\\"sweep_driver\\": 1, \\"x\\": 2}"')]}
    job = {"kind": "RayJob", "spec": {"rayClusterSpec": cluster, "entrypointResources": '{"sweep_driver": 1}'}}
    assert [name for name, _ in driver_groups(job)] == ["worker group cpu"]
    job["spec"]["entrypointResources"] = '{"sweep_driver": 1, "y": 1}'
    assert driver_groups(job) == []
    del job["spec"]["entrypointResources"]
    assert [name for name, _ in driver_groups(job)] == ["the head group", "worker group gpu", "worker group cpu"]
    cluster["headGroupSpec"] = group("head", '"{\\"sweep_driver\\": 1}"')
    job["spec"]["entrypointResources"] = '{"sweep_driver": 1}'
    assert [name for name, _ in driver_groups(job)] == ["the head group", "worker group cpu"]


def test_overlay_shapes(rendered: dict[str, k8s_check.Rendered]) -> None:
    local = _one(rendered["overlays/local"].objects, "RayCluster")["spec"]
    gpu = _one(rendered["overlays/gpu"].objects, "RayCluster")["spec"]
    assert [g["groupName"] for g in local["workerGroupSpecs"]] == ["cpu"]
    assert "nvidia.com/gpu" not in json.dumps(local)
    group = gpu["workerGroupSpecs"][0]
    assert (group["groupName"], group["minReplicas"], group["maxReplicas"]) == ("gpu", 0, 8)
    assert group["template"]["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert "nodeSelector" not in group["template"]["spec"]
    assert local["authOptions"] == gpu["authOptions"] == {"mode": "token", "secretName": "ray-auth"}
    spot = _one(rendered["overlays/gpu-spot"].objects, "RayCluster")["spec"]["workerGroupSpecs"]
    assert [g["groupName"] for g in spot] == ["gpu", "cpu", "gpu-spot"]
    assert spot[2]["template"]["spec"]["priorityClassName"] == "sentsweep-spot"
    terms = spot[2]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {t["matchExpressions"][0]["key"] for t in terms["nodeSelectorTerms"]} == {  # any spot pool, Karpenter's too
        "sentsweep/capacity", "cloud.google.com/gke-spot", "eks.amazonaws.com/capacityType",
        "kubernetes.azure.com/scalesetpriority", "karpenter.sh/capacity-type"}
    assert "sentsweep/spot" in {t["key"] for t in spot[2]["template"]["spec"]["tolerations"]}
    assert all("sentsweep/spot" not in json.dumps(g) for g in spot[:2])  # only the spot group goes on spot nodes
    assert all("PriorityClass" not in r.counts for r in rendered.values())  # k8s/cluster owns them
    team = [o for path in ("examples/team/namespace", "examples/team", "examples/team/sweep")
            for o in rendered[path].objects]
    assert {o["metadata"].get("namespace", o["metadata"]["name"]) for o in team} == {"team-a"}
    assert {o["kind"] for o in rendered["examples/team/namespace"].objects} == {"ResourceQuota", "LimitRange",
                                                                                "Namespace"}
    assert gpu["enableInTreeAutoscaling"] is True and gpu["rayVersion"] == project_ray_version()
    job = _one(rendered["overlays/gpu/sweep"].objects, "RayJob")["spec"]
    assert job["entrypoint"] == "sentsweep sweep /configs/paper-cosent-stsb.yaml --resume-interrupted"
    assert job["shutdownAfterJobFinishes"] is True and job["backoffLimit"] > 0
    assert (job["activeDeadlineSeconds"], job["preRunningDeadlineSeconds"]) == (172800, 1800)
    assert (job["entrypointNumCpus"], json.loads(job["entrypointResources"])) == (1, {"sweep_driver": 1})


def test_in_gpu_spot_only_the_spot_group_may_run_on_spot_nodes(rendered: dict[str, k8s_check.Rendered]) -> None:
    """The head, the other groups, the submitter and the platform's pods had no affinity,
    so on an untainted spot pool a reclaim could take the head or postgres-0. Each now has ONE required term that
    excludes every spot label (the terms are ORed)."""
    objects = rendered["overlays/gpu-spot"].objects + rendered["overlays/gpu-spot/sweep"].objects
    pods = {(o["kind"], o["metadata"]["name"], pod.where): pod.spec for o in objects for pod in pod_specs(o)}
    on_spot = sorted(k for k, spec in pods.items() if runs_on_spot(spec))
    assert on_spot == [("RayCluster", "sentsweep", "spec.workerGroupSpecs[2].template.spec"),
                       ("RayJob", "sweep", "spec.rayClusterSpec.workerGroupSpecs[2].template.spec")]
    anti = [{"key": key, "operator": "NotIn", "values": [value]} for key, value in SPOT_LABELS.items()]
    off_spot = {k: spec for k, spec in pods.items() if k not in on_spot}
    assert {k[0] for k in off_spot} == {"RayCluster", "RayJob", "StatefulSet", "Deployment", "Job", "CronJob"}
    for key, spec in off_spot.items():
        assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
            "nodeSelectorTerms": [{"matchExpressions": anti}]}, key
    mlflow = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]["affinity"]
    assert "podAntiAffinity" in mlflow  # the strategic merge keeps the base's
    gpu = rendered["overlays/gpu"].objects + rendered["overlays/gpu/sweep"].objects
    assert all("nodeAffinity" not in json.dumps(o) for o in gpu)  # the component alone adds it


def test_spot_exclusions_follow_node_selector_semantics() -> None:
    """An exclusion is NotIn the spot value, DoesNotExist, In other values, or a nodeSelector with another value;
    every term must have it (terms are ORed)."""
    def spec(*terms: list[dict[str, Any]], selector: dict[str, str] | None = None) -> dict[str, Any]:
        required = {"nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}
        return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
                **({"nodeSelector": selector} if selector else {})}

    everything = [f"{k}={v}" for k, v in SPOT_LABELS.items()]
    assert spot_labels_allowed({}) == everything
    excluded = [{"key": "sentsweep/capacity", "operator": "NotIn", "values": ["spot"]},
                {"key": "cloud.google.com/gke-spot", "operator": "DoesNotExist"},
                {"key": "eks.amazonaws.com/capacityType", "operator": "In", "values": ["ON_DEMAND"]},
                {"key": "kubernetes.azure.com/scalesetpriority", "operator": "NotIn", "values": ["spot"]}]
    assert spot_labels_allowed(spec(excluded)) == ["karpenter.sh/capacity-type=spot"]
    assert spot_labels_allowed(spec(excluded, selector={"karpenter.sh/capacity-type": "on-demand"})) == []
    gpu_nodes = [{"key": "nvidia.com/gpu.present", "operator": "Exists"}]
    assert spot_labels_allowed(spec(excluded, gpu_nodes, selector={"karpenter.sh/capacity-type": "on-demand"})) == \
        everything[:4]  # a second term without exclusions lets the pod onto spot nodes again
    # a term without requirements matches no node (Kubernetes' semantics), so it opens nothing
    assert spot_labels_allowed(spec(excluded, [], selector={"karpenter.sh/capacity-type": "on-demand"})) == []
    assert runs_on_spot(spec([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]))
    assert not runs_on_spot(spec(excluded))
    assert (quantity("72Gi"), quantity("512Mi"), quantity("1Ti"), quantity("500M")) == (
        72 * 2**30, 512 * 2**20, 2**40, 5e8)
    assert (quantity("1e9"), quantity("1E3"), quantity("2E"), quantity(1024)) == (1e9, 1e3, 2e18, 1024)  # E: exa
    assert (format_bytes(72 * 2**30), format_bytes(272 * 2**20)) == ("72Gi", "272Mi")


def test_priority_classes_come_from_the_cluster_bundle(rendered: dict[str, k8s_check.Rendered]) -> None:
    """The platform's pods and the Ray heads run at sentsweep-platform in the gpu overlays
    (the local overlay, for a bare cluster, names no class: a pod naming a missing one is refused); the classes are
    cluster-scoped, so k8s/cluster (a cluster admin's) owns them and no overlay does."""
    cluster = k8s_check.render(K8S / "cluster")
    assert k8s_check.validate_objects(cluster.objects) == []
    classes = {o["metadata"]["name"]: o for o in cluster.objects}
    assert (classes["sentsweep-platform"]["value"], classes["sentsweep-platform"]["preemptionPolicy"]) == (
        100000, "PreemptLowerPriority")
    assert (classes["sentsweep-spot"]["value"], classes["sentsweep-spot"]["preemptionPolicy"]) == (-10, "Never")
    assert not any(c.get("globalDefault") for c in classes.values())
    for overlay, sweep in PAIRS.items():
        objects = rendered[overlay].objects + rendered[sweep].objects
        named = {(o["kind"], o["metadata"]["name"], pod.where): pod.spec.get("priorityClassName")
                 for o in objects for pod in pod_specs(o)}
        assert set(named.values()) <= set(classes) | {None}, overlay
        if overlay == "overlays/local":
            assert set(named.values()) == {None}
            continue
        assert {k for k, name in named.items() if name == "sentsweep-platform"} == {
            ("StatefulSet", "postgres", "spec.template.spec"), ("StatefulSet", "minio", "spec.template.spec"),
            ("StatefulSet", "gcs-redis", "spec.template.spec"), ("Deployment", "mlflow", "spec.template.spec"),
            ("RayCluster", "sentsweep", "spec.headGroupSpec.template.spec"),
            ("RayJob", "sweep", "spec.rayClusterSpec.headGroupSpec.template.spec")}, overlay



def test_postgres_stops_with_a_fast_shutdown(rendered: dict[str, k8s_check.Rendered]) -> None:
    """The kubelet's SIGTERM is PostgreSQL's smart shutdown, which waits for MLflow's pooled connections to close (they
    never do): the grace period ended in a SIGKILL and a crash recovery. A preStop hook shuts it down fast, within
    the grace period."""
    for overlay in PAIRS:
        postgres = next(o for o in rendered[overlay].objects
                        if o["kind"] == "StatefulSet" and o["metadata"]["name"] == "postgres")
        pod = postgres["spec"]["template"]["spec"]
        command = " ".join(pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"])
        assert "pg_ctl stop" in command and "-m fast" in command, overlay
        wait = int(re.search(r"-t (\d+)", command).group(1))
        assert wait < pod["terminationGracePeriodSeconds"], overlay


def test_the_backup_runs_at_the_documented_time(rendered: dict[str, k8s_check.Rendered]) -> None:
    """docs/operate.md: every night at 03:17 UTC, whatever the controller manager's local time zone."""
    for overlay in PAIRS:
        backup = _one(rendered[overlay].objects, "CronJob")["spec"]
        assert (backup["schedule"], backup.get("timeZone")) == ("17 3 * * *", "Etc/UTC"), overlay


def test_the_team_quota_bounds_the_platform_priority_and_admits_the_platforms_pods(
        rendered: dict[str, k8s_check.Rendered]) -> None:
    """A PriorityClass is open to every namespace, so the team example bounds the pods it
    runs at sentsweep-platform with a scoped quota, which must still admit the platform's own: each Deployment's and
    StatefulSet's replicas and rolling-update surge, and one head per RayCluster the namespace may hold."""
    objects = [o for path in ("examples/team/namespace", "examples/team", "examples/team/sweep")
               for o in rendered[path].objects]
    quotas = [o for o in objects if o["kind"] == "ResourceQuota"]
    scoped = [q for q in quotas if q["spec"].get("scopeSelector")]
    assert [q["spec"]["scopeSelector"]["matchExpressions"] for q in scoped] == [
        [{"scopeName": "PriorityClass", "operator": "In", "values": ["sentsweep-platform"]}]]
    heads = min(int(q["spec"]["hard"]["count/rayclusters.ray.io"]) for q in quotas
                if "count/rayclusters.ray.io" in q["spec"]["hard"])
    needed = heads
    for o in objects:
        if o["kind"] in ("Deployment", "StatefulSet") and any(
                p.spec.get("priorityClassName") == "sentsweep-platform" for p in pod_specs(o)):
            replicas = int(o["spec"].get("replicas", 1))
            needed += replicas + (surge_pods(o, replicas) if o["kind"] == "Deployment" else 0)
    assert needed <= int(scoped[0]["spec"]["hard"]["pods"]) <= needed + 2, needed

def test_a_cluster_scoped_object_in_an_overlay_is_caught(tmp_path: Path) -> None:
    """If gpu-spot owned the PriorityClass sentsweep-spot, so deleting one team's overlay
    deleted it for every team. The overlays' own Namespace stays allowed."""
    new = _planted(tmp_path, ("overlays/gpu-spot", "overlays/gpu-spot/sweep"), {
        "overlays/gpu-spot/kustomization.yaml": ("resources:\n- ../gpu\n", "resources:\n- ../gpu\n- ../../cluster\n")})
    message = ("cluster-scoped, but deployed with the namespaced objects of sentsweep: deleting them (kubectl delete "
               "-k) deletes it for every namespace that uses it, and a namespace admin cannot create it; put it in "
               "k8s/cluster (applied once by a cluster admin) and refer to it by name [scope]")
    assert new == [f"PriorityClass/sentsweep-platform: {message}", f"PriorityClass/sentsweep-spot: {message}"]


def test_a_name_suffix_gives_each_sweep_its_own_objects(tmp_path: Path) -> None:
    """docs/operate.md: one kustomization per sweep with a nameSuffix; the RayJob and its ConfigMap are renamed
    (the reference follows), the platform's Secrets are not."""
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy, ignore=shutil.ignore_patterns("*.env"))
    mine = copy / "sweeps" / "stsb-alice"
    mine.mkdir(parents=True)
    (mine / "kustomization.yaml").write_text("resources:\n- ../../overlays/local/sweep\nnameSuffix: -stsb-alice\n")
    report = k8s_check.validate([copy / "overlays" / "local", mine])
    assert [str(p) for p in report.problems] == []
    job = _one(report.rendered[1].objects, "RayJob")
    assert job["metadata"]["name"] == "sweep-stsb-alice"
    volumes = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["volumes"]
    assert volumes[-1]["configMap"]["name"] == _one(report.rendered[1].objects, "ConfigMap")["metadata"]["name"]
    assert volumes[-1]["configMap"]["name"].startswith("sweep-configs-stsb-alice-")
    cpu = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["volumes"]
    assert cpu[-1]["configMap"]["name"] == volumes[-1]["configMap"]["name"]
    assert job["spec"]["rayClusterSpec"]["authOptions"]["secretName"] == "ray-auth"


def test_cluster_configs_differ_from_the_repo_configs_only_where_they_must() -> None:
    cluster_only = {"storage_path", "storage_endpoint_url", "tracking"}
    configs = sorted((K8S / "sweep" / "configs").glob("*.yaml"))
    listed = yaml.safe_load((K8S / "sweep" / "kustomization.yaml").read_text())["configMapGenerator"][0]["files"]
    assert sorted(listed) == [f"configs/{p.name}" for p in configs]
    for path in configs:
        ours = parse_sweep_config(yaml.safe_load(path.read_text()), path).model_dump()
        theirs = parse_sweep_config(yaml.safe_load((REPO / "configs" / path.name).read_text()), path).model_dump()
        assert {k: v for k, v in ours.items() if k not in cluster_only} == \
               {k: v for k, v in theirs.items() if k not in cluster_only}, path.name
        assert ours["storage_path"].startswith("s3://") and ours["tracking"]["uri"] == "http://mlflow:5000"
        assert ours["storage_endpoint_url"] == "http://minio:9000"


def test_configs_name_services_relative_to_their_namespace() -> None:
    """A second namespace (another team) runs the same configs: no `<service>.<namespace>.svc` host in them."""
    for path in sorted((K8S / "sweep" / "configs").glob("*.yaml")) + sorted((REPO / "configs").glob("*.yaml")):
        assert not re.search(r"://[a-z0-9-]+\.[a-z0-9-]+\.svc", path.read_text()), path


# -- planted mistakes ----------------------------------------------------------------------------------

def _planted(tmp_path: Path, paths: tuple[str, ...], edits: dict[str, tuple[str, str]]) -> list[str]:
    """The problems a copy of k8s/ with ``edits`` (file -> (old, new), each old found once) has and the
    unchanged tree has not."""
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy, ignore=shutil.ignore_patterns("*.env"))
    for rel, (old, new) in edits.items():
        text = (copy / rel).read_text()
        assert text.count(old) == 1, f"{old!r} must occur once in {rel}"
        (copy / rel).write_text(text.replace(old, new))
    return sorted(_problems(copy, paths) - _problems(K8S, paths))


@functools.cache
def _problems(root: Path, paths: tuple[str, ...]) -> frozenset[str]:
    report = k8s_check.validate([root / p for p in paths])
    return frozenset(str(p) for p in report.problems)


def test_a_misspelled_raycluster_field_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/gpu",),
                   {"base/raycluster.yaml": ("enableInTreeAutoscaling: true", "enableInTreeAutoscalling: true")})
    assert any("[strict]" in p and "spec.enableInTreeAutoscalling: unknown field (did you mean "
               "'enableInTreeAutoscaling'?)" in p for p in new), new
    assert all("RayCluster/sentsweep" in p and "utoscal" in p for p in new), new


def test_a_missing_max_replicas_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("base",), {"base/raycluster.yaml": ("\n    maxReplicas: 2\n", "\n")})
    assert "RayCluster/sentsweep: spec.workerGroupSpecs[1]: 'maxReplicas' is a required property [schema]" in new
    assert "RayCluster/sentsweep: worker group cpu: no maxReplicas [policy]" in new
    assert all("maxReplicas" in p for p in new), new


def test_a_gpu_group_that_never_scales_to_zero_is_caught(tmp_path: Path) -> None:
    text = "- groupName: gpu\n    replicas: 0\n    minReplicas: 0"
    new = _planted(tmp_path, ("overlays/gpu",),
                   {"base/raycluster.yaml": (text, text.replace("minReplicas: 0", "minReplicas: 1"))})
    assert "RayCluster/sentsweep: GPU worker group gpu: minReplicas must be 0 (GPUs idle otherwise) [policy]" in new


def test_a_plaintext_password_in_a_deployment_is_caught(tmp_path: Path) -> None:
    env = "        - name: MLFLOW_AUTH_CONFIG_PATH\n"
    new = _planted(tmp_path, ("overlays/local",), {"base/mlflow.yaml": (
        env, "        - name: MLFLOW_DB_PASSWORD\n          value: hunter2\n" + env)})
    assert new == ["Deployment/mlflow: spec.template.spec.containers[mlflow]: env MLFLOW_DB_PASSWORD has a "
                   "plaintext value (use valueFrom.secretKeyRef) [policy]"]


def test_a_password_in_a_url_is_caught(tmp_path: Path) -> None:
    after = "        - name: MLFLOW_AUTH_CONFIG_PATH\n"
    for password in ("hunter2", "$(PGPASSWORD)"):  # a reference too: the URL reaches command lines
        new = _planted(tmp_path / password[-3:], ("overlays/local",), {"base/mlflow.yaml": (
            "postgresql+psycopg2://$(PG_USER)@postgres:5432/mlflow_auth\n" + after,
            f"postgresql+psycopg2://mlflow:{password}@postgres:5432/mlflow_auth\n" + after)})
        assert new == ["Deployment/mlflow: spec.template.spec.containers[mlflow]: a URL holds a password (a URL "
                       "reaches command lines, /proc/<pid>/cmdline, and config files, even as $(VAR)): give it in "
                       "the client's own variable from a Secret (libpq: PGPASSWORD) [policy]"]


def test_a_credential_in_a_configmap_is_caught(tmp_path: Path) -> None:
    """The namespace's `view` role reads ConfigMaps, not Secrets: a generated literal or a config's URI login leaks."""
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {
        "overlays/local/kustomization.yaml": ("  - MLFLOW_WORKERS=4\n",
                                             "  - MLFLOW_WORKERS=4\n  - MLFLOW_TRACKING_PASSWORD=hunter2hunter2\n"),
        "sweep/configs/demo.yaml": ("  uri: http://mlflow:5000 ", "  uri: http://sweeps:hunter2hunter2@mlflow:5000 ")})
    assert [re.sub(r"-[a-z0-9]{10}:", ":", p) for p in new] == [
        "ConfigMap/mlflow-server: data.MLFLOW_TRACKING_PASSWORD: a credential in a ConfigMap: put it in a Secret and "
        "give it with secretKeyRef [policy]",
        "ConfigMap/sweep-configs: data.demo.yaml: a URL holds a password: give it in the client's own variable from "
        "a Secret [policy]"], new


def test_a_credential_in_a_secret_generators_literals_is_caught(tmp_path: Path) -> None:
    """A literal sits in the committed kustomization; ``envs`` names a git-ignored file."""
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"base/kustomization.yaml": (
        "- name: minio-root\n  envs:\n  - secrets/minio.env\n",
        "- name: minio-root\n  literals:\n  - MINIO_CONSOLE_PASSWORD=hunter2hunter2\n"
        "  envs:\n  - secrets/minio.env\n")})
    assert "k8s/base/kustomization.yaml: secretGenerator minio-root: literals put a credential in a committed file: " \
        "name a git-ignored file with envs instead [policy]" in new, new


def test_a_pod_on_the_default_or_a_missing_service_account_is_caught(tmp_path: Path) -> None:
    """The namespace's default account is for no workload (CIS 5.1.5); the Ray head's is KubeRay's to make."""
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {
        "base/mlflow.yaml": ("      serviceAccountName: mlflow\n", ""),
        "base/minio.yaml": ("      serviceAccountName: minio\n", "      serviceAccountName: default\n"),
        "base/service-accounts.yaml": ("  name: postgres-backup\n", "  name: postgres-backups\n"),
        "sweep/rayjob.yaml": ('            sentsweep/kube-api-client: "true"\n        spec:\n',
                              '            sentsweep/kube-api-client: "true"\n        spec:\n'
                              "          serviceAccountName: ray-head\n")})
    assert new == [
        "CronJob/postgres-backup: spec.jobTemplate.spec.template.spec: serviceAccountName postgres-backup: no such "
        "ServiceAccount is deployed with it [policy]",
        "Deployment/mlflow: spec.template.spec: runs on the namespace's default service account: name one of its own "
        "[policy]",
        "RayJob/sweep: spec.rayClusterSpec.headGroupSpec.template.spec: serviceAccountName ray-head: leave it out, so "
        "that KubeRay makes the head's account with its autoscaler's Role [policy]",
        "StatefulSet/minio: spec.template.spec: runs on the namespace's default service account: name one of its own "
        "[policy]"], new


def test_a_workload_on_another_ones_account_or_an_account_with_a_token_is_caught(tmp_path: Path) -> None:
    """One account per workload: two on one account cannot be told apart by an audit log, and a RoleBinding made for
    one grants the other too. Every worker group of every Ray cluster shares ray-worker by design."""
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {
        "base/postgres.yaml": ("      serviceAccountName: postgres\n", "      serviceAccountName: gcs-redis\n"),
        "base/service-accounts.yaml": ("  name: minio\nautomountServiceAccountToken: false\n", "  name: minio\n")})
    assert new == [
        "ServiceAccount/minio: automountServiceAccountToken is not false: a pod that does not turn it off gets a "
        "token it does not need [policy]",
        "StatefulSet/postgres: spec.template.spec: serviceAccountName gcs-redis is also StatefulSet/gcs-redis's: give "
        "each workload an account of its own [policy]"], new


def test_a_credential_in_a_rayjobs_runtime_env_is_caught(tmp_path: Path) -> None:
    """The Ray Jobs API shows a job's runtime_env to every holder of the Ray token."""
    runtime_env = ("- op: add\n  path: /spec/runtimeEnvYAML\n  value: |\n    env_vars:\n      SENTSWEEP_OWNER: alice\n"
                   "      AWS_SECRET_ACCESS_KEY: hunter2hunter2\n    pip: [git+https://alice:ghp0123@github.com/a/b]\n")
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"overlays/local/sweep/rayjob.yaml": (
        "- op: add\n  path: /spec/activeDeadlineSeconds\n",
        runtime_env + "- op: add\n  path: /spec/activeDeadlineSeconds\n")})
    assert new == [
        "RayJob/sweep: spec.runtimeEnvYAML: a URL holds a password: give it in the client's own variable from a "
        "Secret [policy]",
        "RayJob/sweep: spec.runtimeEnvYAML: env_vars AWS_SECRET_ACCESS_KEY is a credential the Ray Jobs API shows: "
        "the Ray pods get theirs from Secrets (secretKeyRef) [policy]"], new


def test_a_credential_given_to_a_flag_is_caught(tmp_path: Path) -> None:
    """A command line is in /proc/<pid>/cmdline, and a RayJob's entrypoint in its object and the Ray Jobs API."""
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {
        "base/mlflow.yaml": ("--port 5000 \\\n", "--port 5000 --db-password hunter2 \\\n"),
        "sweep/rayjob.yaml": ("demo.yaml --resume-interrupted\n", "demo.yaml --resume-interrupted --api-key=abc\n")})
    assert new[:2] == [
        "Deployment/mlflow: spec.template.spec.containers[mlflow]: --db-password gives a credential on the command "
        "line: read it from a Secret's variable [policy]",
        "RayJob/sweep: 'sentsweep sweep /configs/demo.yaml --resume-interrupted --api-key=abc': sentsweep: error: "
        "unrecognized arguments: --api-key=abc [entrypoint]"], new
    assert new[2:] == ["RayJob/sweep: spec.entrypoint: --api-key gives a credential the Ray Jobs API shows "
                       "[policy]"], new


def test_an_added_capability_is_caught(tmp_path: Path) -> None:
    old = ('          capabilities:\n            drop: ["ALL"]\n        volumeMounts:\n        - name: tmp\n'
           '          mountPath: /tmp\n      volumes:')
    new = _planted(tmp_path, ("overlays/local",), {"base/mlflow.yaml": (
        old, old.replace('drop: ["ALL"]\n', 'drop: ["ALL"]\n            add: ["NET_RAW"]\n'))})
    assert new == ["Deployment/mlflow: spec.template.spec.containers[mlflow]: capabilities add ['NET_RAW'] (none is "
                   "needed) [policy]"], new


def test_an_image_without_a_registry_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local",), {"base/minio.yaml": (
        "image: docker.io/minio/minio:", "image: minio/minio:"), "overlays/local/kustomization.yaml": (
        "- name: docker.io/minio/minio\n", "- name: minio/minio\n")})
    assert len(new) == 1 and "image 'minio/minio:RELEASE" in new[0] and "names no registry" in new[0], new


def test_a_listening_container_without_a_readiness_probe_is_caught(tmp_path: Path) -> None:
    old = "        readinessProbe:\n          httpGet:\n            path: /health\n"
    new = _planted(tmp_path, ("overlays/local",), {"base/mlflow.yaml": (old, "        startupProbe:\n          "
                                                                        "httpGet:\n            path: /health\n")})
    assert new == ["Deployment/mlflow: spec.template.spec.containers[mlflow]: declares ports but has no "
                   "readinessProbe (a Service would route to it before it answers) [network]"], new


def test_an_entrypoint_naming_a_missing_config_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/gpu", "overlays/gpu/sweep"), {"overlays/gpu/sweep/rayjob.yaml": (
        "/configs/paper-cosent-stsb.yaml", "/configs/paper-cosent-stsbb.yaml")})
    assert len(new) == 1 and new[0].startswith("RayJob/sweep: /configs/paper-cosent-stsbb.yaml is not in "
                                               "ConfigMap 'sweep-configs-"), new


def test_an_entrypoint_the_cli_rejects_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/rayjob.yaml": (
        "demo.yaml --resume-interrupted\n", "demo.yaml --resume-interrupted --fast\n")})
    assert new == ["RayJob/sweep: 'sentsweep sweep /configs/demo.yaml --resume-interrupted --fast': sentsweep: "
                   "error: unrecognized arguments: --fast [entrypoint]"]


def test_a_retry_that_would_start_the_sweep_over_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/rayjob.yaml": (
        "demo.yaml --resume-interrupted\n", "demo.yaml\n")})
    assert new == ["RayJob/sweep: 'sentsweep sweep /configs/demo.yaml': backoffLimit retries it, but without "
                   "--resume-interrupted a retry starts the sweep over [entrypoint]"]


def test_an_invalid_or_unplaceable_sweep_config_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/configs/demo.yaml": (
        "num_samples: 8", "num_samples: 0")})
    assert len(new) == 1 and "field 'num_samples'" in new[0] and "[entrypoint]" in new[0], new
    new = _planted(tmp_path / "gpu", ("overlays/local", "overlays/local/sweep"), {"sweep/configs/demo.yaml": (
        "  gpu: 0\n", "  gpu: 1\n")})
    assert new == ["RayJob/sweep: /configs/demo.yaml (ConfigMap sweep-configs-" + new[0].split("sweep-configs-")[1]]
    assert "no worker group fits a trial's resources (cpu 1.0, gpu 1.0)" in new[0]


def test_a_retried_sweep_without_shared_storage_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/configs/demo.yaml": (
        "storage_path: s3://sentsweep/ray-results     # MinIO, so a retried RayJob finds the sweep's state\n"
        "storage_endpoint_url: http://minio:9000\n", "storage_path: ./ray_results\n")})
    assert len(new) == 1 and "storage_path './ray_results' is not shared storage" in new[0], new


LOCAL = ("overlays/local", "overlays/local/sweep")
GPU = ("overlays/gpu", "overlays/gpu/sweep")


def _policy_block(name: str) -> str:
    """The text of the NetworkPolicy ``name`` in base/network-policies.yaml, with the ``---`` that ends it."""
    text = (K8S / "base" / "network-policies.yaml").read_text()
    start = text.index(f"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: {name}\n")
    end = text.find("---\n", start)
    return text[start:] if end < 0 else text[start:end + 4]


def test_a_ray_pod_without_a_network_policy_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"base/network-policies.yaml": (_policy_block("ray-ingress"), "")})
    assert new == [
        "RayCluster/sentsweep: spec.headGroupSpec.template.spec: its pods listen but no ingress NetworkPolicy "
        "selects them [network]",
        "RayCluster/sentsweep: spec.workerGroupSpecs[0].template.spec: its pods listen but no ingress "
        "NetworkPolicy selects them [network]",
        "RayJob/sweep: spec.rayClusterSpec.headGroupSpec.template.spec: its pods listen but no ingress "
        "NetworkPolicy selects them [network]",
        "RayJob/sweep: spec.rayClusterSpec.workerGroupSpecs[0].template.spec: its pods listen but no ingress "
        "NetworkPolicy selects them [network]",
    ]


def test_a_listening_deployment_without_a_policy_and_no_default_deny_are_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"base/network-policies.yaml": (_policy_block("mlflow-ingress"), "")})
    assert new == ["Deployment/mlflow: spec.template.spec: its pods listen but no ingress NetworkPolicy selects "
                   "them [network]"]
    deny = _policy_block("default-deny-ingress")
    new = _planted(tmp_path / "deny", LOCAL, {"base/network-policies.yaml": (deny, "")})
    assert new == ["Namespace/sentsweep: no default-deny ingress NetworkPolicy (podSelector: {}, no ingress rules) "
                   "[network]"]


@pytest.mark.parametrize(("rel", "oid"), [("base/raycluster.yaml", "RayCluster/sentsweep"),
                                          ("sweep/rayjob.yaml", "RayJob/sweep")])
def test_a_cluster_without_token_auth_is_caught(tmp_path: Path, rel: str, oid: str) -> None:
    indent = "  " if rel.startswith("base") else "    "
    auth = f"{indent}authOptions:\n{indent}  mode: token\n{indent}  secretName: ray-auth\n"
    new = _planted(tmp_path, LOCAL, {rel: (auth, "")})
    assert new == [f"{oid}: no token auth: set authOptions.mode: token (and secretName: the Secret with "
                   "auth_token) [policy]"]


def test_a_token_auth_turned_off_by_env_or_a_missing_token_is_caught(tmp_path: Path) -> None:
    env = "          - name: TOKENIZERS_PARALLELISM\n            value: \"false\"\n          resources:\n" \
          "            requests:\n              cpu: \"2\"\n"
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": (
        env, "          - name: RAY_AUTH_MODE\n            value: disabled\n" + env)})
    assert new == ["RayCluster/sentsweep: spec.headGroupSpec.template.spec.containers[ray-head]: env "
                   "RAY_AUTH_MODE=disabled turns token auth off [policy]"]
    new = _planted(tmp_path / "key", ("overlays/local",), {"base/secrets/ray.env.example": ("auth_token=", "token=")})
    assert new == ["RayCluster/sentsweep: authOptions.secretName: Secret 'ray-auth' has no key 'auth_token' "
                   "[references]"]


def test_gpu_workers_behind_the_gpu_operators_label_are_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, GPU, {"base/raycluster.yaml": (
        "        automountServiceAccountToken: false\n        tolerations:\n",
        "        automountServiceAccountToken: false\n        nodeSelector:\n          nvidia.com/gpu.present: "
        "\"true\"\n        tolerations:\n")})
    assert new == ["RayCluster/sentsweep: GPU worker group gpu: nodeSelector nvidia.com/gpu.present is set only by "
                   "the GPU operator's feature discovery; the nvidia.com/gpu request places the pods [policy]"]


def test_a_rayjob_without_deadlines_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"overlays/local/sweep/rayjob.yaml": (
        "- op: add\n  path: /spec/preRunningDeadlineSeconds\n  value: 900\n", "")})
    assert new == ["RayJob/sweep: no spec.preRunningDeadlineSeconds: a sweep that never gets its resources holds "
                   "the cluster forever [policy]"]


def test_a_rayjob_whose_cluster_outlives_the_sweep_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"sweep/rayjob.yaml": ("  shutdownAfterJobFinishes: true\n",
                                                           "  shutdownAfterJobFinishes: false\n")})
    assert new == ["RayJob/sweep: spec.shutdownAfterJobFinishes is not true: the sweep's Ray cluster (its GPU workers "
                   "included) outlives the sweep [policy]"]
    new = _planted(tmp_path / "ttl", LOCAL, {"sweep/rayjob.yaml": ("  ttlSecondsAfterFinished: 600\n", "")})
    assert new == ["RayJob/sweep: no spec.ttlSecondsAfterFinished: set how long the finished sweep's cluster stays "
                   "[policy]"]


def test_a_ray_head_or_service_exposed_outside_the_cluster_is_caught(tmp_path: Path) -> None:
    """The dashboard (Jobs API: code execution for a token holder), GCS and the client port stay inside the
    cluster, as do MinIO, MLflow and PostgreSQL: users reach them through kubectl port-forward."""
    new = _planted(tmp_path, LOCAL, {
        "sweep/rayjob.yaml": ("      serviceType: ClusterIP\n", "      serviceType: LoadBalancer\n      "
                                                                   "enableIngress: true\n"),
        "base/minio.yaml": ("spec:\n  selector:\n", "spec:\n  type: NodePort\n  selector:\n")})
    assert new == [
        "RayJob/sweep: spec.rayClusterSpec.headGroupSpec.enableIngress: KubeRay would expose the head's dashboard "
        "(Jobs API) through an Ingress [policy]",
        "RayJob/sweep: spec.rayClusterSpec.headGroupSpec.serviceType: type LoadBalancer exposes its ports outside the "
        "cluster (use ClusterIP and kubectl port-forward) [policy]",
        "Service/minio: spec: type NodePort exposes its ports outside the cluster (use ClusterIP and kubectl "
        "port-forward) [policy]"]


def test_a_driver_that_may_run_on_the_head_or_nowhere_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"sweep/rayjob.yaml": ("  entrypointResources: '{\"sweep_driver\": 1}'\n", "")})
    assert new == ["RayJob/sweep: the driver may run on the head: entrypointResources must ask for a custom "
                   "resource that only worker groups offer (rayStartParams.resources) [entrypoint]"]
    new = _planted(tmp_path / "none", LOCAL, {"sweep/rayjob.yaml": ("  entrypointNumCpus: 1\n",
                                                                    "  entrypointNumCpus: 3\n")})
    assert new == ['RayJob/sweep: no worker group offers the driver\'s resources (entrypointResources '
                   '{"sweep_driver": 1}, entrypointNumCpus 3) [entrypoint]']


#: The cpu group's configs mount in sweep/rayjob.yaml, and the start of its volumes (20Gi: the cpu group's /tmp).
CPU_CONFIGS_MOUNT = "            - name: configs\n              mountPath: /configs\n              readOnly: true\n"
CPU_VOLUMES = "          volumes:\n          - name: tmp\n            emptyDir:\n              sizeLimit: 20Gi\n"


@pytest.mark.parametrize(("paths", "config"), [(LOCAL, "demo.yaml"),
                                               (("overlays/gpu-spot", "overlays/gpu-spot/sweep"),
                                                "paper-cosent-stsb.yaml")])
def test_a_driver_group_without_the_configs_mount_is_caught(tmp_path: Path, paths: tuple[str, ...],
                                                            config: str) -> None:
    """The cpu group runs the driver (entrypointResources sweep_driver): without /configs the sweep cannot read
    its config there, however the head mounts it."""
    new = _planted(tmp_path, paths, {"sweep/rayjob.yaml": (CPU_CONFIGS_MOUNT + CPU_VOLUMES, CPU_VOLUMES)})
    assert new == ['RayJob/sweep: worker group cpu can run the driver (entrypointResources {"sweep_driver": 1}) '
                   f'but does not mount /configs, where the entrypoint reads /configs/{config} [entrypoint]']


def test_an_image_by_tag_only_is_caught(tmp_path: Path) -> None:
    name = "- name: docker.io/library/postgres\n  newTag: 17.6-bookworm\n"
    new = _planted(tmp_path, ("overlays/local",), {"overlays/local/kustomization.yaml": (
        name + "  digest: sha256:" + "0" * 64 + "\n", name)})
    assert new == [
        "CronJob/postgres-backup: spec.jobTemplate.spec.template.spec.containers[pg-dump]: image "
        "'docker.io/library/postgres:17.6-bookworm' is not pinned by digest (name:tag@sha256:...) [policy]",
        "StatefulSet/postgres: spec.template.spec.containers[postgres]: image "
        "'docker.io/library/postgres:17.6-bookworm' is not pinned by digest (name:tag@sha256:...) [policy]"]


def test_a_needless_service_account_token_and_a_lax_namespace_are_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("namespace", "overlays/local"), {
        "base/postgres-backup.yaml": ("          automountServiceAccountToken: false\n", ""),
        "namespace/namespace.yaml": ("    pod-security.kubernetes.io/enforce: restricted\n",
                                     "    pod-security.kubernetes.io/enforce: baseline\n")})
    assert new == [
        "CronJob/postgres-backup: spec.jobTemplate.spec.template.spec: automountServiceAccountToken is not false "
        "(only the Ray autoscaler calls the Kubernetes API, with its own mount) [policy]",
        "Namespace/sentsweep: label pod-security.kubernetes.io/enforce is not 'restricted' [policy]"]


#: The head's labels and the start of its pod spec in base/raycluster.yaml.
HEAD_SPEC = "          sentsweep/kube-api-client: \"true\"\n      spec:\n        automountServiceAccountToken: false\n"
#: The autoscaler's mount of the head's projected token volume in base/raycluster.yaml.
AUTOSCALER_TOKEN = ("    - name: kube-api-access\n      mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n"
                    "      readOnly: true\n  headGroupSpec:\n")


def test_only_the_autoscaler_holds_a_service_account_token(rendered: dict[str, k8s_check.Rendered]) -> None:
    cluster = _one(rendered["overlays/gpu"].objects, "RayCluster")["spec"]
    head = cluster["headGroupSpec"]["template"]["spec"]
    assert head["automountServiceAccountToken"] is False
    volume = next(v for v in head["volumes"] if v["name"] == "kube-api-access")
    assert [next(iter(s)) for s in volume["projected"]["sources"]] == ["serviceAccountToken", "configMap",
                                                                       "downwardAPI"]
    assert {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True} in cluster["autoscalerOptions"]["volumeMounts"]
    assert all(m["name"] != "kube-api-access" for c in head["containers"] for m in c["volumeMounts"])


def test_a_head_with_a_token_in_its_ray_container_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local",), {"base/raycluster.yaml": (
        HEAD_SPEC, HEAD_SPEC.replace("        automountServiceAccountToken: false\n", ""))})
    assert new == ["RayCluster/sentsweep: spec.headGroupSpec.template.spec: automountServiceAccountToken is not false "
                   "(only the Ray autoscaler calls the Kubernetes API, with its own mount) [policy]"]
    new = _planted(tmp_path / "mount", ("overlays/local",), {"base/raycluster.yaml": (
        "            mountPath: /home/sentsweep\n        volumes:\n        - name: tmp\n          emptyDir:\n"
        "            sizeLimit: 10Gi\n",
        "            mountPath: /home/sentsweep\n          - name: kube-api-access\n            mountPath: /sa\n"
        "        volumes:\n        - name: tmp\n          emptyDir:\n            sizeLimit: 10Gi\n")})
    assert new == ["RayCluster/sentsweep: spec.headGroupSpec.template.spec.containers[ray-head]: mounts a "
                   "service-account token (volume kube-api-access at /sa); only the Ray autoscaler "
                   "(autoscalerOptions.volumeMounts) may [policy]"]


def test_an_autoscaler_without_its_token_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local",), {"base/raycluster.yaml": (AUTOSCALER_TOKEN, "  headGroupSpec:\n")})
    assert new == ["RayCluster/sentsweep: spec.autoscalerOptions: the autoscaler gets no service-account token: "
                   "mount a projected serviceAccountToken volume of the head at "
                   "/var/run/secrets/kubernetes.io/serviceaccount [policy]"]


def test_an_autoscaler_sharing_the_heads_tmp_or_a_user_site_is_caught(tmp_path: Path) -> None:
    """The token holder shared the head's /tmp as its home, so code in ray-head (any holder of
    the Ray token) could plant a .pth file it imports at its next start, and act with its token."""
    shared = "    - name: autoscaler-tmp\n      mountPath: /tmp\n"
    new = _planted(tmp_path, ("overlays/local",), {"base/raycluster.yaml": (shared, shared.replace("autoscaler-tmp",
                                                                                                   "tmp"))})
    assert new == ["RayCluster/sentsweep: spec.autoscalerOptions: volume tmp (at /tmp) is shared with the head's "
                   "containers: code there could plant what the token holder imports; give it a volume of its own "
                   "[policy]"]
    site = '    - name: PYTHONNOUSERSITE  # no user site: nothing in its home is imported\n      value: "1"\n'
    new = _planted(tmp_path / "site", ("overlays/local",), {"base/raycluster.yaml": (site, "")})
    assert new == ['RayCluster/sentsweep: spec.autoscalerOptions: env PYTHONNOUSERSITE is not "1": the token holder '
                   "would import a user site from its home [policy]"]


def test_a_ray_container_without_the_platform_pod_marker_is_caught(tmp_path: Path) -> None:
    """A resume unpickles the sweep's state without --trust-storage only in the platform's Ray
    pods, told apart by SENTSWEEP_PLATFORM_POD=1 (KUBERNETES_SERVICE_HOST is in every pod of every namespace); a Ray
    container without it would refuse the RayJob's --resume-interrupted."""
    lines = (K8S / "base" / "raycluster.yaml").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if "- name: SENTSWEEP_PLATFORM_POD" in line)  # ray-head's
    marker = lines[first] + lines[first + 1]
    head = "            containerPort: 8080\n          env:\n"
    new = _planted(tmp_path, ("overlays/local",), {"base/raycluster.yaml": (head + marker, head)})
    assert new == ["RayCluster/sentsweep: spec.headGroupSpec.template.spec.containers[ray-head]: env "
                   'SENTSWEEP_PLATFORM_POD is not "1": a resume in this Ray container (--resume-interrupted, submit '
                   "--resume) would be refused without --trust-storage [policy]"]


def test_the_namespaces_guard_rails_deployed_with_the_platform_are_caught(tmp_path: Path) -> None:
    """The overlays held the Namespace (its Pod Security labels) and the team example its
    quotas and LimitRange: a team could not apply them with the namespace admin role, or, given the rights, could
    relax its own Pod Security level and raise its quota; and `kubectl delete -k` of the overlay deleted the Namespace
    and every volume in it. They are the cluster admin's kustomization (k8s/namespace), refused in the platform's."""
    new = _planted(tmp_path, ("overlays/local",), {
        "overlays/local/kustomization.yaml": ("- ../../base\n", "- ../../base\n- ../../namespace\n")})
    assert new == ["Namespace/sentsweep: a guard rail of the namespace, deployed with its workloads: the namespace's "
                   "users would need rights to change it (and could relax their Pod Security level or raise their own "
                   "quota), and `kubectl delete -k` would delete it with them; put it in the kustomization a cluster "
                   "admin applies (k8s/namespace) [scope]"]
    new = _planted(tmp_path / "team", ("examples/team",), {
        "examples/team/kustomization.yaml": ("- ../../overlays/gpu\n", "- ../../overlays/gpu\n- namespace\n")})
    assert sorted(p.split(":")[0] for p in new) == ["LimitRange/team-limits", "Namespace/team-a",
                                                    "ResourceQuota/team-platform-priority", "ResourceQuota/team-quota"]


def test_egress_without_default_deny_or_dns_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"base/network-policies.yaml": (_policy_block("default-deny-egress"), "")})
    assert new == ["Namespace/sentsweep: no default-deny egress NetworkPolicy (podSelector: {}, policyTypes: "
                   "[Egress], no egress rules) [network]"]
    new = _planted(tmp_path / "dns", LOCAL, {"base/network-policies.yaml": (_policy_block("dns-egress"), "")})
    assert new == ["Namespace/sentsweep: egress is denied but no NetworkPolicy lets every pod reach DNS "
                   "(podSelector: {}, egress on UDP port 53) [network]"]


def test_an_egress_peer_that_matches_no_pod_is_caught(tmp_path: Path) -> None:
    text = "          app.kubernetes.io/name: minio\n    ports:\n    - protocol: TCP\n      port: 9000\n"
    new = _planted(tmp_path, LOCAL, {"base/network-policies.yaml": (text, text.replace("minio", "mini0"))})
    assert new == ["NetworkPolicy/storage-client-egress: spec.egress[0]: no pod template carries "
                   "{'app.kubernetes.io/name': 'mini0'} [network]"]


def test_an_ip_block_open_to_the_metadata_endpoint_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"overlays/local/kube-api.yaml": (
        "        cidr: 192.0.2.1/32\n", "        cidr: 169.254.0.0/16\n")})
    assert new == ["NetworkPolicy/kube-api-egress: spec.egress[0]: ipBlock 169.254.0.0/16 includes the cloud "
                   "metadata endpoint 169.254.169.254: list 169.254.169.254/32 in its except [network]"]


def test_egress_to_public_addresses_without_the_opt_in_is_caught(tmp_path: Path) -> None:
    """The API server egress of the Ray head pods was 0.0.0.0/0 on 443: the ray-head container (tracking and
    bucket keys, submitted jobs) could send anything out."""
    new = _planted(tmp_path, LOCAL, {"overlays/local/kube-api.yaml": (
        "        cidr: 192.0.2.1/32\n", "        cidr: 0.0.0.0/0\n        except:\n        - 169.254.169.254/32\n")})
    assert new == ["NetworkPolicy/kube-api-egress: spec.egress[0]: ipBlock 0.0.0.0/0 reaches public addresses (the "
                   "internet): narrow it to private ranges or the hosts needed, or label the policy "
                   "sentsweep/internet-egress: opt-in [network]"]


def test_internet_egress_that_also_opens_the_internal_ranges_is_caught(tmp_path: Path) -> None:
    """The opt-in internet egress (0.0.0.0/0 on 443) reached every private address too:
    other tenants' pods, ingress controllers, cloud private endpoints."""
    new = _planted(tmp_path, LOCAL, {"overlays/local/kube-api.yaml": (
        "  name: kube-api-egress\nspec:\n  egress:\n  - to:\n    - ipBlock:\n        cidr: 192.0.2.1/32\n",
        "  name: kube-api-egress\n  labels:\n    sentsweep/internet-egress: opt-in\nspec:\n  egress:\n  - to:\n"
        "    - ipBlock:\n        cidr: 0.0.0.0/0\n        except:\n        - 169.254.169.254/32\n"
        "        - 10.0.0.0/8\n")})
    assert new == ["NetworkPolicy/kube-api-egress: spec.egress[0]: ipBlock 0.0.0.0/0 opens the internal ranges "
                   "172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 too: list them in its except (internet egress is "
                   "the internet only) [network]"]
    six = _planted(tmp_path / "v6", LOCAL, {"overlays/local/kube-api.yaml": (  # IPv6: unique-local, link-local
        "  name: kube-api-egress\nspec:\n  egress:\n  - to:\n    - ipBlock:\n        cidr: 192.0.2.1/32\n",
        "  name: kube-api-egress\n  labels:\n    sentsweep/internet-egress: opt-in\nspec:\n  egress:\n  - to:\n"
        "    - ipBlock:\n        cidr: ::/0\n        except:\n        - fe80::/10\n")})
    assert six == ["NetworkPolicy/kube-api-egress: spec.egress[0]: ipBlock ::/0 opens the internal ranges fc00::/7 "
                   "too: list them in its except (internet egress is the internet only) [network]"]


def test_the_hf_hub_component_opens_https_but_not_the_metadata_endpoint(tmp_path: Path) -> None:
    """docs/security.md: a team that downloads from the Hugging Face hub adds k8s/components/hf-hub-egress."""
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy, ignore=shutil.ignore_patterns("*.env"))
    team = copy / "hf"
    team.mkdir()
    (team / "kustomization.yaml").write_text("resources:\n- ../overlays/local\n"
                                             "components:\n- ../components/hf-hub-egress\n")
    report = k8s_check.validate([team, copy / "overlays" / "local" / "sweep"])
    assert [str(p) for p in report.problems] == []
    policy = next(o for o in report.rendered[0].objects if o["metadata"]["name"] == "ray-hf-hub-egress")
    assert policy["metadata"]["namespace"] == "sentsweep"
    assert policy["spec"]["egress"] == [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [
        "169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]}}],
        "ports": [{"protocol": "TCP", "port": 443}]}]
    assert "ray-hf-hub-egress" not in {o["metadata"]["name"] for o in k8s_check.render(K8S / "overlays/gpu").objects}


def test_a_tracking_server_with_the_job_runner_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local",), {"base/kustomization.yaml": (
        "  - MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false\n", "")})
    assert new == ["Deployment/mlflow: MLFLOW_SERVER_ENABLE_JOB_EXECUTION is not false: the job runner's processes "
                   "and connections are outside the connection budget [sizing]"]


def test_a_tracking_server_beyond_postgres_or_without_auth_cache_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/gpu",), {"overlays/gpu/kustomization.yaml": (
        "  - MLFLOW_WORKERS=4\n", "  - MLFLOW_WORKERS=8\n")})
    assert new == ["Deployment/mlflow: up to 320 PostgreSQL connections (2 pods incl. surge x 8 workers x 4 engines "
                   "x 5 pool+overflow) exceed max_connections 200 less 10 reserved [sizing]"]
    new = _planted(tmp_path / "cache", ("overlays/local",), {"base/kustomization.yaml": (
        "  - AUTH_CACHE_TTL_SECONDS=60\n", "  - AUTH_CACHE_TTL_SECONDS=0\n")})
    assert new == ["Deployment/mlflow: AUTH_CACHE_TTL_SECONDS is not positive: the basic-auth cache is off and "
                   "every request re-hashes the password [sizing]"]


def test_a_reference_to_a_missing_secret_key_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local",), {"base/secrets/storage.env.example": (
        "AWS_ACCESS_KEY_ID=", "AWS_ACCESS_KEY=")})
    assert new and all("Secret 'storage-credentials' has no key 'AWS_ACCESS_KEY_ID' [references]" in p for p in new)
    assert {p.split(":")[0] for p in new} == {"Job/bootstrap", "RayCluster/sentsweep"}
    new = _planted(tmp_path / "mlflow", ("overlays/local",), {"base/secrets/mlflow-storage.env.example": (
        "AWS_ACCESS_KEY_ID=", "AWS_ACCESS_KEY=")})
    assert new and all("Secret 'mlflow-storage-credentials' has no key 'AWS_ACCESS_KEY_ID' [references]" in p
                       for p in new)
    assert {p.split(":")[0] for p in new} == {"Deployment/mlflow", "Job/bootstrap"}


def test_real_credentials_files_with_placeholders_are_refused(tmp_path: Path) -> None:
    """Once the real credentials files exist (a deployment is being prepared), the examples' values, the
    placeholder image digests and the placeholder API server address are refused."""
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy)
    for example in (copy / "base" / "secrets").glob("*.env.example"):
        shutil.copyfile(example, example.with_suffix(""))
    report = k8s_check.validate([copy / "overlays" / "local", copy / "overlays" / "local" / "sweep"])
    assert report.rendered[0].examples_used == []
    problems = sorted(str(p) for p in report.problems)
    digests = [p for p in problems if p.endswith("carries the placeholder digest [policy]")]
    assert sorted(p for p in problems if p not in digests) == [
        "NetworkPolicy/kube-api-egress: spec.egress[0]: ipBlock 192.0.2.1/32 is the placeholder: put your API "
        "server's addresses in the overlay's kube-api.yaml [policy]",
        "Secret/gcs-redis: data.REDIS_PASSWORD still holds the example's placeholder [policy]",
        "Secret/minio-root: data.MINIO_ROOT_PASSWORD still holds the example's placeholder [policy]",
        "Secret/mlflow-admin: data.MLFLOW_AUTH_ADMIN_PASSWORD still holds the example's placeholder [policy]",
        "Secret/mlflow-admin: data.MLFLOW_FLASK_SERVER_SECRET_KEY still holds the example's placeholder [policy]",
        "Secret/mlflow-storage-credentials: data.AWS_SECRET_ACCESS_KEY still holds the example's placeholder "
        "[policy]",
        "Secret/mlflow-sweeps: data.MLFLOW_TRACKING_PASSWORD still holds the example's placeholder [policy]",
        "Secret/postgres-credentials: data.POSTGRES_PASSWORD still holds the example's placeholder [policy]",
        "Secret/ray-auth: data.auth_token still holds the example's placeholder [policy]",
        "Secret/storage-credentials: data.AWS_SECRET_ACCESS_KEY still holds the example's placeholder [policy]",
    ]
    assert {p.split(":")[0] for p in digests} == {
        "CronJob/postgres-backup", "Deployment/mlflow", "Job/bootstrap", "RayCluster/sentsweep", "RayJob/sweep",
        "StatefulSet/gcs-redis", "StatefulSet/minio", "StatefulSet/postgres"}


#: The tracking server's S3 keys in base/mlflow.yaml.
MLFLOW_S3_KEYS = "".join(f"        - name: {key}\n          valueFrom:\n            secretKeyRef:\n"
                         f"              name: mlflow-storage-credentials\n              key: {key}\n"
                         for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))


def test_a_tracking_server_without_its_own_minio_user_is_caught(tmp_path: Path) -> None:
    """The MLflow server's keys are mlflow-storage-credentials, not the Ray pods'."""
    new = _planted(tmp_path, ("overlays/local",), {"base/mlflow.yaml": (
        MLFLOW_S3_KEYS, MLFLOW_S3_KEYS.replace("mlflow-storage-credentials", "storage-credentials"))})
    where = "Deployment/mlflow: spec.template.spec.containers[mlflow]: the tracking server"
    assert new == [f"{where} holds Secret 'storage-credentials' (the Ray pods' MinIO user, denied MLflow's "
                   "artifacts); it needs only 'mlflow-storage-credentials' [storage]",
                   f"{where}'s AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY do not come from Secret "
                   "'mlflow-storage-credentials' (its own MinIO user, the only one allowed MLflow's artifacts) "
                   "[storage]"]


def _holding_the_mlflow_keys(indent: str) -> str:
    return (f"{indent}- name: AWS_SECRET_ACCESS_KEY_2\n{indent}  valueFrom:\n{indent}    secretKeyRef:\n"
            f"{indent}      name: mlflow-storage-credentials\n{indent}      key: AWS_SECRET_ACCESS_KEY\n")


#: file, an env var of one of its containers (the line after it unique), the container, and that env's indent.
MLFLOW_KEYS_ELSEWHERE = [
    ("base/raycluster.yaml", "          - name: TOKENIZERS_PARALLELISM\n            value: \"false\"\n"
     "          resources:\n            requests:\n              cpu: \"2\"\n",
     "RayCluster/sentsweep: spec.headGroupSpec.template.spec.containers[ray-head]", "          "),
    ("sweep/rayjob.yaml", "            - name: TOKENIZERS_PARALLELISM\n              value: \"false\"\n"
     "            resources:\n              requests:\n                cpu: \"4\"\n",
     "RayJob/sweep: spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[ray-worker]",
     "            "),
    ("base/postgres-backup.yaml", "            - name: KEEP_DAYS\n",
     "CronJob/postgres-backup: spec.jobTemplate.spec.template.spec.containers[pg-dump]", "            "),
]


@pytest.mark.parametrize(("rel", "anchor", "where", "indent"), MLFLOW_KEYS_ELSEWHERE)
def test_the_mlflow_minio_user_outside_the_tracking_server_is_caught(tmp_path: Path, rel: str, anchor: str,
                                                                     where: str, indent: str) -> None:
    """A Ray pod (trial code), a RayJob or the backup holding MLflow's MinIO user could
    overwrite or delete every artifact and registered model in S3."""
    new = _planted(tmp_path, LOCAL, {rel: (anchor, _holding_the_mlflow_keys(indent) + anchor)})
    assert new == [f"{where}: holds Secret 'mlflow-storage-credentials' (the MinIO user of MLflow's artifacts): "
                   "only the tracking server and the bootstrap step (minio-users.sh) may; a trial could overwrite "
                   "or delete every artifact and registered model with it [storage]"]


#: The Deny of the Ray pods' policy in base/bootstrap/minio-users.sh.
RAY_DENY = ('  "{\\"Effect\\": \\"Deny\\", \\"Action\\": [\\"s3:*\\"], \\"Resource\\": '
            '[\\"arn:aws:s3:::$BUCKET/mlflow-artifacts\\", \\"arn:aws:s3:::$BUCKET/mlflow-artifacts/*\\"]}" \\\n')


def test_a_ray_policy_without_the_deny_on_mlflow_artifacts_is_caught(tmp_path: Path) -> None:
    """The Ray pods' MinIO user is denied MLflow's artifacts prefix (a Deny wins)."""
    message = ("Job/bootstrap: spec.template.spec.initContainers[minio-users]: the Ray pods' MinIO policy "
               "(minio-users.sh: put_policy \"$POLICY\") {}: it needs a Deny of s3:* on "
               "arn:aws:s3:::sentsweep/mlflow-artifacts and arn:aws:s3:::sentsweep/mlflow-artifacts/* (MLflow's "
               "--artifacts-destination), or trial code can overwrite and delete MLflow's artifacts [storage]")
    new = _planted(tmp_path, ("overlays/local",), {"base/bootstrap/minio-users.sh": (RAY_DENY, "")})
    assert new == [message.format("has no such Deny")]
    new = _planted(tmp_path / "allow", ("overlays/local",), {"base/bootstrap/minio-users.sh": (
        RAY_DENY, RAY_DENY.replace("Deny", "Allow"))})
    assert new == [message.format("has no such Deny")]
    new = _planted(tmp_path / "bucket", ("overlays/local",), {"base/bootstrap.yaml": (
        "        - name: BUCKET\n          value: sentsweep\n", "        - name: BUCKET\n          value: other\n")})
    assert new == [message.format("has no such Deny")]
    new = _planted(tmp_path / "call", ("overlays/local",), {"base/bootstrap/minio-users.sh": (
        'put_policy "$POLICY" \\\n', 'put_policy "$RAY_POLICY" \\\n')})
    assert new == [message.format("is not created by a put_policy \"$POLICY\" call")]


# -- the credentials files and the bootstrap --------------------------------------------------------------

def test_credentials_files_are_ignored_and_only_examples_committed() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    secrets = sorted(str(p.relative_to(REPO)).removesuffix(".example") for p in K8S.glob("**/secrets/*.env.example"))
    assert len(secrets) == 8, secrets  # one per Secret of base/kustomization.yaml's secretGenerator
    ignored = subprocess.run(["git", "check-ignore", *secrets], cwd=REPO, capture_output=True, text=True)
    assert ignored.stdout.split() == secrets
    examples = subprocess.run(["git", "check-ignore", *(s + ".example" for s in secrets)], cwd=REPO,
                              capture_output=True, text=True)
    assert examples.stdout.strip() == ""
    dockerignore = (REPO / ".dockerignore").read_text().split()
    assert "k8s" in dockerignore and "**/*.env" in dockerignore


def test_the_bootstrap_grants_every_sweep_experiment() -> None:
    job = next(o for o in yaml.safe_load_all((K8S / "base" / "bootstrap.yaml").read_text()) if o["kind"] == "Job")
    env = {e["name"]: e.get("value") for c in job["spec"]["template"]["spec"]["containers"] for e in c["env"]}
    granted = set(env["SWEEP_EXPERIMENTS"].split(","))
    for path in sorted((K8S / "sweep" / "configs").glob("*.yaml")):
        assert yaml.safe_load(path.read_text())["tracking"]["experiment"] in granted, path.name


def test_no_seccomp_profile_and_the_nodes_namespaces_are_caught(tmp_path: Path) -> None:
    """Pod Security's restricted profile asks for them at admission, so the offline check does too: a pod without a
    seccomp profile, on the node's network."""
    new = _planted(tmp_path, ("overlays/local",), {"base/minio.yaml": (
        "        seccompProfile:\n          type: RuntimeDefault\n      containers:\n",
        "      hostNetwork: true\n      containers:\n")})
    assert sorted(new) == [
        "StatefulSet/minio: spec.template.spec.containers[minio]: seccompProfile is not RuntimeDefault (or "
        "Localhost) [policy]",
        "StatefulSet/minio: spec.template.spec: shares the node's namespaces (hostNetwork) [policy]"]


# -- node disk and spot capacity -------------------------------------------------

SPOT = ("overlays/gpu-spot", "overlays/gpu-spot/sweep")


def test_a_container_without_ephemeral_storage_is_caught(tmp_path: Path) -> None:
    """EmptyDirs of up to 70Gi a pod and no ephemeral-storage requests, so the scheduler placed pods
    without counting node disk. An overlay that replaces a container's resources whole must keep it too."""
    new = _planted(tmp_path, ("overlays/local",), {"base/postgres.yaml": (
        "            ephemeral-storage: 128Mi\n", "")})
    assert new == ["StatefulSet/postgres: spec.template.spec.containers[postgres]: no requests for ephemeral-storage "
                   "(its pod's emptyDirs may hold 272Mi of node disk, and the scheduler counts only requests) "
                   "[scheduling]"]
    new = _planted(tmp_path / "overlay", LOCAL, {"overlays/local/raycluster.yaml": (
        "      memory: 3Gi\n      ephemeral-storage: 4Gi\n    limits:\n      cpu: \"1\"\n      memory: 3Gi\n"
        "      ephemeral-storage: 30Gi\n", "      memory: 3Gi\n    limits:\n      cpu: \"1\"\n      memory: 3Gi\n")})
    assert new == ["RayCluster/sentsweep: spec.headGroupSpec.template.spec.containers[ray-head]: no requests and "
                   "limits for ephemeral-storage (its pod's emptyDirs may hold 20992Mi of node disk, and the scheduler "
                   "counts only requests) [scheduling]"]
    new = _planted(tmp_path / "autoscaler", LOCAL, {"base/raycluster.yaml": (
        "        ephemeral-storage: 128Mi  # its own logs (it writes Ray's into the head's /tmp/ray)\n", "")})
    assert new == ["RayCluster/sentsweep: spec.autoscalerOptions: no requests for ephemeral-storage (its pod's "
                   "emptyDirs may hold 20992Mi of node disk, and the scheduler counts only requests) [scheduling]"]


def test_ephemeral_storage_limits_below_the_emptydirs_are_caught(tmp_path: Path) -> None:
    """The kubelet evicts a pod whose disk use passes the sum of its containers' limits: below the sizeLimits, the
    emptyDirs could never fill to their size."""
    new = _planted(tmp_path, ("overlays/local",), {"base/minio.yaml": ("          sizeLimit: 64Mi\n",
                                                                       "          sizeLimit: 1Gi\n")})
    assert new == ["StatefulSet/minio: spec.template.spec: its containers' ephemeral-storage limits (256Mi) are below "
                   "its emptyDirs' sizeLimits (1Gi): the kubelet evicts the pod before they fill [scheduling]"]


#: The start of the head's anti-spot affinity in k8s/components/spot-gpu/raycluster.yaml.
HEAD_OFF_SPOT = ("  path: /spec/headGroupSpec/template/spec/affinity\n  value:\n    nodeAffinity:\n"
                 "      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n")


def test_a_pod_that_may_land_on_spot_nodes_is_caught(tmp_path: Path) -> None:
    """With a spot group deployed, every other pod excludes each spot label (Karpenter's too) in every
    required term; a term is ORed with the others, so one more term without the exclusions reopens spot nodes."""
    new = _planted(tmp_path, SPOT, {"components/spot-gpu/off-spot.yaml": (
        "              - {key: karpenter.sh/capacity-type, operator: NotIn, values: [spot]}\n", "")})
    suffix = ("spec.template.spec: may be placed on spot nodes (karpenter.sh/capacity-type=spot): a spot group is "
              "deployed, and every other pod needs required nodeAffinity excluding each spot label in every "
              "nodeSelectorTerm [scheduling]")
    assert new == [f"{oid}: {suffix}" for oid in ("Deployment/mlflow", "Job/bootstrap", "StatefulSet/gcs-redis",
                                                  "StatefulSet/minio", "StatefulSet/postgres")]
    new = _planted(tmp_path / "or", SPOT, {"components/spot-gpu/raycluster.yaml": (
        HEAD_OFF_SPOT, HEAD_OFF_SPOT + "        - matchExpressions:\n"
                                       "          - {key: kubernetes.io/os, operator: In, values: [linux]}\n")})
    labels = ", ".join(f"{k}={v}" for k, v in SPOT_LABELS.items())
    assert new == [f"RayCluster/sentsweep: spec.headGroupSpec.template.spec: may be placed on spot nodes ({labels}): a "
                   "spot group is deployed, and every other pod needs required nodeAffinity excluding each spot label "
                   "in every nodeSelectorTerm [scheduling]"]


def test_a_wildcard_in_the_tracking_servers_host_names_is_caught(tmp_path: Path) -> None:
    spelt = "mlflow.$POD_NAMESPACE.svc.cluster.local:*,"  # no bare mlflow.NAMESPACE: "ml" would make it mlflow.ml
    new = _planted(tmp_path, ("overlays/local",), {"base/mlflow.yaml": (spelt, spelt + "mlflow.*,")})
    assert new == ["Deployment/mlflow: spec.template.spec.containers[mlflow]: --allowed-hosts mlflow.*: a wildcard "
                   "in a host name also admits names anyone can register (DNS rebinding); spell the names out (a "
                   "wildcard port is fine) [policy]"]


def test_allowed_host_patterns_are_read_from_the_flag_or_the_env() -> None:
    flag = {"command": ["/bin/sh", "-c"], "args": ["exec mlflow server --allowed-hosts=\"a,b:*\" --port 1"]}
    env = {"command": ["mlflow", "server"], "env": [{"name": "MLFLOW_SERVER_ALLOWED_HOSTS", "value": "c, d"}]}
    assert allowed_hosts(flag) == ["a", "b:*"]
    assert allowed_hosts(env) == ["c", "d"]
    assert allowed_hosts({"command": ["mlflow", "server"]}) is None
    assert [host_part(p) for p in ("m.*:5000", "m:*", "[::1]:*", "fd00::1")] == ["m.*", "m", "[::1]", "fd00::1"]
