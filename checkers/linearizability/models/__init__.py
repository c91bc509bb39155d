"""The models the linearizability checker knows, by name (``--model``)."""
from __future__ import annotations

from typing import Any

from ..model import Model
from .kv import KeyValue
from .log import LogModel
from .multi_register import MultiRegister
from .mutex import Mutex
from .queue import FifoQueue
from .register import CasRegister

#: name -> factory(**options) -> Model
MODELS = {
    "register": CasRegister,
    "cas-register": CasRegister,
    "kv": KeyValue,
    "multi-register": MultiRegister,
    "mutex": Mutex,
    "fifo-queue": FifoQueue,
    "log": LogModel,
}


def make_model(name: str, **options: Any) -> Model:
    """A fresh model by name; raises ValueError naming the choices for an unknown one."""
    try:
        factory = MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}: choose from {', '.join(sorted(MODELS))}") from None
    return factory(**options)
