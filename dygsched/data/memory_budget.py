"""How much memory this process can allocate, and a one-line refusal for data that would not fit.

Physical memory is not the limit a process meets first: an address-space limit (``ulimit -v``,
``RLIMIT_AS``) or a cgroup's ``memory.max`` (containers, SLURM jobs) stops it earlier, with a
``MemoryError`` deep inside numpy. Sources estimate what they will build and ask here first.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from dygsched.errors import DataError

UNLIMITED = 2**62


def physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return UNLIMITED


def _cgroup_limit() -> int:
    """This process's cgroup memory limit (v2 ``memory.max``, else v1 ``memory.limit_in_bytes``)."""
    candidates = [Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")]
    try:  # the process's own cgroup (v2: one line "0::/path")
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hierarchy, _, path = line.partition("::")
            if hierarchy == "0" and path:
                candidates.insert(0, Path("/sys/fs/cgroup") / path.lstrip("/") / "memory.max")
    except OSError:
        pass
    for candidate in candidates:
        try:
            text = candidate.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return int(text)
    return UNLIMITED


def allocatable_memory() -> int:
    """The least of physical memory, the address-space limit and the cgroup's limit, in bytes."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    address_space = UNLIMITED if soft == resource.RLIM_INFINITY else int(soft)
    return min(physical_memory(), address_space, _cgroup_limit())


def check_fits(need_bytes: float, what: str) -> None:
    """Refuse, in one line, data whose estimated size is above what this process can allocate."""
    limit = allocatable_memory()
    if need_bytes > limit:
        raise DataError(
            f"{what} needs about {need_bytes / 2**30:.1f} GiB, "
            f"more than the {limit / 2**30:.1f} GiB of memory this process can allocate"
        )
