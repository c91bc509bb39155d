"""What a run is told: ``RunConfig`` (resolved once into the value a run reads), the named
schedules, scenario files and workload options."""
