"""Engine stage: the Strategy interface, the worker that drives one, and the strategies themselves."""
