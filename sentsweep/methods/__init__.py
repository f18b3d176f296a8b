"""The science: each paper's model and loss, in pure PyTorch (no Ray, no MLflow).

One sub-package per method (``cosent``, ``sncse``, ``multiview``), each loss with its paper's equation in its
docstring. The parts they share: the transformer encoder (``encoders``), pooling, precision and gradient caching
(``cached_loss``).
"""
