"""The commands beside ``dygsched run``: browsing runs, fetching datasets, planning, simulating, checking a GPU.

``dygsched runs`` (``runs.py``), ``datasets`` (``datasets.py``), ``plan`` (``plan.py``) and
``simulate`` (``simulate.py``), and ``make check-gpu`` (``gpu_check/``, ``python -m
dygsched.commands.gpu_check``): each is one module (or package) with a ``main(argv)`` that
``dygsched/cli.py`` dispatches to. None of them launches a run of its own making: what composes,
checks and launches a run is ``dygsched/launch/``, which the GPU check calls like ``dygsched run``.
``dygsched predict`` and ``embed`` (``predict.py``) read a finished run back and write its
predictions and embeddings as Parquet.
``dygsched advise`` (``advise.py``) composes the typed run once per strategy and hands the advisor
(``dygsched/advise/``) typed values.
"""
