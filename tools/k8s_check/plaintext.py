"""Credentials where no Secret guards them.

- a ConfigMap (the namespace's ``view`` role reads it) has no key with a secret-looking name and no value with a
  URL's password;
- a RayJob's entrypoint and ``runtimeEnvYAML`` (the Ray Jobs API shows them to every holder of the Ray token, and
  the ``view`` role may read RayJobs) carry no URL's password, no secret-looking flag with a literal value, and no
  secret-looking ``env_vars``;
- a kustomization's ``secretGenerator`` has no ``literals``: the credential would sit in a committed file (``envs``
  names a git-ignored one).

A ``$VAR`` reference is not a credential here: a script in a ConfigMap reads it from its own environment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from tools.k8s_check.kubectl import find_kustomization, find_root, kustomization_folders, read_kustomization
from tools.k8s_check.objects import Problem, object_id

SECRET_NAME = re.compile(r"(^|_)(PASSWORD|PASSWD|SECRET|TOKEN|KEY|CREDENTIALS?)(_|$)", re.IGNORECASE)
URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^@\s/]+@", re.IGNORECASE)
#: A command-line flag that names a credential, with a literal value (not a ``$VAR`` reference nor a file's path).
SECRET_FLAG = re.compile(r"(?<![\w-])(--?(?:[a-z0-9]+[-_])*(?:password|passwd|secret|token|key|credentials?))(?:=|\s+)"
                         r"(?![\"']?[$/])(?=[^\s-])", re.IGNORECASE)


def secret_flags(texts: Iterable[str]) -> list[str]:
    """The flags of ``texts`` that give a credential a literal value."""
    return [m.group(1) for text in texts for m in SECRET_FLAG.finditer(text)]


def check_plaintext(obj: dict[str, Any]) -> list[Problem]:
    """A ConfigMap's or a RayJob's credentials (see the module)."""
    spec, found = obj.get("spec") or {}, []
    if obj.get("kind") == "ConfigMap":
        texts = {f"data.{key}": str(value) for key, value in (obj.get("data") or {}).items()}
        found += [f"data.{key}: a credential in a ConfigMap: put it in a Secret and give it with secretKeyRef"
                  for key in obj.get("data") or {} if SECRET_NAME.search(key)]
    elif obj.get("kind") == "RayJob":
        texts = {f"spec.{key}": str(spec[key]) for key in ("entrypoint", "runtimeEnvYAML") if spec.get(key)}
        try:
            env = (yaml.safe_load(spec.get("runtimeEnvYAML") or "") or {}).get("env_vars") or {}
        except (yaml.YAMLError, AttributeError):
            env = {}
        found += [f"spec.runtimeEnvYAML: env_vars {name} is a credential the Ray Jobs API shows: the Ray pods get "
                  "theirs from Secrets (secretKeyRef)" for name in env if SECRET_NAME.search(str(name))]
        found += [f"spec.entrypoint: {flag} gives a credential the Ray Jobs API shows"
                  for flag in secret_flags([str(spec.get("entrypoint", ""))])]
    else:
        return []
    found += [f"{where}: a URL holds a password: give it in the client's own variable from a Secret"
              for where, text in texts.items() if any("$" not in m.group(0) for m in URL_PASSWORD.finditer(text))]
    return [Problem(object_id(obj), "policy", m) for m in found]


def check_generator_literals(path: str | Path) -> list[Problem]:
    """A ``secretGenerator`` with ``literals`` in the kustomization ``path`` or one its ``resources`` reach."""
    root, found = find_root(path), []
    for folder in kustomization_folders(path):
        for generator in read_kustomization(folder).get("secretGenerator") or []:
            if generator.get("literals"):
                kfile = find_kustomization(folder)
                where = f"{root.name}/{kfile.relative_to(root)}" if kfile.is_relative_to(root) else str(kfile)
                found.append(Problem(where, "policy", f"secretGenerator {generator.get('name')}: literals put a "
                                     "credential in a committed file: name a git-ignored file with envs instead"))
    return found
