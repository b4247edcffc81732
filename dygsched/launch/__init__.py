"""Launch stage: the Hydra app, local worker processes, torchrun, SLURM, and the plan/simulate/runs commands."""
