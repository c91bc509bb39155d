"""The exit codes of ``kraft-chaos`` (DEVELOPERS.md): 0 valid, 1 invalid, 2 unknown; 3 bad
input (bad arguments, malformed history), 4 the cluster or engine could not be set up, 5 any
other harness error, 130 interrupted. Shared by the command line and the engines whose
documents carry an exit code (harness/matrix/, harness/hunt/)."""
from __future__ import annotations

from typing import Any

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN = 0, 1, 2
EXIT_BAD_INPUT, EXIT_CLUSTER, EXIT_HARNESS, EXIT_INTERRUPTED = 3, 4, 5, 130


def verdict_exit(valid: Any) -> int:
    """Exit code for a verdict: True -> 0, False -> 1, anything else ("unknown") -> 2."""
    if valid is True:
        return EXIT_VALID
    if valid is False:
        return EXIT_INVALID
    return EXIT_UNKNOWN
