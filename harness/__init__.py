"""The harness: runner, history, store, DB lifecycle, CLI and pytest plugin."""
