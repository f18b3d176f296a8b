"""GCS fault tolerance in the manifests: every Ray cluster keeps its GCS state in the namespace's Redis, which only Ray
heads reach. Planted mistakes go through the whole pipeline (render, schema, policy), as in test_manifests.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.k8s_check.test_manifests import GPU, K8S, LOCAL, _planted
from tools import k8s_check
from tools.k8s_check.gcs_ft import _in_cluster, _parse_address
from tools.k8s_check.objects import pod_specs

#: The options in base/raycluster.yaml (and, indented 2 more, in sweep/rayjob.yaml).
OPTIONS = ("  gcsFaultToleranceOptions:  # the GCS's state in Redis (gcs-redis.yaml): a restarted head keeps the "
           "workers\n    redisAddress: gcs-redis:6379\n    redisUsername:  # the GCS's own ACL user in Redis, "
           "limited to what Ray needs\n      valueFrom:\n        secretKeyRef:\n          name: gcs-redis\n"
           "          key: REDIS_USERNAME\n    redisPassword:\n      valueFrom:\n        secretKeyRef:\n"
           "          name: gcs-redis\n          key: REDIS_PASSWORD\n")
#: The GCS user's line in base/gcs-redis.yaml.
GCS_USER = ("          user $REDIS_USERNAME on >$REDIS_PASSWORD resetchannels ~RAY* ~DUMMY -@all +@hash +del "
            "+unlink +scan +incrby +ping +info\n")
JOB_OPTIONS = "".join("  " + line + "\n" for line in OPTIONS.replace("(gcs-redis.yaml)", "(k8s/base/gcs-redis.yaml)")
                      .splitlines())
HEAD_LABEL = '          sentsweep/gcs-redis-client: "true"  # the heads alone reach the GCS Redis\n'
#: The start of the gpu group's pod template in base/raycluster.yaml.
GPU_LABELS = ("  - groupName: gpu\n    replicas: 0\n    minReplicas: 0\n    maxReplicas: 4\n    rayStartParams: {}\n"
              "    template:\n      metadata:\n        labels:\n")


@pytest.fixture(scope="module")
def gpu_objects() -> list[dict]:
    return [o for path in ("overlays/gpu", "overlays/gpu/sweep") for o in k8s_check.render(K8S / path).objects]


def test_every_ray_cluster_keeps_its_gcs_in_the_namespaces_redis(gpu_objects: list[dict]) -> None:
    clusters = [o["spec"] if o["kind"] == "RayCluster" else o["spec"]["rayClusterSpec"]
                for o in gpu_objects if o["kind"] in ("RayCluster", "RayJob")]
    assert len(clusters) == 2
    for spec in clusters:
        assert spec["gcsFaultToleranceOptions"] == {
            "redisAddress": "gcs-redis:6379",
            "redisUsername": {"valueFrom": {"secretKeyRef": {"name": "gcs-redis", "key": "REDIS_USERNAME"}}},
            "redisPassword": {"valueFrom": {"secretKeyRef": {"name": "gcs-redis", "key": "REDIS_PASSWORD"}}}}
    labelled = sorted(f"{o['kind']} {p.where}" for o in gpu_objects for p in pod_specs(o)
                      if p.labels.get("sentsweep/gcs-redis-client") == "true")
    assert labelled == ["RayCluster spec.headGroupSpec.template.spec",
                        "RayJob spec.rayClusterSpec.headGroupSpec.template.spec"]  # the heads, no worker
    redis = next(o for o in gpu_objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == "gcs-redis")
    pod = redis["spec"]["template"]["spec"]
    assert (pod["serviceAccountName"], pod["priorityClassName"]) == ("gcs-redis", "sentsweep-platform")
    container = pod["containers"][0]
    script = container["args"][0]
    assert script.startswith("umask 077; exec redis-server - <<EOF\n")  # the password on stdin, files private
    assert "user default off resetpass resetkeys -@all\n" in script and GCS_USER.strip() + "\n" in script
    assert "requirepass" not in script and "appendonly yes\n" in script
    assert "$(" not in " ".join(container["command"] + container["args"])  # no Kubernetes expansion into argv
    resources = container["resources"]
    assert [resources["requests"][k] for k in ("cpu", "memory")] == [resources["limits"][k] for k in ("cpu", "memory")]
    assert pod["securityContext"]["fsGroupChangePolicy"] == "OnRootMismatch"
    job = next(o for o in gpu_objects if o["kind"] == "RayJob")["spec"]
    assert job["submitterConfig"]["backoffLimit"] == 6, "one retry per dropped log follow, not per minute"


@pytest.mark.parametrize(("rel", "old", "oid", "prefix"), [
    ("base/raycluster.yaml", OPTIONS, "RayCluster/sentsweep", "spec"),
    ("sweep/rayjob.yaml", JOB_OPTIONS, "RayJob/sweep", "spec.rayClusterSpec")])
def test_a_cluster_without_gcs_fault_tolerance_is_caught(tmp_path: Path, rel: str, old: str, oid: str,
                                                         prefix: str) -> None:
    """Without it a head restart loses the cluster's state, and the new head restarts every worker with its trials."""
    new = _planted(tmp_path, LOCAL, {rel: (old, "")})
    assert new == [f"{oid}: {prefix}: no GCS fault tolerance: set gcsFaultToleranceOptions (redisAddress, "
                   "redisPassword from a Secret), or a head restart loses the cluster's state and restarts every "
                   "worker with its trials [gcs-ft]"]


def test_the_older_annotation_instead_of_the_options_is_caught(tmp_path: Path) -> None:
    """KubeRay's ray.io/ft-enabled takes the password from rayStartParams or the head's env; beside the options
    KubeRay refuses the cluster."""
    annotated = "  labels:\n    app.kubernetes.io/name: ray\n  annotations:\n    ray.io/ft-enabled: \"true\"\n"
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": ("  labels:\n    app.kubernetes.io/name: ray\n",
                                                              annotated)})
    assert new == ["RayCluster/sentsweep: metadata.annotations: ray.io/ft-enabled is refused with "
                   "gcsFaultToleranceOptions (KubeRay would reconcile no pod of the cluster) [gcs-ft]"]
    spec = "spec:\n  rayVersion: \"2.60.0\"\n  authOptions:\n    mode: token\n    secretName: ray-auth\n"
    new = _planted(tmp_path / "alone", LOCAL, {"base/raycluster.yaml": (
        "  labels:\n    app.kubernetes.io/name: ray\n" + spec + OPTIONS, annotated + spec)})
    assert len(new) == 1 and new[0].startswith("RayCluster/sentsweep: spec: no GCS fault tolerance: "), new


def test_a_plaintext_or_unresolved_redis_password_is_caught(tmp_path: Path) -> None:
    secret = "      valueFrom:\n        secretKeyRef:\n          name: gcs-redis\n          key: REDIS_PASSWORD\n"
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": (secret, "      value: hunter2hunter2\n")})
    assert new == ["RayCluster/sentsweep: spec.gcsFaultToleranceOptions.redisPassword: a plaintext value (use "
                   "valueFrom.secretKeyRef) [gcs-ft]"]
    new = _planted(tmp_path / "key", LOCAL, {"base/raycluster.yaml": (secret, secret.replace("REDIS_PASSWORD",
                                                                                             "PASSWORD"))})
    assert new == ["RayCluster/sentsweep: gcsFaultToleranceOptions.redisPassword: Secret 'gcs-redis' has no key "
                   "'PASSWORD' [references]",
                   "StatefulSet/gcs-redis: spec.template.spec: the GCS user ($REDIS_USERNAME) has no password `>$VAR` "
                   "with VAR from Secret 'gcs-redis' key 'PASSWORD', the clusters' redisPassword: no head could log in "
                   "[gcs-ft]"], new
    new = _planted(tmp_path / "none", LOCAL, {"base/raycluster.yaml": ("    redisPassword:\n" + secret, "")})
    assert new == ["RayCluster/sentsweep: spec.gcsFaultToleranceOptions: no redisPassword: give the Redis password "
                   "from a Secret (valueFrom.secretKeyRef) [gcs-ft]"]


def test_what_kuberay_refuses_beside_the_options_is_caught(tmp_path: Path) -> None:
    """KubeRay sets the head's RAY_REDIS_ADDRESS and REDIS_PASSWORD itself and refuses a cluster that sets them."""
    env = "          - name: TOKENIZERS_PARALLELISM\n            value: \"false\"\n          resources:\n" \
          "            requests:\n              cpu: \"2\"\n"
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": (
        env, "          - name: RAY_REDIS_ADDRESS\n            value: gcs-redis:6379\n" + env),
        "sweep/rayjob.yaml": ("        num-cpus: \"0\"\n", "        num-cpus: \"0\"\n        redis-password: x\n")})
    assert new == [
        "RayCluster/sentsweep: spec.headGroupSpec: template.spec.containers[ray-head]: env RAY_REDIS_ADDRESS is "
        "refused with gcsFaultToleranceOptions (KubeRay sets it from the options) [gcs-ft]",
        "RayJob/sweep: spec.rayClusterSpec.headGroupSpec: rayStartParams.redis-password is refused with "
        "gcsFaultToleranceOptions: give redisPassword [gcs-ft]"], new


def test_a_shared_storage_namespace_or_another_backend_is_caught(tmp_path: Path) -> None:
    """Each cluster needs its own key prefix (KubeRay's default: the RayCluster's UID), or deleting one cluster
    deletes another's GCS state: every cluster of a RayJob would share a fixed one."""
    address = "      redisAddress: gcs-redis:6379\n"
    new = _planted(tmp_path, LOCAL, {"sweep/rayjob.yaml": (
        address, address + "      externalStorageNamespace: sweeps\n")})
    assert new == ["RayJob/sweep: spec.rayClusterSpec.gcsFaultToleranceOptions.externalStorageNamespace: every "
                   "cluster of this RayJob (each retry, each sweep of a nameSuffix) would share the key prefix, and "
                   "deleting one deletes the others' GCS state: leave it out (the cluster's UID) [gcs-ft]"]
    new = _planted(tmp_path / "rocksdb", LOCAL, {"base/raycluster.yaml": (
        "    redisAddress: gcs-redis:6379\n", "    backend: rocksdb\n    redisAddress: gcs-redis:6379\n")})
    assert new == ["RayCluster/sentsweep: spec.gcsFaultToleranceOptions.backend: rocksdb is alpha in KubeRay: keep "
                   "the GCS in Redis [gcs-ft]"]


def test_a_redis_address_without_its_service_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": ("    redisAddress: gcs-redis:6379\n",
                                                              "    redisAddress: gcs-redis:6380\n")})
    assert new == ["RayCluster/sentsweep: spec.gcsFaultToleranceOptions.redisAddress: gcs-redis:6380: Service "
                   "'gcs-redis' has no port 6380 [gcs-ft]"]
    new = _planted(tmp_path / "name", LOCAL, {"sweep/rayjob.yaml": (
        "      redisAddress: gcs-redis:6379\n", "      redisAddress: redis://gcs-redis.sentsweep.svc.cluster.local\n")})
    assert new == []  # the same Service, by its full name and the default port
    new = _planted(tmp_path / "other", LOCAL, {"sweep/rayjob.yaml": (
        "      redisAddress: gcs-redis:6379\n", "      redisAddress: gcs-redis.other.svc:6379\n")})
    assert new == ["RayJob/sweep: spec.rayClusterSpec.gcsFaultToleranceOptions.redisAddress: "
                   "gcs-redis.other.svc:6379: no Service 'gcs-redis' is deployed with it [gcs-ft]"]


def test_a_worker_let_into_the_gcs_redis_is_caught(tmp_path: Path) -> None:
    """A worker runs trial code: it must not reach the store of the cluster's state, password or not."""
    new = _planted(tmp_path, GPU, {"base/raycluster.yaml": (
        GPU_LABELS, GPU_LABELS + '          sentsweep/gcs-redis-client: "true"\n')})
    assert new == ["NetworkPolicy/gcs-redis-ingress: spec.ingress[0]: admits RayCluster/sentsweep "
                   "spec.workerGroupSpecs[0].template.spec to the GCS Redis (StatefulSet/gcs-redis): only Ray heads "
                   "may reach it (a worker runs trial code) [gcs-ft]"], new
    rule = "          sentsweep/gcs-redis-client: \"true\"\n    ports:\n    - protocol: TCP\n      port: 6379\n"
    new = _planted(tmp_path / "namespaces", LOCAL, {"base/network-policies.yaml": (rule, rule.replace(
        "    ports:\n", "    - namespaceSelector: {}\n    ports:\n"))})
    assert new == ["NetworkPolicy/gcs-redis-ingress: spec.ingress[0]: admits pods of other namespaces "
                   "(namespaceSelector) to the GCS Redis (StatefulSet/gcs-redis): only Ray heads may reach it (a "
                   "worker runs trial code) [gcs-ft]"], new


def test_a_head_that_cannot_reach_its_redis_is_caught(tmp_path: Path) -> None:
    """Without the label the head's GCS cannot reach Redis: the head would not start at all."""
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": (HEAD_LABEL, "")})
    where = "RayCluster/sentsweep: spec.gcsFaultToleranceOptions.redisAddress: no"
    assert new == [f"{where} egress NetworkPolicy lets the head (spec.headGroupSpec.template.spec) out to the Redis "
                   "pods [gcs-ft]",
                   f"{where} ingress NetworkPolicy of the Redis pods lets the head (spec.headGroupSpec.template.spec) "
                   "in [gcs-ft]"], new


def test_redis_addresses_are_read_as_kuberay_and_ray_read_them() -> None:
    assert _parse_address("gcs-redis:6379") == ("gcs-redis", 6379)
    assert _parse_address("redis://gcs-redis") == ("gcs-redis", 6379)
    assert _parse_address("rediss://user:pw@gcs-redis.ns.svc:7000,other:1") == ("gcs-redis.ns.svc", 7000)
    assert _parse_address("[fd00::5]:6379") == ("fd00::5", 6379)
    assert [_in_cluster(h) for h in ("gcs-redis", "gcs-redis.ns", "gcs-redis.ns.svc", "gcs-redis.ns.svc.cluster.local",
                                     "redis.example.com", "10.0.0.5", "fd00::5")] == [True, True, True, True, False,
                                                                                       False, False]


def test_the_shipped_crd_names_every_field_of_the_options(tmp_path: Path) -> None:
    """KubeRay 1.7.0's schema holds gcsFaultToleranceOptions field by field, so the strict pass catches a typo."""
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": ("    redisAddress: gcs-redis:6379\n",
                                                              "    redisAdress: gcs-redis:6379\n")})
    assert new == [
        "RayCluster/sentsweep: spec.gcsFaultToleranceOptions.redisAdress: unknown field (did you mean 'redisAddress'?) "
        "[strict]",
        "RayCluster/sentsweep: spec.gcsFaultToleranceOptions: no redisAddress (the Redis that keeps the GCS state, "
        "gcs-redis:6379) [gcs-ft]"], new


REDIS_REQUESTS = "          requests:\n            cpu: \"1\"\n            memory: 2Gi\n"
REDIS_INGRESS = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: gcs-redis-ingress\n"
WORKERS_ADMITTED = ("admits RayCluster/sentsweep spec.workerGroupSpecs[0].template.spec, RayCluster/sentsweep "
                    "spec.workerGroupSpecs[1].template.spec, RayJob/sweep spec.rayClusterSpec.workerGroupSpecs[0]."
                    "template.spec, RayJob/sweep spec.rayClusterSpec.workerGroupSpecs[1].template.spec to the GCS "
                    "Redis (StatefulSet/gcs-redis): only Ray heads may reach it (a worker runs trial code) [gcs-ft]")


def test_a_gcs_redis_that_requests_less_than_its_limit_is_caught(tmp_path: Path) -> None:
    """Under memory pressure the kubelet evicts pods that use more than they request first, before priority: Redis
    must request its limit (Guaranteed QoS), or it goes first and takes every head with it."""
    new = _planted(tmp_path, GPU, {"base/gcs-redis.yaml": (REDIS_REQUESTS, REDIS_REQUESTS.replace("2Gi", "256Mi"))})
    assert new == ["StatefulSet/gcs-redis: spec.template.spec.containers[redis]: memory request 256Mi is below its "
                   "limit 2Gi: request the limit (Guaranteed QoS), or the kubelet evicts the GCS Redis first under "
                   "memory pressure, whatever its priority, and every Ray head may restart [gcs-ft]"], new
    new = _planted(tmp_path / "cpu", GPU, {"base/gcs-redis.yaml": (REDIS_REQUESTS, REDIS_REQUESTS.replace('"1"',
                                                                                                        "100m"))})
    assert len(new) == 1 and "cpu request 100m is below its limit 1" in new[0], new


def test_a_policy_that_selects_the_redis_by_match_expressions_is_read(tmp_path: Path) -> None:
    """A policy's podSelector by matchExpressions selects the Redis pods as surely as one by matchLabels."""
    policy = ("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: by-expression\nspec:\n"
              "  podSelector:\n    matchExpressions:\n    - key: app.kubernetes.io/name\n      operator: In\n"
              "      values: [gcs-redis]\n  policyTypes: [\"Ingress\"]\n  ingress:\n  - from:\n    - podSelector:\n"
              "        matchLabels:\n          sentsweep/ray-node: \"true\"\n---\n")
    new = _planted(tmp_path, GPU, {"base/network-policies.yaml": (REDIS_INGRESS, policy + REDIS_INGRESS)})
    assert new == [f"NetworkPolicy/by-expression: spec.ingress[0]: {WORKERS_ADMITTED}"], new
    other = policy.replace("operator: In", "operator: NotIn")  # selects every pod but Redis
    assert _planted(tmp_path / "notin", GPU, {"base/network-policies.yaml": (REDIS_INGRESS, other + REDIS_INGRESS)}) \
        == []


def test_a_peer_by_match_expressions_is_read_like_one_by_match_labels(tmp_path: Path) -> None:
    """An ingress peer of the Redis by matchExpressions: one that selects the workers is caught by name, one that
    selects the heads alone passes, and an empty podSelector (every pod) is caught."""
    rule = "      app.kubernetes.io/name: gcs-redis\n  policyTypes: [\"Ingress\"]\n  ingress:\n  - from:\n"
    heads = "    - podSelector:\n        matchLabels:\n          sentsweep/gcs-redis-client: \"true\"\n"

    def peer(selector: str) -> dict[str, tuple[str, str]]:
        return {"base/network-policies.yaml": (rule + heads, rule + selector)}

    workers = ("    - podSelector:\n        matchExpressions:\n        - key: sentsweep/ray-node\n"
               "          operator: Exists\n")
    new = _planted(tmp_path, GPU, peer(workers))
    assert new == [f"NetworkPolicy/gcs-redis-ingress: spec.ingress[0]: {WORKERS_ADMITTED}"], new
    only_heads = ("    - podSelector:\n        matchExpressions:\n        - key: sentsweep/gcs-redis-client\n"
                  "          operator: In\n          values: [\"true\"]\n")
    assert _planted(tmp_path / "heads", GPU, peer(only_heads)) == []
    everyone = _planted(tmp_path / "all", GPU, peer("    - podSelector: {}\n"))
    assert any("admits every pod of the namespace (an empty podSelector)" in m for m in everyone), everyone


def test_a_port_range_that_holds_the_redis_port_is_read(tmp_path: Path) -> None:
    """``endPort``: a rule on ports 6000-7000 admits its peers to Redis on 6379."""
    redis_rule = "      app.kubernetes.io/name: gcs-redis\n  policyTypes: [\"Ingress\"]\n  ingress:\n  - from:\n" \
                 "    - podSelector:\n        matchLabels:\n          sentsweep/gcs-redis-client: \"true\"\n" \
                 "    ports:\n    - protocol: TCP\n      port: 6379\n"
    workers = ("  - from:\n    - podSelector:\n        matchLabels:\n          sentsweep/ray-node: \"true\"\n"
               "    ports:\n    - protocol: TCP\n      port: 6000\n      endPort: 7000\n")
    new = _planted(tmp_path, GPU, {"base/network-policies.yaml": (
        redis_rule, redis_rule + workers)})
    assert new == [f"NetworkPolicy/gcs-redis-ingress: spec.ingress[1]: {WORKERS_ADMITTED}"], new


def test_a_gcs_redis_without_the_clusters_login_or_with_it_on_a_command_line_is_caught(tmp_path: Path) -> None:
    """Redis's GCS user is the clusters' redisUsername with their redisPassword, both from the Secret, and Redis reads
    them from standard input: a command line is readable by every process of the node."""
    new = _planted(tmp_path, LOCAL, {"base/gcs-redis.yaml": (GCS_USER, "")})
    assert new == ["StatefulSet/gcs-redis: spec.template.spec: no `user $VAR` line with VAR from Secret 'gcs-redis' "
                   "key 'REDIS_USERNAME', the clusters' redisUsername: no head could log in [gcs-ft]"], new
    secret = "        - name: REDIS_PASSWORD\n          valueFrom:\n            secretKeyRef:\n" \
             "              name: gcs-redis\n"
    new = _planted(tmp_path / "other", LOCAL, {"base/gcs-redis.yaml": (secret, secret.replace("name: gcs-redis",
                                                                                               "name: ray-auth"))})
    assert ("StatefulSet/gcs-redis: spec.template.spec: the GCS user ($REDIS_USERNAME) has no password `>$VAR` with "
            "VAR from Secret 'gcs-redis' key 'REDIS_PASSWORD', the clusters' redisPassword: no head could log in "
            "[gcs-ft]") in new, new
    new = _planted(tmp_path / "off", LOCAL, {"base/gcs-redis.yaml": (GCS_USER, GCS_USER.replace(" on ", " off "))})
    assert new == ["StatefulSet/gcs-redis: spec.template.spec: the GCS user ($REDIS_USERNAME) is not `on`: no head "
                   "could log in [gcs-ft]"], new
    new = _planted(tmp_path / "argv", LOCAL, {"base/gcs-redis.yaml": (
        GCS_USER, GCS_USER + "          masterauth $(REDIS_PASSWORD)\n")})
    assert new == ["StatefulSet/gcs-redis: spec.template.spec.containers[redis]: $(REDIS_PASSWORD) puts a Secret on "
                   "the command line, which every process of the node may read: give it in the configuration Redis "
                   "reads from standard input [gcs-ft]"], new
    heredoc = "redis-server - <<EOF"
    new = _planted(tmp_path / "quoted", LOCAL, {"base/gcs-redis.yaml": (heredoc, heredoc.replace("EOF", "'EOF'"))})
    assert new == ["StatefulSet/gcs-redis: spec.template.spec: a quoted here-document (<<'EOF') hands its `$VAR`s (the "
                   "login) to Redis unexpanded: leave its delimiter unquoted [gcs-ft]"], new
    new = _planted(tmp_path / "flag", LOCAL, {"base/gcs-redis.yaml": (
        "exec redis-server - <<EOF", 'exec redis-server - --requirepass "$REDIS_PASSWORD" <<EOF')})
    assert new == ["StatefulSet/gcs-redis: spec.template.spec.containers[redis]: --requirepass puts the password on "
                   "redis-server's command line: give `requirepass $VAR` in the configuration it reads from standard "
                   "input [gcs-ft]"], new


def test_a_usable_default_user_or_an_unlimited_gcs_user_is_caught(tmp_path: Path) -> None:
    """Any client that reaches Redis could log in as a usable default user; a GCS user with admin or dangerous commands,
    or every key, lets trial code on a head flush, reconfigure or watch every cluster's state."""
    default = "          user default off resetpass resetkeys -@all\n"
    usable = ("StatefulSet/gcs-redis: spec.template.spec: the default user is usable (no `user default off` line): any "
              "client that reaches Redis logs in with every command: add `user default off resetpass resetkeys -@all` "
              "[gcs-ft]")
    assert _planted(tmp_path, LOCAL, {"base/gcs-redis.yaml": (default, "")}) == [usable]
    assert _planted(tmp_path / "on", LOCAL, {"base/gcs-redis.yaml": (default, default + "          user default on "
                                                                     "nopass\n")}) == [usable]
    broad = "StatefulSet/gcs-redis: spec.template.spec: the GCS user ($REDIS_USERNAME) may run or reach more than " \
            "Ray's GCS needs ({}): a head that runs trial code could flush, reconfigure or watch Redis, or reach " \
            "every key: grant commands one by one or by data type (+@hash), on keys that start with RAY [gcs-ft]"
    for i, (old, new_rules, shown) in enumerate([
            ("-@all +@hash", "+@all", "+@all"), ("~RAY* ~DUMMY", "~*", "~*"),
            ("+info", "+info +flushall", "+flushall"), ("-@all", "allcommands", "allcommands"),
            ("+info", "+info +CONFIG|SET +@keyspace", "+CONFIG|SET +@keyspace"),
            ("+ping", "+ping (~* +@all)", "(~* +@all)")]):
        new = _planted(tmp_path / str(i), LOCAL, {"base/gcs-redis.yaml": (GCS_USER, GCS_USER.replace(old, new_rules))})
        assert new == [broad.format(shown)], new
    options = _planted(tmp_path / "cluster", LOCAL, {"base/raycluster.yaml": (OPTIONS, OPTIONS.replace(
        "    redisUsername:  # the GCS's own ACL user in Redis, limited to what Ray needs\n      valueFrom:\n        "
        "secretKeyRef:\n          name: gcs-redis\n          key: REDIS_USERNAME\n", ""))})
    assert options == [
        "RayCluster/sentsweep: spec.gcsFaultToleranceOptions: no redisUsername: the GCS logs in as Redis's default "
        "user, which may run every command: give it the Redis's GCS user (valueFrom.secretKeyRef, gcs-redis.yaml) "
        "[gcs-ft]",
        "StatefulSet/gcs-redis: spec.template.spec: no `requirepass $VAR` line with VAR from Secret 'gcs-redis' key "
        "'REDIS_PASSWORD', the clusters' redisPassword: Redis would ask no password, or another one [gcs-ft]"], options


def test_an_ip_address_or_a_short_service_name_as_redis_address_is_read(tmp_path: Path) -> None:
    """An IP address escapes the Service check; ``NAME.NAMESPACE`` resolves in the cluster like
    ``NAME.NAMESPACE.svc``."""
    address = "    redisAddress: gcs-redis:6379\n"
    new = _planted(tmp_path, LOCAL, {"base/raycluster.yaml": (address, "    redisAddress: 10.96.0.50:6379\n")})
    assert new == ["RayCluster/sentsweep: spec.gcsFaultToleranceOptions.redisAddress: 10.96.0.50:6379: an IP address, "
                   "which the check cannot follow to a Service and which changes when the Service is recreated: name "
                   "the Service (gcs-redis:6379) [gcs-ft]"], new
    new = _planted(tmp_path / "short", LOCAL, {"base/raycluster.yaml": (address,
                                                                         "    redisAddress: nosuch.sentsweep\n")})
    assert new == ["RayCluster/sentsweep: spec.gcsFaultToleranceOptions.redisAddress: nosuch.sentsweep: no Service "
                   "'nosuch' is deployed with it [gcs-ft]"], new
    same = "    redisAddress: gcs-redis.sentsweep\n"
    assert _planted(tmp_path / "same", LOCAL, {"base/raycluster.yaml": (address, same)}) == []


def test_a_head_let_out_to_every_pod_of_the_namespace_reaches_its_redis(tmp_path: Path) -> None:
    """``to: [{podSelector: {}}]`` lets the heads out to every pod of the namespace, the Redis pods among them."""
    peer = "  - to:\n    - podSelector:\n        matchLabels:\n          app.kubernetes.io/name: gcs-redis\n"
    assert _planted(tmp_path, LOCAL, {"base/network-policies.yaml": (peer, "  - to:\n    - podSelector: {}\n")}) == []
