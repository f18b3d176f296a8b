"""Developer and CI tools that live beside the ``sentsweep`` package and never ship in its wheel: the
Kubernetes manifest checks (:mod:`tools.k8s_check`) and the bundled data sample's maker
(:mod:`tools.make_sample`). Nothing under ``sentsweep/`` imports them."""
