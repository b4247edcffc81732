"""Hardware profiles as data: GPUs and links, each figure with its source and what is assumed.

``hardware.csv`` (beside this module) holds one row per GPU (memory, peak FP32 rate, memory
bandwidth, from its datasheet) and per link (bandwidth each way from its specification, and a
per-message latency, which no datasheet states and is marked as an assumption). The advisor reads
them here; nothing else in the package holds a hardware figure for it.

A link prices the collectives the strategies call: a message costs its latency plus its bytes over
the bandwidth; a ring all-reduce of ``B`` bytes on ``W`` ranks moves ``2 (W - 1) / W * B`` per rank
in ``2 (W - 1)`` messages; an all-to-all sends each peer its rows, ``W - 1`` messages, the busiest
rank's bytes setting the pace. ``local`` is the link between ranks of this machine, measured
(gloo through the loopback) rather than read from the table.

Nothing here imports torch.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from dygsched.errors import ConfigError

GB = 1e9
GIB = 2**30
LOCAL = "local"  # the link between ranks on this machine: measured, not a row of the table


@dataclass(frozen=True)
class GPUProfile:
    """One GPU model: its memory, peak FP32 rate and memory bandwidth, and where they come from."""

    name: str
    memory_bytes: int
    fp32_tflops: float
    memory_gbps: float  # GB/s
    source: str
    assumption: str = ""


@dataclass(frozen=True)
class LinkProfile:
    """What ranks see of the link between them: bytes per second each way and seconds per message."""

    name: str
    bandwidth_bytes_s: float
    latency_s: float
    source: str
    assumption: str = ""

    def __post_init__(self) -> None:
        if not (self.bandwidth_bytes_s > 0 and math.isfinite(self.bandwidth_bytes_s)):
            raise ConfigError(f"link {self.name}: its bandwidth must be a positive number of bytes per second")
        if not (self.latency_s >= 0 and math.isfinite(self.latency_s)):
            raise ConfigError(f"link {self.name}: its latency must be 0 or more seconds")

    @property
    def gbps(self) -> float:
        """Gigabits per second (DistDy's ``Network`` unit)."""
        return self.bandwidth_bytes_s * 8 / GB

    def message_s(self, nbytes: float, messages: int = 1) -> float:
        """``messages`` point-to-point messages carrying ``nbytes`` in all."""
        return messages * self.latency_s + max(0.0, nbytes) / self.bandwidth_bytes_s

    def all_reduce_s(self, nbytes: float, ranks: int, calls: int = 1) -> float:
        """A ring all-reduce of ``nbytes`` (split into ``calls`` buckets) over ``ranks``: 0 on one rank."""
        if ranks <= 1:
            return 0.0
        steps = 2 * (ranks - 1)
        return calls * steps * self.latency_s + steps / ranks * max(0.0, nbytes) / self.bandwidth_bytes_s

    def all_to_all_s(self, busiest_bytes: float, ranks: int, calls: int = 1) -> float:
        """``calls`` all-to-alls whose busiest rank sends or receives ``busiest_bytes`` in all: 0 on one rank."""
        if ranks <= 1:
            return 0.0
        return calls * (ranks - 1) * self.latency_s + max(0.0, busiest_bytes) / self.bandwidth_bytes_s


@lru_cache(maxsize=1)
def _rows() -> tuple[dict[str, str], ...]:
    with resources.files("dygsched.advise").joinpath("hardware.csv").open() as handle:
        return tuple(csv.DictReader(handle))


def gpus() -> dict[str, GPUProfile]:
    """Every GPU of the table, by name."""
    return {
        row["name"]: GPUProfile(
            row["name"],
            int(float(row["memory_gb"]) * GB),
            float(row["fp32_tflops"]),
            float(row["memory_gbps"]),
            row["source"],
            row["assumption"],
        )
        for row in _rows()
        if row["kind"] == "gpu"
    }


def links() -> dict[str, LinkProfile]:
    """Every link of the table, by name (``local``, measured, is not among them)."""
    return {
        row["name"]: LinkProfile(
            row["name"], float(row["bandwidth_gbs"]) * GB, float(row["latency_us"]) * 1e-6, row["source"], row["assumption"]
        )
        for row in _rows()
        if row["kind"] == "link"
    }


DEFAULT_LATENCY_S = 10e-6  # a link given as a bare bandwidth


def link_named(spec: str, local: LinkProfile | None = None) -> LinkProfile:
    """``--link``: a link of the table, ``local`` (this machine's, as measured: ``local``), or a
    bandwidth in GB/s (``12.5``, ``12.5GB/s``) with an assumed latency."""
    text = str(spec).strip()
    if text.lower() == LOCAL:
        if local is None:
            raise ConfigError("--link local is the link between ranks on this machine: it is measured when profiling")
        return local
    known = links()
    if text.lower() in known:
        return known[text.lower()]
    number = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(?:GB/s|gb/s|GBps)?", text)
    if number:
        value = float(number.group(1))
        if value <= 0:
            raise ConfigError(f"--link {spec}: a bandwidth must be more than 0 GB/s")
        return LinkProfile(
            f"{value:g}GB/s",
            value * GB,
            DEFAULT_LATENCY_S,
            "given on the command line",
            f"latency {DEFAULT_LATENCY_S * 1e6:g} us: an assumption (a bandwidth was given, no latency)",
        )
    raise ConfigError(f"unknown --link '{spec}' (choose from {', '.join([*known, LOCAL])}, or a bandwidth in GB/s such as 25)")


def gpu_named(name: str) -> GPUProfile:
    known = gpus()
    key = str(name).strip().lower()
    if key not in known:
        raise ConfigError(f"unknown --gpu '{name}' (choose from {', '.join(known)}, or 'here': the device this profile measured)")
    return known[key]


def gpu_of_device(device_name: str) -> GPUProfile | None:
    """The table's GPU a CUDA device name denotes (``NVIDIA H200``, ``NVIDIA A100-SXM4-80GB``), if any."""
    plain = device_name.lower().replace("nvidia", "").replace("tesla", "").replace("geforce", "").strip()
    words = re.split(r"[\s\-_]+", plain)
    best = None
    for name, gpu in gpus().items():
        family, _, size = name.partition("-")
        if family in words or family.replace("rtx", "") in words:
            if size and size.upper() not in plain.upper():
                continue
            if best is None or len(name) > len(best.name):
                best = gpu
    return best


def parse_memory(spec: str) -> int:
    """``--gpu-memory``: ``80GB``, ``80 GiB``, ``512MB`` or a bare number of GB, as bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]i?B?|[kmgt]i?b?)?\s*", str(spec))
    if not match:
        raise ConfigError(f"--gpu-memory {spec!r}: give an amount such as 80GB, 40GiB or 512MB")
    value = float(match.group(1))
    unit = (match.group(2) or "GB").upper().rstrip("B") or "G"
    scale = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}[unit]
    if value <= 0:
        raise ConfigError(f"--gpu-memory {spec!r}: the memory must be more than 0")
    return int(value * scale)


@dataclass(frozen=True)
class ComputeScale:
    """How the profiled device's seconds become the target GPU's: ``factor`` multiplies them."""

    factor: float
    source: str
    assumption: str = ""

    @property
    def measured(self) -> bool:
        return self.factor == 1.0 and not self.assumption


SAME_DEVICE = ComputeScale(1.0, "measured on the device the predictions are for")


def compute_scale(device_kind: str, device_name: str, host_bandwidth_gbps: float, target: GPUProfile | None) -> ComputeScale:
    """The profiled device's seconds on ``target`` (``None``: the profiled device itself).

    The ratio of memory bandwidths: the work of a DGNN step at these sizes (sparse aggregation,
    recurrent cells' element-wise gates, small products) is bound by memory traffic rather than by
    the peak arithmetic rate. Between two GPUs of the table both figures are published; from a CPU
    the host's bandwidth is the one measured while profiling. Either way it is an assumption, and a
    profile measured on the target GPU (``dygsched advise --profile-only`` there) replaces it."""
    if target is None:
        return SAME_DEVICE
    if device_kind == "cuda":
        here = gpu_of_device(device_name)
        if here is not None and here.name == target.name:
            return SAME_DEVICE
        if here is not None:
            return ComputeScale(
                here.memory_gbps / target.memory_gbps,
                f"{here.name} profiled, {target.name} predicted: ratio of their published memory bandwidths",
                "compute scales with memory bandwidth (an assumption; profile on the target GPU to measure it)",
            )
        raise ConfigError(
            f"this GPU ({device_name}) is not in the hardware table, so its seconds cannot be scaled to {target.name}: "
            "profile on the target GPU (dygsched advise --profile-only) and pass --profile"
        )
    if not host_bandwidth_gbps > 0:
        raise ConfigError("the profile has no measured host memory bandwidth to scale a CPU's seconds to a GPU's")
    return ComputeScale(
        host_bandwidth_gbps / target.memory_gbps,
        f"CPU profiled ({host_bandwidth_gbps:.1f} GB/s measured), "
        f"{target.name} predicted ({target.memory_gbps:g} GB/s published)",
        "a CPU's seconds scaled by the ratio of memory bandwidths, ignoring a GPU's kernel-launch floor: "
        "a coarse assumption; profile on the target GPU to measure it",
    )
