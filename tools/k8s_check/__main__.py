"""``python -m tools.k8s_check KUSTOMIZATION...``: counts per kind of each render, then every problem."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tools.k8s_check import ManifestError, validate
from tools.k8s_check.kubectl import kubectl_version

USAGE = ("usage: python -m tools.k8s_check KUSTOMIZATION...\n"
         "  (kustomizations deployed together, e.g. k8s/overlays/local k8s/overlays/local/sweep)")


def main(argv: Sequence[str] | None = None) -> int:
    """Validate the kustomizations of ``argv``: 0 when every object validates, 1 on problems, 2 on errors."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        report = validate(args)
    except ManifestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for r in report.rendered:
        counts = ", ".join(f"{kind} {n}" for kind, n in r.counts.items())
        print(f"{r.path} (kubectl {kubectl_version(r.kubectl)}, {r.kubectl}): {len(r.objects)} objects: {counts}")
        if r.examples_used:
            print(f"  rendered with the committed examples for: {', '.join(r.examples_used)}")
    for problem in report.problems:
        print(f"  {problem}")
    print("ok: every object validates" if report.ok else f"{len(report.problems)} problem(s)")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
