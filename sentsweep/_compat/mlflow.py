"""MLflow's names outside its documented API, each behind one function that imports it (see
:mod:`sentsweep._compat`)."""

from __future__ import annotations

from typing import Any


def request_once(uri: str, endpoint: str, params: dict[str, Any], timeout: float) -> Any:
    """``GET endpoint`` on the tracking server ``uri`` with the client's credentials and TLS settings, once (no
    retry), any status returned (a ``requests`` response); raises what the connection raises."""
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    return http_request(get_default_host_creds(uri), endpoint, "GET", params=params, max_retries=0, timeout=timeout,
                        raise_on_status=False)


def dataset_context_tag() -> str:
    """The key of the input tag that says in which role (training, evaluation) a run used a dataset."""
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    return MLFLOW_DATASET_CONTEXT
