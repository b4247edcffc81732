"""The ``${dygsched_data:FILE}`` resolver the dataset configs name their files with.

It resolves through the catalogue (``dygsched.data.catalog.locate``): ``$DYGSCHED_DATA``, the files
shipped in the package, then the download cache. So the installed CLI finds the data from any
working directory, with no folder beside the repository.
"""

from __future__ import annotations

from omegaconf import OmegaConf

from dygsched.data.catalog import locate

RESOLVER = "dygsched_data"


def data_file(name: str) -> str:
    return str(locate(name))


def register_resolver() -> None:
    """Make ``${dygsched_data:FILE}`` available to every config (idempotent)."""
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, data_file)
