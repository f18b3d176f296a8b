"""Every SentEval option reaches every trainable's config, and the final evaluation, by one set of names."""

from __future__ import annotations

import pytest

from sentsweep.errors import ConfigError
from sentsweep.evaluation import SENTEVAL_OPTION_FIELDS, SentEvalOptions
from sentsweep.trainables.registry import METHODS


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_config_takes_every_senteval_option(name: str) -> None:
    method = METHODS[name]
    raw = {"senteval_setting": "fast", "senteval_kfold": 3, "senteval_inner_kfold": 2, "senteval_seed": 7,
           "senteval_mrpc_features": "full"}
    assert set(raw) == set(SENTEVAL_OPTION_FIELDS)
    config = method.parse(raw)
    assert config.senteval_options() == {"setting": "fast", "kfold": 3, "inner_kfold": 2, "seed": 7,
                                         "mrpc_features": "full"}
    SentEvalOptions(**config.senteval_options())  # what evaluate() receives is valid
    assert method.parse({}).senteval_options() == {"setting": "test", "kfold": None, "inner_kfold": None,
                                                   "seed": 1111, "mrpc_features": "diff_prod"}
    with pytest.raises(ConfigError, match="senteval_setting.*valid names: test, fast, lbfgs"):
        method.parse({"senteval_setting": "slow"})

