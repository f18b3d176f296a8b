"""What `sentsweep jobs` shows of a cluster's jobs, which include jobs submitted without sentsweep: a URI's password
in an entrypoint or a message is masked, also where the entrypoint is cut to the table's width."""

from __future__ import annotations

from ray.job_submission import JobDetails, JobStatus, JobType

from sentsweep.cluster.client import describe_job, jobs_table

LOGIN = "http://someone:hunter2-long-password-here@mlflow.example:5000"


def _job(entrypoint: str, message: str | None = None) -> JobDetails:
    return JobDetails(type=JobType.SUBMISSION, entrypoint=entrypoint, status=JobStatus.FAILED, message=message,
                      submission_id="raysubmit_1", start_time=1_000, end_time=61_000)


def test_a_password_in_an_entrypoint_is_masked_before_the_table_cuts_it() -> None:
    table = jobs_table([_job(f"python -m train --tracking-uri {LOGIN} --epochs 3")])
    row = table.splitlines()[1]
    assert "hunter2" not in table and "http://someone:***@mlflow." in row and row.endswith("...")
    cut_inside = jobs_table([_job(f"python -m a_long_module_name --uri {LOGIN}")])  # the cut falls in the password
    assert "hunter" not in cut_inside and "someone:***@" in cut_inside


def test_a_password_in_a_message_or_entrypoint_of_one_job_is_masked() -> None:
    shown = describe_job(_job(f"echo {LOGIN}", message=f"Job failed: could not reach {LOGIN}"))
    assert "hunter2" not in shown and shown.count("http://someone:***@mlflow.example:5000") == 2


def test_a_local_secret_in_an_entrypoint_is_masked_before_the_cut() -> None:
    """The environment's secrets were redacted after the cut, which could leave a secret's start."""
    token = "tok_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    table = jobs_table([_job(f"python -m train --ray-token {token} --x 1")], secrets=[token])
    assert "tok_ABC" not in table and "--ray-token ***" in table


def test_a_followed_log_is_masked_also_where_a_chunk_splits_a_uri() -> None:
    from sentsweep.cli.cluster import MaskedLines

    shown: list[str] = []
    out = MaskedLines(["s3cr3t-value"], shown.append)
    for chunk in ("starting\nlogging to http://someone:hun", "ter2-pw@mlflow:5000 with s3cr3t-", "value\nlast"):
        out(chunk)
    out.flush()
    text = "".join(shown)
    assert text == "starting\nlogging to http://someone:***@mlflow:5000 with ***\nlast"


def test_a_followed_progress_bar_is_shown_at_each_carriage_return() -> None:
    """A bar redrawn with \\r was held until its first newline."""
    from sentsweep.cli.cluster import MaskedLines

    shown: list[str] = []
    out = MaskedLines(["s3cr3t-value"], shown.append)
    for chunk in ("step 1/3\r", "step 2/3\rstep", " 3/3 s3cr3t-", "value\r\ndone"):
        out(chunk)
    assert shown == ["step 1/3\r", "step 2/3\r", "step 3/3 ***\r\n"]
    out.flush()
    assert shown[-1] == "done"
