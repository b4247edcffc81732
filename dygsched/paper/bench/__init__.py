"""The engine's own benchmarks: speed against hand-written loops, what counting FLOPs costs, how time
and memory grow with the graph and the stream, and the accuracy of the memory-based models; one
module per benchmark (the hand-written loops they compare with are ``*_baseline``, imported only
when their builder runs).

None of these but ``table-unified`` and ``table-node-tasks`` reproduces a paper's table, so none other has a shape or
headlines; ``table-unified`` sits beside UTG's plotted figures (``published/utg.csv``) and is
judged against them where the data are UTG's. Where a
benchmark compares dygsched with a loop written here (PyTorch Geometric Temporal's cells, PyG's TGN
modules), alternates runs, or needs each run in a process of its own (its peak memory, a time
limit), the builder runs ``dygsched run`` itself (``dygsched.paper.runner.run_in_process_of_its_own``);
plain sweeps are the targets' ``Sweep``. Nothing here imports torch until a builder runs.
"""

from dygsched.paper.bench.advise import ADVISE_BENCH
from dygsched.paper.bench.common import ACCURACY_SECTION, SECTION
from dygsched.paper.bench.flop_counting import FLOP_COUNTING
from dygsched.paper.bench.node_tasks import NODE_TASKS
from dygsched.paper.bench.scaling import SCALING
from dygsched.paper.bench.stream_accuracy import STREAM_ACCURACY
from dygsched.paper.bench.stream_scaling import STREAM_SCALING
from dygsched.paper.bench.tgn_pyg import TGN_PYG
from dygsched.paper.bench.unified import UNIFIED
from dygsched.paper.bench.vs_pygt import VS_PYGT
from dygsched.paper.target import PaperTarget

# in the report's order: the "Engine speed" targets, then those under "Accuracy under published protocols"
TARGETS: tuple[PaperTarget, ...] = (
    FLOP_COUNTING,
    VS_PYGT,
    TGN_PYG,
    STREAM_SCALING,
    SCALING,
    ADVISE_BENCH,
    STREAM_ACCURACY,
    UNIFIED,
    NODE_TASKS,
)

# speed and scale under "Engine speed"; the models' accuracy under published protocols under a heading of its own
SECTIONS = (SECTION, ACCURACY_SECTION)

__all__ = ["ACCURACY_SECTION", "SECTION", "SECTIONS", "TARGETS"]
