"""How a controller node links its controller core (kraft/controller/core.py) to its quorum
core (kraft/quorum/), without I/O: what both the asyncio adapter
(kraft/controller/service.py) and the simulator do with the two cores of one node.

- :func:`view_key`: what of the quorum core the controller depends on (when it changes, a
  :class:`kraft.controller.messages.QuorumView` is due);
- :func:`append`: a :class:`kraft.controller.messages.ProposeMetadata` carried out as one
  step of the quorum core (an in-process ProposeRequest that answers once appended),
  only if the log's end is where the controller built the records for (a
  RegisterBrokerRecord's broker epoch is its own offset).

The caller must not be inside a step of the quorum core (a step never runs inside
another).
"""
from __future__ import annotations

from ..core import errors
from ..core.events import Received, Reply
from ..core.records import METADATA, check_payload
from ..core.states import StateKind
from ..quorum.client_messages import ProposeRequest
from .messages import Appended, ProposeMetadata

#: The token of the controller's own ProposeRequest (answered within the same step).
TOKEN = ("controller", "propose")


def view_key(quorum) -> tuple:
    """What of ``quorum`` (a QuorumCore) the controller depends on: leadership, epoch, leader
    and, on the leader, the high watermark. A change means a new QuorumView is due."""
    if quorum.state.kind is StateKind.LEADER:
        return quorum.epoch, quorum.leader_id, quorum.state.metadata.applied
    return quorum.epoch, quorum.leader_id


def append(quorum, e: ProposeMetadata) -> tuple[Appended, list]:
    """Carry out ``e`` on ``quorum`` (a QuorumCore): returns the :class:`Appended` to feed the
    controller and the quorum core's effects of that step (for the node's runtime to carry
    out; empty when nothing was appended)."""
    end = quorum.state.log.end_offset
    if end != e.offset:
        return Appended(-1, end, errors.NOT_LEADER_OR_FOLLOWER), []
    try:
        for p in e.payloads:
            check_payload(p)
    except ValueError:
        return Appended(-1, end, errors.INVALID_REQUEST), []
    effects = quorum.step(Received(TOKEN, ProposeRequest(METADATA, list(e.payloads), wait=False)))
    resp, rest = None, []
    for x in effects:
        if type(x) is Reply and x.token == TOKEN:
            resp = x.msg
        else:
            rest.append(x)
    if resp is None or resp.error_code != errors.NONE:
        code = errors.NOT_LEADER_OR_FOLLOWER if resp is None else resp.error_code
        return Appended(-1, quorum.state.log.end_offset, code), rest
    return Appended(resp.offset, quorum.state.log.end_offset), rest
