"""Engine stage: what each rank does with its part of the plan."""
