"""What a run is told: ``RunConfig``, the named schedules, scenario files and workload options."""
