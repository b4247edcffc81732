"""Where the real datasets are: ``DYGSCHED_DATA``, else ``../shared/data`` beside the repository.

The dataset configs name their files as ``${dygsched_data:NAME}``, resolved here, so the installed
CLI finds the data from any working directory: a relative default would follow the current
directory instead of the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import OmegaConf

ENV = "DYGSCHED_DATA"
RESOLVER = "dygsched_data"


def data_dir() -> Path:
    """``$DYGSCHED_DATA``; else ``../shared/data`` next to the checkout this package runs from;
    else (an installed package outside a checkout) ``../shared/data`` from the working directory."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        return (checkout.parent / "shared" / "data").resolve()
    return Path("..", "shared", "data")


def data_file(name: str) -> str:
    return str(data_dir() / name)


def register_resolver() -> None:
    """Make ``${dygsched_data:NAME}`` available to every config (idempotent)."""
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, data_file)
