"""Hand-made histories for the checker tests."""
