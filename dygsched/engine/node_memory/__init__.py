"""Memory-based continuous-time training over ranks: the one-process reference, DepCache, DepComm and Sven.

One loop (``strategy.py``: ``NodeMemoryStrategy``) drives a memory backend (``backend.py``: where the
node state lives, how a step reads it, how its writes reach it): ``single.py`` (the one-process
reference; ``LocalMemory``), ``depcache.py``, ``sharded.py`` (disjoint state: what DepComm and Sven
share), ``depcomm.py`` and ``sven.py``, each with the strategy class its ``conf/sched`` file names.
Beside them: a step's batch and series (``batches.py``), its negatives (``negatives.py``), the
state table and ownership (``state.py``), the writes (``updates.py``), Sven's organisation
(``organise.py``), the exchanges and their bytes (``transport.py``), the settings (``config.py``)
and the traffic counted in one process for any rank count (``volumes.py``). The link-prediction
metrics are ``dygsched.metrics.link_prediction``.
"""
