"""The bug catalogue, scenario families, shrinking a failing run, and the time to the first anomaly."""
