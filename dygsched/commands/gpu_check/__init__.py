"""``python -m dygsched.commands.gpu_check [RESULTS]``: every strategy, every collective, on this node's GPUs, in minutes.

What a first hour on a machine with a GPU should answer, as one table (``check_gpu.csv`` and
``check_gpu.md`` in ``RESULTS``, default ``results/check-gpu``, rewritten after every row so a run
cut short still leaves what it got):

1. ``probe``: the communication module (``dygsched.engine.comm``) on the backends a CUDA run uses.
   At one rank, the mixed backend ``cpu:gloo,cuda:nccl``: every collective helper on CPU and CUDA
   tensors, all-to-alls with uneven and zero-row splits, the asynchronous forms, the object
   collectives (the one-rank shortcut of the helpers is turned off, so each call goes through
   torch.distributed and its backend); then the same under ``nccl`` alone (``dist_backend=nccl``:
   CPU tensors staged through the GPU). With two GPUs or more, the same at two ranks, each on a GPU
   of its own, under both: NCCL between two GPUs (``probing.probe_settings``). At two ranks sharing
   GPU 0 (gloo, CUDA tensors staged through the host): the same helpers with real exchanges,
   send/recv included. Each probe rank is a child process with a deadline, so a backend that aborts
   (NCCL's SIGABRT) fails its rows only.
2. ``ws1``: every strategy of ``conf/sched`` on small data at ``world_size=1 device=cuda``.
3. ``ws2``: every strategy at ``world_size=2``: each rank on a GPU of its own (NCCL) where there are
   two, else both on the one GPU (gloo).

Each run of 2. and 3. is composed with the real configs, checked and prepared as ``dygsched run``
prepares it before its launcher starts the ranks (``launch.app.claim_run``), then trained by ranks
the check keeps (``groups``): each world size and device has one group of spawned ranks, started
when a run first needs it, which joins its process group once and trains run after run in it
through the worker's own path (``train_in_joined_group``), as the strategy contract battery does on
CPU; so a run costs its training, not its ranks' start (imports and CUDA: 13-27 s each on an
H200). Each is trained again with ``device=cpu`` (the CPU twin, on CPU ranks that see no GPU): the
table puts the two final training losses side by side. A run that fails is one row with its
one-line reason; one that fails, dies or outlasts its deadline on its ranks also ends their group,
and the next run that needs it starts a fresh one. Every run and every group's start has a
deadline (``--run-timeout-s``, collectives ``dist_timeout_s``), and the whole check a budget
(``--budget-s``) after which the runs left are rows marked ``skipped``. CUDA is initialised in the
spawned ranks only: this process counts GPUs through NVML and reads the GPU's name from its ranks.

Exit status: 1 when a probe case or a run did not end ``ok``, a run's final loss differs from its
CPU twin's beyond the twins' tolerance (``table.CLOSE``), or a twin failed (each such row is printed
last, with its reason; ``table.failure``); 0 otherwise (rows the budget skipped are listed, and fail
nothing); 2 for bad arguments; stopped by SIGTERM or Ctrl-C, it stops its ranks, keeps the table of
the rows so far and exits 128 + the signal. Without a CUDA device it prints one line and exits 0.
``--device cpu`` runs the same code on CPU, groups included (a rehearsal: the probe's CUDA rows are
left out, the "device" runs are CPU runs, trained by the same CPU ranks as their twins).

The package, one job a module: ``variants`` (the runs), ``table`` (rows, progress, the table's
files), ``probe_cases`` and ``probing`` (part 1), ``groups`` (the ranks that train parts 2 and 3),
``runs`` (a run prepared, trained and read back; a variant's row), ``cli`` (the command line and
the parts in order; ``__main__`` runs it).
"""

from dygsched.commands.gpu_check.cli import DEFAULT_RESULTS, main
from dygsched.commands.gpu_check.probing import probe, probe_rows
from dygsched.commands.gpu_check.runs import RunTimedOut, deadline, one_run, run_overrides
from dygsched.commands.gpu_check.table import COLUMNS, Clock, Row, loss_check, markdown, write_table
from dygsched.commands.gpu_check.variants import VARIANTS, Variant

__all__ = [
    "COLUMNS",
    "DEFAULT_RESULTS",
    "VARIANTS",
    "Clock",
    "Row",
    "RunTimedOut",
    "Variant",
    "deadline",
    "loss_check",
    "main",
    "markdown",
    "one_run",
    "probe",
    "probe_rows",
    "run_overrides",
    "write_table",
]
