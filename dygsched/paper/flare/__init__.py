"""FlareDTDG: node-partitioned training on hybrid batches with temporal decay; one module per target,
the shared sweeps, labels and run-folder readers in ``common``.

Seven targets over five sweeps of ``+experiment=flare`` (a 100,000-node evolving graph, windows of
8 snapshots, 2 CPU ranks): the variants sweep (Full-History, Recent-Only, FlareDTDG and the authors'
schedule, per model) serves tables 5-7 and 12; convergence, time, heatmap and scaling have one each.

Every figure is the median over the epochs after the first of the per-epoch value: the largest over
ranks for memory, the mean over ranks for phase times. Memory is each measure under its own name,
reset every epoch: ``gpu_peak_allocated`` (the allocator's peak, what the paper's tables 5, 7 and 10
report; GPU runs only, missing on a CPU), ``peak_rss`` (the process's peak resident set),
``saved_for_backward`` (what autograd keeps for the backward in the largest window) and
``train_memory`` (that plus parameters and inherited states). Where a comparison with the paper
needs a memory figure and the runs had no GPU, it takes ``train_memory`` and says so.
"""

from dygsched.paper.flare.accuracy import ACCURACY
from dygsched.paper.flare.breakdown import BREAKDOWN
from dygsched.paper.flare.common import SECTION
from dygsched.paper.flare.convergence import CONVERGENCE
from dygsched.paper.flare.epoch_time import TIME
from dygsched.paper.flare.heatmap import HEATMAP
from dygsched.paper.flare.memory import MEMORY
from dygsched.paper.flare.scaling import SCALING
from dygsched.paper.target import PaperTarget

TARGETS: tuple[PaperTarget, ...] = (ACCURACY, MEMORY, CONVERGENCE, TIME, BREAKDOWN, HEATMAP, SCALING)

__all__ = ["SECTION", "TARGETS"]
