"""What runs inside a trial: one :class:`~sentsweep.trainables.method.Method` per paper and the shared training loop.

Other code imports from the modules themselves: the methods and their typed configs (``cosent``, ``sncse``,
``multiview``), the registry by name (``registry``: ``METHODS``, ``get_trainable``, ``load_encoder``), the loop
(``loop``) and its checkpoints (``checkpoints``), and what a trial's reports carry for the driver (``report_keys``,
``run_record``, ``restore_note``). A trial imports no MLflow.
"""
