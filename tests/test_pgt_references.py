"""The recorded PyTorch Geometric Temporal references: one file per registered parity case, as
the manifest lists it, and the comparison that makes a stale reference fail under ``-m pgt``."""

from __future__ import annotations

import json

import pytest
import torch

from tests.pgt_references import (
    MANIFEST,
    RECORD_COMMAND,
    REFERENCES,
    SUFFIX,
    assert_same_outputs,
    file_digest,
    load_outputs,
    reference_path,
    registered_cases,
)


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((REFERENCES / MANIFEST).read_text())


def test_every_parity_case_has_its_recorded_file_and_nothing_else_is_there(manifest):
    cases = registered_cases()
    assert sorted(manifest["cases"]) == sorted(cases), f"record the references again: `{RECORD_COMMAND}`"
    assert sorted(p.name for p in REFERENCES.glob(f"*{SUFFIX}")) == sorted(entry["file"] for entry in manifest["cases"].values())
    for entry in manifest["cases"].values():
        assert file_digest(REFERENCES / entry["file"]) == entry["sha256"], f"{entry['file']} changed since it was recorded"


def test_the_manifest_names_the_library_versions_it_was_recorded_with(manifest):
    versions = manifest["recorded_with"]
    assert {"torch-geometric-temporal", "torch", "torch-geometric", "numpy", "python"} <= versions.keys()
    assert all(isinstance(v, str) and v[0].isdigit() for v in versions.values())
    assert manifest["command"] == RECORD_COMMAND


def test_the_references_stay_small():
    size = sum(p.stat().st_size for p in REFERENCES.iterdir())
    assert size < 400 * 1024, f"the references take {size / 1024:.0f} KiB"


def perturbed(value, scale: float):
    """``value`` with its first float64 element moved by ``scale`` relative."""
    if isinstance(value, dict):
        key = next(k for k in value if perturbed(value[k], scale) is not value[k])
        return {**value, key: perturbed(value[key], scale)}
    if isinstance(value, list):
        for i, item in enumerate(value):
            changed = perturbed(item, scale)
            if changed is not item:
                return [*value[:i], changed, *value[i + 1 :]]
        return value
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64 and value.numel():
        changed = value.clone()
        changed.view(-1)[0] = changed.view(-1)[0] * (1 + scale) + scale
        return changed
    return value


def test_a_live_result_that_differs_from_the_recorded_one_fails():
    """What ``-m pgt`` does with every case: a recorded model output off by 1e-6 relative is stale;
    one off by a reordered float64 sum's rounding (1e-14) is the same result."""
    recorded = load_outputs(reference_path("tgcn-4-features"))
    assert_same_outputs(perturbed(recorded, 1e-14), recorded, "tgcn-4-features")
    with pytest.raises(AssertionError, match=r"(?s)tgcn-4-features\['inputs'\]\[0\]\['edge_weight'\].*re-record"):
        assert_same_outputs(perturbed(recorded, 1e-6), recorded, "tgcn-4-features")
    digests = load_outputs(reference_path("england_covid-8-lags"))
    stale = {
        **digests,
        "snapshots": [{**digests["snapshots"][0], "x": "float32[129, 8] 0000000000000000"}, *digests["snapshots"][1:]],
    }
    with pytest.raises(AssertionError, match=r"\['snapshots'\]\[0\]\['x'\]"):
        assert_same_outputs(stale, digests, "england_covid-8-lags")
