"""The built-in solvers, one module each, and the table that names them.

A new solver is one more file in this folder (a ``Solver`` subclass with a ``name``) and one line in
``BUILTIN_SOLVERS``. A solver in another package is named ``package.module:Class`` in a setting, or
added to the table through the ``dygsched.solvers`` entry-point group (``dygsched.planner.solve``).
"""

from dygsched.components import Named

BUILTIN_SOLVERS: tuple[Named, ...] = (
    Named("psg", "dygsched.planner.solvers.psg:PSG"),
    Named("blad", "dygsched.planner.solvers.blad:BLAD"),
    Named("dygnex_g", "dygsched.planner.solvers.dygnex_g:DyGNeXG"),
    Named("dygnex_l", "dygsched.planner.solvers.dygnex_l:DyGNeXL"),
    Named("real_g_paper", "dygsched.planner.solvers.real_g_paper:RealGPaper"),
    Named("greedy", "dygsched.planner.solvers.greedy:RealGPlus"),
    Named("ilp", "dygsched.planner.solvers.ilp:RealL"),
    Named("real", "dygsched.planner.solvers.policy:RealPolicy"),
)
