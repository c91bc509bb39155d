"""``make bench``: figures measured side by side with their anchors in the same run."""
