"""Step kinds the C core (``_wgl.c``) runs without calling Python.

A model's :meth:`~.model.Model.native` maps an op to ``(kind, a, b)``; ``a``
and ``b`` are values (interned by the core). Each kind's meaning, on the
current value ``v``:
"""
from __future__ import annotations

#: call the model's ``step`` in Python
PY = 0
#: legal iff v == a; v unchanged (a read that saw a)
READ = 1
#: legal; v unchanged (a read whose result is unknown)
READ_ANY = 2
#: v := a (a write)
WRITE = 3
#: legal iff v == a; v := b (a cas that succeeded)
CAS = 4
#: legal iff v != a; v unchanged (a cas that ran and failed its compare)
CAS_FALSE = 5
#: if v == a then v := b; legal either way (a cas whose result is unknown)
CAS_ANY = 6
#: v := v + a, nil counting as empty (porcupine's kv append)
APPEND = 7
