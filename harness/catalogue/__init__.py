"""The bug catalogue, scenario families, shrinking, first detection, and matrix files."""
