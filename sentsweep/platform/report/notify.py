"""Webhook notifications of a sweep (``notify:``): its end, failure, interruption or spent budget, as a
Slack-compatible JSON POST. The URL is a secret read from ``notify.webhook_env`` when sending, never stored, shown
only as ``scheme://host/***``. Sending never fails the sweep: what still fails after the retries is one warning."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sentsweep.credentials import MASK, mask_text, secret_values
from sentsweep.platform.report.winner import best_label, result_label
from sentsweep.platform.results import counts_text, finite_number, metric_value, rank_results
from sentsweep.tracking.names import figure

if TYPE_CHECKING:
    from sentsweep.platform.config import NotifyConfig, SweepConfig
    from sentsweep.platform.outcome import SweepOutcome
    from sentsweep.tracking.vocabulary import SweepState

#: The event a parent run's end state sends (``running`` sends none).
STATE_EVENTS: dict[str, str] = {"finished": "end", "failed": "failure", "crashed": "failure",
                                "interrupted": "interrupted"}


class NotifyError(Exception):
    """A notification that was not delivered (its message never holds the URL)."""


@dataclass
class SweepNotice:
    event: str
    sweep: str
    status: str
    metric: str
    mlflow_run_id: str
    sweep_folder: str
    best_trial: str | None = None
    best_value: float | None = None
    reason: str | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        best = ("no best trial" if self.best_value is None
                else f"best {self.metric} {figure(self.best_value)} (trial {self.best_trial})")
        what = {"end": f"finished: {best}", "budget": "spent its budget",
                "interrupted": "was interrupted", "failure": f"{self.status}"}[self.event]
        parts = [f"sentsweep: sweep {self.sweep} {what}", self.reason,
                 counts_text(self.counts),
                 f"MLflow run {self.mlflow_run_id}; folder {self.sweep_folder}"]
        return "; ".join(part for part in parts if part)


def masked_url(url: str) -> str:
    parts, port = urlsplit(url), ""
    with contextlib.suppress(ValueError):  # a port that is no number
        port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme or '?'}://{parts.hostname or '?'}{port}/{MASK}"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: urllib would turn the POST into a GET of any address the receiver names."""

    def redirect_request(self, *args: Any) -> None:
        return None


def post_json(url: str, body: dict[str, Any], *, timeout_s: float, retries: int, backoff_s: float = 0.5) -> int:
    """POST ``body`` as JSON; the attempts it took. :class:`NotifyError` (never naming the URL) when all failed or
    the answer says not to retry (HTTP 4xx but 429)."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise NotifyError("the webhook URL is not an http(s) URL")
    request = urllib.request.Request(url, data=json.dumps(body, allow_nan=False).encode(), method="POST", headers={
        "Content-Type": "application/json; charset=utf-8", "User-Agent": "sentsweep-notify"})
    opener = urllib.request.build_opener(_NoRedirects)
    for attempt in range(1, retries + 2):
        try:
            with opener.open(request, timeout=timeout_s) as answer:
                answer.read()
            return attempt
        except (http.client.InvalidURL, ValueError):  # urllib's message quotes the URL's path, the secret part
            raise NotifyError(f"the webhook URL holds what no URL may (a space, a control character): refused "
                              f"after {attempt} attempt{'s' * (attempt > 1)}") from None
        except (OSError, http.client.HTTPException) as exc:
            code = exc.code if isinstance(exc, urllib.error.HTTPError) else None
            retryable = code is None or code == 429 or code >= 500
            if attempt > retries or not retryable:
                what = f"HTTP {code}" if code else str(getattr(exc, "reason", None) or exc) or type(exc).__name__
                raise NotifyError(f"{what} after {attempt} attempt{'s' * (attempt > 1)}") from None
            time.sleep(backoff_s * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # pragma: no cover


class SweepNotifier:
    """Sends one sweep's notifications (nothing when ``webhook_env`` is not set)."""

    def __init__(self, settings: NotifyConfig, sweep: str, metric: str, mode: str, mlflow_run_id: str,
                 sweep_folder: str, *, echo: Callable[[str], None] = print, environ: Mapping[str, str] | None = None,
                 backoff_s: float = 0.5) -> None:
        self.base = {"sweep": sweep, "metric": metric, "mlflow_run_id": mlflow_run_id,
                     "sweep_folder": mask_text(sweep_folder)}
        self.settings, self.mode, self.echo, self.backoff_s = settings, mode, echo, backoff_s
        self.environ = os.environ if environ is None else environ
        self.sent: list[str] = []  # the events delivered, in order

    @classmethod
    def for_sweep(cls, config: SweepConfig, sweep: str, mlflow_run_id: str, sweep_folder: str,
                  echo: Callable[[str], None] = print) -> SweepNotifier:
        """The notifier of a sweep; says once when its variable holds no URL."""
        notifier = cls(config.notify, sweep, config.metric, config.mode, mlflow_run_id, sweep_folder, echo=echo)
        if config.notify.webhook_env and notifier.url is None:
            echo(f"notify: ${config.notify.webhook_env} is not set; no notifications are sent")
        return notifier

    @property
    def url(self) -> str | None:
        return (self.environ.get(self.settings.webhook_env) or None) if self.settings.webhook_env else None

    def sweep_ended(self, state: SweepState, reason: str | None = None, outcome: SweepOutcome | None = None) -> bool:
        best_trial, best_value, counts = None, None, {}
        if outcome is not None:
            counts = dict(outcome.counts)
            with contextlib.suppress(Exception):  # the best trial is a courtesy: the notification goes without it
                best_trial, best_value = _best_of(outcome, self.base["metric"], self.mode)
        return self.send(SweepNotice(event=STATE_EVENTS.get(state, ""), status=state, reason=reason,
                                     best_trial=best_trial, best_value=best_value, counts=counts, **self.base))

    def budget_spent(self, reason: str) -> bool:
        return self.send(SweepNotice(event="budget", status="running", reason=reason, **self.base))

    def send(self, notice: SweepNotice) -> bool:
        """POST ``notice`` when its event is one of ``on`` and a URL is set; a failure is one line."""
        if (url := self.url) is None or notice.event not in self.settings.on:
            return False
        secrets = [url, *secret_values(self.environ)]
        if notice.reason:  # its first line (a traceback's last line is in the parent run), masked, short
            notice.reason = mask_text(notice.reason.strip().split("\n", 1)[0], secrets)[:500] or None
        try:
            post_json(url, {"text": notice.text(), "sentsweep": asdict(notice)}, timeout_s=self.settings.timeout_s,
                      retries=self.settings.retries, backoff_s=self.backoff_s)
        except Exception as exc:  # a NotifyError, or any surprise: notifying never fails the sweep
            detail = str(exc) if isinstance(exc, NotifyError) else f"{type(exc).__name__}: {exc}"
            self.echo(f"notify: the {notice.event} notification to {masked_url(url)} was not delivered "
                      f"({mask_text(detail, secrets)}); the sweep goes on")
            return False
        self.sent.append(notice.event)
        return True


def _best_of(outcome: SweepOutcome, metric: str, mode: str) -> tuple[str | None, float | None]:
    """The best trial's label and value: finalize's, else the best of the results."""
    if outcome.best_trial_id is not None:
        return best_label(outcome), finite_number(outcome.best_value)
    ranked = rank_results(outcome.results, metric, mode) if outcome.results and outcome.counts.get("finished") else []
    if not ranked:
        return None, None
    return result_label(outcome.results, str(ranked[0].metrics.get("trial_id"))), metric_value(ranked[0], metric)
