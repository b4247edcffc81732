"""``python -m dygsched.paper.bench.gpu [RESULTS]`` (``make bench-gpu``): the engine on one GPU, in minutes.

Five comparisons, A (ours) against B, alternated A B A B over ``--rounds`` (``pairs``): TGCN through
the engine against the plain loop of bench-vs-pygt; REAL against PSG on the Arxiv-sized graph; the
reference TGN against the TGN of PyG's temporal modules on the Wikipedia-sized stream; FlareDTDG's
peak GPU memory against Full-History's; Sven's epoch with and without its prefetch, two ranks
sharing the GPU. Each ratio is printed with its spread (lowest and highest over the rounds, or over
the epochs for memory) and each side's host-device synchronisations per step, and written to
``bench_gpu.csv`` and ``bench_gpu.md`` in ``RESULTS`` (default ``results/bench-gpu``) after every
pair, with ``bench_gpu_machine.json`` (Python, torch, CUDA, NCCL, the GPU); each engine run keeps
its folder under ``runs/``.

Every run has a deadline (``--run-timeout-s``), the whole bench a budget (``--budget-s``) after which
no pair or round starts (a pair then has fewer rounds, or is a row marked ``skipped``). Exit status:
0 when every pair that ran gave its figures, 1 when one failed (its row says why), 2 for bad
arguments; SIGTERM or Ctrl-C stop it with the table so far. Without a CUDA device it says so in one
line and exits 0; ``--device cpu`` runs the same code on CPU (``--size tiny``: the tests' sizes).

Modules: ``pairs`` (the workloads and the two sides of each), ``plain`` (the plain TGCN loop),
``cli`` (the command line and the table; ``__main__`` runs it).
"""

from dygsched.paper.bench.gpu.cli import COLUMNS, DEFAULT_RESULTS, main
from dygsched.paper.bench.gpu.pairs import PAIRS, SIZES

__all__ = ["COLUMNS", "DEFAULT_RESULTS", "PAIRS", "SIZES", "main"]
