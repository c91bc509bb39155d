"""Synthetic histories for the analysis, and checking ``analyze`` against ``check``."""
