"""Whether a finding was measured where this project runs: `kb lint --env` and `kb search --env`.

A finding records the environment of its run (kbtool/evidence/provenance.py: the versions of the
packages that shape an inference result, the GPU, the driver), for the whole run or per piece of
evidence. Against the project's environment (kb.toml [environment], over what this machine
reports), a finding measured on another GPU, another major version of an engine or library, or
another driver major version may not apply here. It is flagged as such, and nothing is hidden:
the numbers may still be the best lead there is.
"""

from __future__ import annotations

import re
from typing import Any

from kbtool.model.applicability import gpu_model

# the packages whose version changes results; 0.x versions break at the minor (vLLM 0.6 -> 0.11)
VERSIONED = ("vllm", "sglang", "tensorrt-llm", "torch", "transformers", "flashinfer-python")


def _release(version: str) -> tuple[int, ...] | None:
    """The part of a version that marks a breaking release: the major, or major.minor below 1.0."""
    numbers = [int(n) for n in re.findall(r"\d+", version.split("+")[0])[:2]]
    if not numbers:
        return None
    return tuple(numbers[:2]) if numbers[0] == 0 and len(numbers) > 1 else (numbers[0],)


def measured_environment(data: dict[str, Any]) -> dict[str, str]:
    """A finding's environment: the run's, with any evidence entry's own filling what the run lacks."""
    env = dict(data.get("environment") or {})
    for evidence in data.get("evidence") or []:
        for key, value in (evidence.get("environment") or {}).items():
            env.setdefault(key, value)
    return {str(k): str(v) for k, v in env.items()}


def reasons(data: dict[str, Any], target: dict[str, str]) -> list[str]:
    """Why a finding may not apply in the target environment; empty when nothing says so."""
    if data.get("kind") != "finding":
        return []
    env = measured_environment(data)
    out = []
    here = gpu_model(target.get("gpu", ""))
    there = gpu_model(env.get("gpu", ""))
    if here and there and here != there:
        out.append(f"measured on {there}, this project runs {here}")
    elif here and not there:
        scoped = (data.get("applies_to") or {}).get("hardware")
        scopes = [scoped] if isinstance(scoped, str) else list(scoped or [])
        families = {gpu_model(s) for s in scopes} - {None}
        if families and here not in families:
            out.append(f"scoped to {', '.join(sorted(str(f) for f in families))}, this project runs {here}")
    for package in VERSIONED:
        if package in env and package in target:
            theirs, ours = _release(env[package]), _release(target[package])
            if theirs and ours and theirs != ours:
                out.append(f"measured with {package} {env[package]}, this project has {target[package]}")
    if "driver" in env and "driver" in target and _release(env["driver"]) != _release(target["driver"]):
        out.append(f"measured with driver {env['driver']}, this project has {target['driver']}")
    return out
