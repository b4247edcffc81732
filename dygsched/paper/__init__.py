"""The papers' tables and figures as package code: one module per paper, or a package with one module
per target (its targets, builders and readings), ``bench/`` (the engine's own benchmarks),
``published/`` (the papers' printed numbers), the sweep runner with its provenance records and
``dygsched paper``'s command (``cli``). ``registry`` lists every target; ``target`` says what one is."""
