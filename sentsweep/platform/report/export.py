"""Export an encoder as a sentence-transformers folder built from its own modules, so loading it needs neither
sentsweep nor ``trust_remote_code``. ``first_last`` is ``WeightedLayerPooling`` with weight 1 on the first and
last layer, then mean ``Pooling``; ``prompt_mask`` has no equivalent and is refused."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from sentsweep.errors import ConfigError
from sentsweep.methods.encoders import ENCODER_CONFIG_FILE, EncoderSettings
from sentsweep.tracking.vocabulary import EXPORTED_MODEL_TAG

if TYPE_CHECKING:
    from mlflow import MlflowClient

#: Artifact folders: a trial's best weights, a sweep's exported model (an MLflow sentence-transformers model).
BEST_WEIGHTS = "best"
BEST_MODEL = "best_model"
ST_SUBDIR = "model.sentence_transformer"
ST_POOLING = {"cls": "cls", "mean": "mean", "max": "max", "first_last": "mean"}


def _refuse_file_in_the_way(dest: Path) -> None:
    """A :class:`ConfigError` naming ``dest`` when it, or the nearest of its folders that exists, is not a folder."""
    existing = next((p for p in (dest, *dest.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"{existing} is not a folder", field="DEST", file=dest)


def export_sentence_transformer(weights_dir: str | Path, dest: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``weights_dir`` (a :meth:`TransformerEncoder.save` folder) as a sentence-transformers model."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer, WeightedLayerPooling

    weights_dir, dest = Path(weights_dir), Path(dest)
    _refuse_file_in_the_way(dest)
    if (weights_dir / "multiview.json").is_file():
        raise ConfigError("a multi-view model (its own vocabulary, Tree-LSTMs and parser) has no "
                          "sentence-transformers equivalent; use its best/ folder with sentsweep "
                          "evaluate/neighbours", field="method", file=weights_dir)
    saved = weights_dir / ENCODER_CONFIG_FILE
    settings = EncoderSettings(**json.loads(saved.read_text())) if saved.is_file() else EncoderSettings()
    if settings.pooling not in ST_POOLING:
        raise ConfigError(f"pooling '{settings.pooling}' has no sentence-transformers equivalent; "
                          f"export supports {', '.join(ST_POOLING)}", field="pooling", file=weights_dir)
    if dest.exists() and any(dest.iterdir()):
        if not overwrite:
            raise ConfigError("destination exists and is not empty (pass overwrite=True / --overwrite)", file=dest)
        shutil.rmtree(dest)
    first_last = settings.pooling == "first_last"
    transformer = Transformer(str(weights_dir), max_seq_length=settings.max_length,
                              config_kwargs={"output_hidden_states": True} if first_last else None)
    dim = transformer.get_embedding_dimension()
    modules: list[torch.nn.Module] = [transformer]
    if first_last:
        layers = int(transformer.model.config.num_hidden_layers)
        weights = torch.zeros(layers)
        weights[0] = weights[-1] = 1.0
        modules.append(WeightedLayerPooling(dim, num_hidden_layers=layers, layer_start=1,
                                            layer_weights=torch.nn.Parameter(weights)))
    modules.append(Pooling(dim, pooling_mode=ST_POOLING[settings.pooling]))
    dest.parent.mkdir(parents=True, exist_ok=True)
    SentenceTransformer(modules=modules, device="cpu").save(str(dest))
    return dest


def has_artifact(client: MlflowClient, run_id: str, path: str) -> bool:
    parent, _, name = path.rpartition("/")
    return any(Path(f.path).name == name for f in client.list_artifacts(run_id, parent or None))


def export_run(client: MlflowClient, run_id: str, dest: str | Path, *, overwrite: bool = False,
               follow: bool = True) -> Path:
    """Export the weights a run logged: a trial's ``best/``, a sweep's ``best_model/``, or the ``best_model/``
    the run's tag names (one hop only, so tags pointing at each other end in one line)."""
    from mlflow.exceptions import MlflowException

    try:
        run = client.get_run(run_id)
    except MlflowException:
        raise ConfigError(f"no run '{run_id}' in {client.tracking_uri}", field="RUN_ID") from None
    dest = Path(dest)
    _refuse_file_in_the_way(dest)
    with tempfile.TemporaryDirectory() as tmp:
        if has_artifact(client, run_id, BEST_WEIGHTS):
            local = client.download_artifacts(run_id, BEST_WEIGHTS, tmp)
            try:
                return export_sentence_transformer(local, dest, overwrite=overwrite)
            except ConfigError as exc:  # no sentence-transformers form: the run, not the temporary folder, named
                if exc.file != str(local):
                    raise
                raise ConfigError(f"run {run_id}: {exc.message.split('; ')[0]}; `mlflow artifacts download -r "
                                  f"{run_id} -a {BEST_WEIGHTS}` fetches its weights for sentsweep evaluate and "
                                  "neighbours") from None
        if has_artifact(client, run_id, BEST_MODEL):
            if dest.exists() and any(dest.iterdir()) and not overwrite:
                raise ConfigError("destination exists and is not empty (use --overwrite)", file=dest)
            inner = f"{BEST_MODEL}/{ST_SUBDIR}"
            local = client.download_artifacts(run_id, inner if has_artifact(client, run_id, inner) else BEST_MODEL, tmp)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(local, dest)
            return dest
    pointer = run.data.tags.get(EXPORTED_MODEL_TAG, "")
    if follow and pointer.startswith("runs:/") and pointer.split("/")[1] != run_id:
        return export_run(client, pointer.split("/")[1], dest, overwrite=overwrite, follow=False)
    raise ConfigError(f"run {run_id} has no '{BEST_WEIGHTS}/' or '{BEST_MODEL}/' artifact to export")
