from __future__ import annotations

import os
from pathlib import Path

import pytest

try:
    from hypothesis import settings
except ImportError:  # a GPU node with pytest alone (make test-gpu GPU_PYTHON=...): its tests use no hypothesis
    settings = None

# CI explores the same examples every run (a red CI must be reproducible); elsewhere, new ones.
if settings is not None:
    settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]

# Small, fast settings for runs in tests: every override is a real config key.
TINY_SYNTHETIC = [
    "dataset=synthetic",
    "dataset.num_nodes=120",
    "dataset.num_snapshots=12",
    "dataset.feature_dim=8",
    "model.hidden_channels=16",
    "model.num_layers=1",
    "progress=false",
]


@pytest.fixture(scope="session", autouse=True)
def temporary_files_in_the_session_folder(tmp_path_factory):
    """What runs keep beside the system's temporary files (each rank's stacks file, kept when a test
    kills the rank) goes under the session's folder, which pytest prunes, rather than piling up in /tmp;
    the ranks a test starts inherit it through ``TMPDIR``."""
    import tempfile

    folder = tmp_path_factory.mktemp("tmpdir")
    before = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = str(folder)
    yield
    if before[0] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before[0]
    tempfile.tempdir = before[1]


@pytest.fixture
def compose(tmp_path):
    """Compose the real Hydra configs with overrides into the typed run, writing results under tmp_path."""
    from dygsched.launch.compose import compose_run

    def _compose(*overrides: str):
        return compose_run([f"results_dir={tmp_path / 'results'}", *overrides])

    return _compose


@pytest.fixture(scope="session")
def shipped_data() -> Path:
    """The real datasets that ship inside the package (``dygsched/data/shipped``)."""
    from dygsched.data.catalog import SHIPPED_DIR

    return SHIPPED_DIR
