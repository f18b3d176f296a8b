"""MLflow tracking shared by trials and the sweep driver: the vocabulary and a trial's logger."""

from sentsweep.tracking.trial_logger import MlflowTrialLogger, NullLogger, TrialLogger, make_trial_logger
from sentsweep.tracking.vocabulary import Status, TrackingSettings

__all__ = ["MlflowTrialLogger", "NullLogger", "Status", "TrackingSettings", "TrialLogger", "make_trial_logger"]
