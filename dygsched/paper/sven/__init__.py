"""Sven: memory-based continuous-time models with distributed node memory; one module per target, the
shared labels and run readers in ``common``.

``table-sven-comm`` and ``table-sven-balance`` count in this process: which vertices a step reads
and writes depends only on the stream, the batch and the rank count, so every rank pair's bytes are
counted exactly for 2-64 virtual ranks (``dygsched.engine.node_memory.volumes``; a test checks the
counts against what real gloo ranks move). ``table-sven-accuracy`` and ``table-sven-breakdown`` read
the run folders of their sweeps (real gloo ranks on this machine).
"""

from dygsched.paper.sven.accuracy import ACCURACY
from dygsched.paper.sven.balance import BALANCE
from dygsched.paper.sven.breakdown import BREAKDOWN
from dygsched.paper.sven.comm import COMM
from dygsched.paper.sven.common import SECTION
from dygsched.paper.target import PaperTarget

TARGETS: tuple[PaperTarget, ...] = (COMM, BALANCE, ACCURACY, BREAKDOWN)

__all__ = ["SECTION", "TARGETS"]
