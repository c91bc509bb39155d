"""One run end to end: the runner, what the nodes run, leaders, progress, power-loss disks, checking a stored run."""
