"""Hardware profiles as data: every figure of the table has its source, links price collectives by formula."""

import pytest

from dygsched.advise.hardware import (
    GB,
    compute_scale,
    gpu_named,
    gpu_of_device,
    gpus,
    link_named,
    links,
    parse_memory,
)
from dygsched.errors import ConfigError


def test_every_row_has_a_source_and_every_link_latency_is_marked_an_assumption():
    for gpu in gpus().values():
        assert gpu.source and gpu.memory_bytes > 0 and gpu.memory_gbps > 0
    for link in links().values():
        assert link.source and "assumption" in link.assumption and link.bandwidth_bytes_s > 0


def test_a_link_by_name_by_bandwidth_and_an_unknown_one():
    assert link_named("NVLink").bandwidth_bytes_s == 300 * GB
    given = link_named("12.5GB/s")
    assert given.bandwidth_bytes_s == 12.5 * GB and "assumption" in given.assumption
    with pytest.raises(ConfigError, match="unknown --link 'carrier-pigeon'"):
        link_named("carrier-pigeon")
    with pytest.raises(ConfigError, match="measured when profiling"):
        link_named("local", None)


def test_a_ring_all_reduce_moves_two_w_minus_one_over_w_of_the_bytes():
    link = link_named("25")
    seconds = link.all_reduce_s(1e9, 4, calls=2)
    assert seconds == pytest.approx(2 * 6 * link.latency_s + 6 / 4 * 1e9 / (25 * GB))
    assert link.all_reduce_s(1e9, 1) == 0.0 and link.all_to_all_s(1e9, 1) == 0.0


@pytest.mark.parametrize("text, expected", [("80GB", 80e9), ("40 GiB", 40 * 2**30), ("512MB", 512e6), ("16", 16e9)])
def test_gpu_memory_amounts(text, expected):
    assert parse_memory(text) == int(expected)


@pytest.mark.parametrize("text", ["eighty", "-3GB", "0"])
def test_a_bad_gpu_memory_is_one_error(text):
    with pytest.raises(ConfigError, match="--gpu-memory"):
        parse_memory(text)


def test_a_cuda_device_name_finds_its_row_and_scales_by_memory_bandwidth():
    assert gpu_of_device("NVIDIA H200").name == "h200"
    assert gpu_of_device("NVIDIA A100-SXM4-80GB").name == "a100-80gb"
    scale = compute_scale("cuda", "NVIDIA A100-SXM4-80GB", 10.0, gpu_named("h200"))
    assert scale.factor == pytest.approx(2039 / 4800) and scale.assumption
    assert compute_scale("cuda", "NVIDIA H200", 10.0, gpu_named("h200")).measured
    with pytest.raises(ConfigError, match="not in the hardware table"):
        compute_scale("cuda", "Mystery Accelerator 9000", 10.0, gpu_named("h200"))
