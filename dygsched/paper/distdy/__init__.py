"""DistDy: online partitioning of a growing graph and additive storage; one module per target, the
shared labels and configuration in ``common`` and the in-process measurement in ``simulation``.

``storage``, ``partition``, ``params`` and ``capacity`` compute in this process from the library
(numpy, no ranks). ``traffic`` and ``epoch_time`` read a sweep's run folders (2 gloo ranks, every
partitioner) and add a simulated cluster: the per-rank-pair feature rows of an epoch are counted
exactly as the strategy samples them (``dygsched.engine.distdy.cluster.epoch_counts``; a test checks
them against what two ranks measure) for K stores, and priced at a bandwidth with the compute costs of
a device profile (``cpu`` calibrated on this machine, or the paper's GPUs priced from their
datasheets). Simulated figures compare partitions; they do not predict a real cluster's seconds.

The library (and torch) is imported inside the functions that measure: listing the targets and
rendering the report import none of it.
"""

from dygsched.paper.distdy.capacity import CAPACITY
from dygsched.paper.distdy.common import SECTION
from dygsched.paper.distdy.epoch_time import TIME
from dygsched.paper.distdy.params import PARAMS
from dygsched.paper.distdy.partition import PARTITION
from dygsched.paper.distdy.storage import STORAGE
from dygsched.paper.distdy.traffic import TRAFFIC
from dygsched.paper.target import PaperTarget

TARGETS: tuple[PaperTarget, ...] = (STORAGE, PARTITION, TRAFFIC, TIME, PARAMS, CAPACITY)

__all__ = ["SECTION", "TARGETS"]
