"""The advisor (``dygsched advise``): from one profile on the device at hand, every strategy's epoch
time, peak memory and traffic on the GPUs the user will rent.

The stage sits after the engine, whose pieces it profiles and whose strategies' own counting it
reuses, and before the launch stage; the planner it plans with stays free of torch. Modules:
``hardware`` (GPUs and links as data, ``hardware.csv``), ``profile`` (what profiling measured, and
the cost curves fitted on it; no torch), ``measure`` (profiling: a family's real steps, timed),
``cases`` (the strategies as typed values), ``pricing`` (what every price shares), one pricing
module per family (``snapshot_groups``, ``flare``, ``distdy``, ``node_memory``), ``advisor`` (profile,
targets, predict) and ``advice`` (ranking, recommendation, table, figure). Reading the
configuration is the command's (``dygsched.commands.advise``).
"""
