"""Certification, not runtime: valid lower bounds that show how far a plan can be from the optimum.

``iteration_bound`` and ``configuration_bound`` are expensive (seconds to minutes of HiGHS); the
planner benchmark (``scripts/bench_planner.py --certify``) uses them to check the planner's
targets. Training never imports them: a plan's own gap is against ``dygsched.planner.lower_bound``.
"""
