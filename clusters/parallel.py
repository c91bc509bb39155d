"""Run one blocking call per node in parallel threads."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")


class NodeErrors(RuntimeError):
    """One or more per-node calls raised.

    ``errors`` maps node name to the exception it raised; ``results`` holds
    the results of the nodes that succeeded.
    """

    def __init__(self, what: str, errors: dict[str, BaseException], results: dict[str, object]):
        detail = "; ".join(f"{node}: {err}" for node, err in sorted(errors.items()))
        super().__init__(f"{what} failed on {len(errors)} node(s): {detail}")
        self.errors = errors
        self.results = results


def on_nodes(nodes: Iterable[str], fn: Callable[[str], T], what: str = "operation") -> dict[str, T]:
    """Call ``fn(node)`` for every node, each in its own thread, and wait for all.

    Returns ``{node: result}`` in the order of ``nodes``. Every call runs to
    completion even if others fail; then, if any raised, raises
    :class:`NodeErrors` (``what`` names the operation in its message).
    """
    nodes = list(nodes)
    if not nodes:
        return {}
    results: dict[str, T] = {}
    errors: dict[str, BaseException] = {}
    with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="on-nodes") as pool:
        futures = {node: pool.submit(fn, node) for node in nodes}
        for node, fut in futures.items():
            try:
                results[node] = fut.result()
            except Exception as err:  # noqa: BLE001 - reported per node
                errors[node] = err
    if errors:
        raise NodeErrors(what, errors, dict(results))
    return results
