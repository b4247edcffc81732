"""PyTorch Geometric Temporal's outputs for the parity tests: recorded, or from the library itself.

Each parity case is one function (registered with ``library_case`` beside the test that uses it)
that runs the library on the case's inputs and returns what the library gives: tensors in dicts
and lists, a loader's snapshots as SHA-256 digests of their bytes (``graph_digests``). The
recorder below saves what those functions return under ``tests/references/pgt/``, one ``.pt``
file per case (gzipped), with ``manifest.json`` naming the library versions it ran. A test asks
``library_outputs(case, source)``:

* ``recorded`` (``make test``): the saved outputs; no compiler, no torch-geometric-temporal;
* ``library`` (``make test-pgt``, ``pytest -m pgt``): the function runs against the installed
  library, its result must equal the saved one (else the references are stale and the test
  fails), and the test then compares our code with the live result.

Models are recorded in float64, so the comparisons do not depend on which CPU kernels ran them.
Record again after changing a case or the library (the pgt extra installed)::

    python -m tests.pgt_references
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib
import io
import json
import platform
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import torch

REFERENCES = Path(__file__).resolve().parent / "references" / "pgt"
MANIFEST = "manifest.json"
RECORD_COMMAND = "python -m tests.pgt_references"
# The test modules that register cases: the recorder imports them to find every case.
CASE_MODULES = (
    "tests.models.test_parity",
    "tests.data.test_pgt",
    "tests.data.test_snapshot_formats",
    "tests.data.test_adversarial_input",
)
VERSIONS = ("torch-geometric-temporal", "torch", "torch-geometric", "numpy")
# Live float64 results against recorded ones: only the order of a sum may differ between CPUs.
FLOAT64_TOLERANCE = {"rtol": 1e-10, "atol": 1e-12}

# The two sources of a parity test's expected numbers; `library` needs the pgt extra.
SOURCES = [pytest.param("recorded", id="recorded"), pytest.param("library", id="library", marks=pytest.mark.pgt)]

Outputs = Any  # tensors, str, int, float, bool and None, nested in dicts and lists
Compare = Callable[[Outputs, Outputs, str], None]

_CASES: dict[str, tuple[Callable[[], Outputs], Compare | None]] = {}


def library_case(name: str, produce: Callable[[], Outputs], compare: Compare | None = None) -> str:
    """Register ``produce`` (runs the library, returns its outputs) as the case ``name``.

    ``compare(live, recorded, name)``, when given, replaces the element-wise comparison of a live
    result with the recorded one (for outputs, like a pickle, whose bytes may differ for equal
    contents)."""
    if name in _CASES and _CASES[name][0] is not produce:
        raise ValueError(f"two parity cases are named {name!r}")
    _CASES[name] = (produce, compare)
    return name


def registered_cases() -> dict[str, Callable[[], Outputs]]:
    for module in CASE_MODULES:
        importlib.import_module(module)
    return {name: produce for name, (produce, _) in sorted(_CASES.items())}


SUFFIX = ".pt.gz"


def reference_path(name: str, directory: Path = REFERENCES) -> Path:
    return directory / f"{name}{SUFFIX}"


def recorded_outputs(name: str) -> Outputs:
    path = reference_path(name)
    if not path.is_file():
        pytest.fail(f"no recorded reference for parity case {name!r} ({path}): record it with `{RECORD_COMMAND}`")
    return load_outputs(path)


def library_outputs(name: str, source: str) -> Outputs:
    """The library's outputs for case ``name``: the recorded ones, or (``library``) live ones
    that must equal the recorded ones."""
    recorded = recorded_outputs(name)
    if source == "recorded":
        return recorded
    if source != "library":
        raise ValueError(f"unknown source {source!r} (recorded or library)")
    produce, compare = _CASES[name]
    live = produce()
    (compare or assert_same_outputs)(live, recorded, name)
    return live


def assert_same_outputs(live: Outputs, recorded: Outputs, where: str) -> None:
    """``live`` equals ``recorded``: same structure, same values (float64 to ``FLOAT64_TOLERANCE``,
    everything else exactly), with a message that names the differing element."""
    stale = f"; the library no longer gives the recorded reference: re-record with `{RECORD_COMMAND}`"
    if isinstance(live, dict) or isinstance(recorded, dict):
        if not (isinstance(live, dict) and isinstance(recorded, dict)) or live.keys() != recorded.keys():
            keys = [sorted(map(str, v)) if isinstance(v, dict) else type(v).__name__ for v in (live, recorded)]
            raise AssertionError(f"{where}: keys {keys[0]} live, {keys[1]} recorded{stale}")
        for key in live:
            assert_same_outputs(live[key], recorded[key], f"{where}[{key!r}]")
    elif isinstance(live, list | tuple) and isinstance(recorded, list | tuple):
        if len(live) != len(recorded):
            raise AssertionError(f"{where}: {len(live)} items live, {len(recorded)} recorded{stale}")
        for i, (a, b) in enumerate(zip(live, recorded, strict=True)):
            assert_same_outputs(a, b, f"{where}[{i}]")
    elif isinstance(live, torch.Tensor) and isinstance(recorded, torch.Tensor):
        tolerance = FLOAT64_TOLERANCE if live.dtype == torch.float64 else {"rtol": 0.0, "atol": 0.0}
        try:
            torch.testing.assert_close(live, recorded, equal_nan=True, **tolerance)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}{stale}") from None
    elif type(live) is not type(recorded) or live != recorded:
        raise AssertionError(f"{where}: {live!r} live, {recorded!r} recorded{stale}")


def tensor_digest(tensor: torch.Tensor) -> str:
    """dtype, shape and the SHA-256 of the values (its first 64 bits, ample to tell two tensors
    apart): equal digests mean ``torch.equal`` tensors (the ``+ 0`` turns -0.0 into 0.0, which
    ``torch.equal`` does not tell apart either)."""
    values = tensor.detach().cpu().contiguous()
    if values.is_floating_point():
        values = values + 0
    digest = hashlib.sha256(values.numpy().tobytes()).hexdigest()[:16]
    return f"{str(values.dtype).removeprefix('torch.')}{list(values.shape)} {digest}"


SNAPSHOT_FIELDS = ("edge_index", "edge_weight", "x", "y")


def graph_digests(graph: Any) -> list[dict[str, str]]:
    """A ``TemporalGraph``'s snapshots as digests of their edges, weights, features and targets."""
    return [{field: tensor_digest(getattr(snapshot, field)) for field in SNAPSHOT_FIELDS} for snapshot in graph.snapshots]


def assert_graph_matches_digests(graph: Any, digests: list[dict[str, str]], name: str) -> None:
    """Our graph has exactly the snapshots the library gave (the digests of ``graph_digests``)."""
    ours = graph_digests(graph)
    assert len(ours) == len(digests), f"{name}: {len(ours)} snapshots, the library gives {len(digests)}"
    for t, (a, b) in enumerate(zip(ours, digests, strict=True)):
        differ = [field for field in SNAPSHOT_FIELDS if a[field] != b[field]]
        assert not differ, f"{name}: snapshot {t}'s {', '.join(differ)} differ from the library's ({a} against {b})"


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def library_versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in VERSIONS} | {"python": platform.python_version()}


def save_outputs(outputs: Outputs, path: Path) -> None:
    """``torch.save``, gzipped (small tensors are mostly archive padding). In memory first and
    without a time stamp, so equal outputs give equal bytes: re-recording an unchanged case
    leaves its file unchanged."""
    buffer = io.BytesIO()
    torch.save(outputs, buffer)
    path.write_bytes(gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0))


def load_outputs(path: Path) -> Outputs:
    """A recorded case: plain tensors and containers only (``weights_only``)."""
    return torch.load(io.BytesIO(gzip.decompress(path.read_bytes())), weights_only=True)


def record(directory: Path = REFERENCES) -> dict[str, Any]:
    """Run every case against the installed library and write its outputs and the manifest."""
    torch.set_num_threads(1)
    cases = registered_cases()
    directory.mkdir(parents=True, exist_ok=True)
    for stale in set(directory.glob(f"*{SUFFIX}")) - {reference_path(name, directory) for name in cases}:
        stale.unlink()
    files = {}
    for name, produce in cases.items():
        path = reference_path(name, directory)
        save_outputs(produce(), path)
        load_outputs(path)  # what the tests will load
        files[name] = {"file": path.name, "sha256": file_digest(path)}
    manifest = {"recorded_with": library_versions(), "command": RECORD_COMMAND, "cases": files}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record PyTorch Geometric Temporal's outputs for the parity tests.")
    parser.add_argument("--out", type=Path, default=REFERENCES, help=f"folder for the references (default {REFERENCES})")
    arguments = parser.parse_args(argv)
    try:
        importlib.import_module("torch_geometric_temporal")
    except ImportError as exc:
        print(f"error: recording needs torch-geometric-temporal (pip install -e '.[pgt]'): {exc}", file=sys.stderr)
        return 1
    manifest = record(arguments.out)
    size = sum((arguments.out / case["file"]).stat().st_size for case in manifest["cases"].values())
    versions = ", ".join(f"{name} {version}" for name, version in manifest["recorded_with"].items())
    print(f"recorded {len(manifest['cases'])} cases ({size / 1024:.0f} KiB) in {arguments.out} with {versions}")
    return 0


if __name__ == "__main__":
    # Run as `python -m`, this file is `__main__`; the test modules register their cases with
    # `tests.pgt_references`, a second copy of it, whose recorder must be the one that runs.
    from tests.pgt_references import main as record_main

    sys.exit(record_main())
