"""The few private names of Ray, Optuna and MLflow that sentsweep cannot avoid, one module per library, each
guarded by a test that fails when an upgrade removes it."""
