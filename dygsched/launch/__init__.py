"""Launch stage: the Hydra app, local worker processes, torchrun, and the plan/simulate commands."""
