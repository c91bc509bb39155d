"""Step kinds the C core (``_wgl.c``) runs without calling Python.

A model's :attr:`~.model.Model.native_kinds` maps a function name ``f`` to
one of ``READ``, ``WRITE``, ``CAS`` or ``APPEND``; the core reads each such
op's ``input`` and ``output`` and picks the variant below, ``a`` and ``b``
being values (interned by the core). Each kind's meaning, on the current
value ``v``:
"""
from __future__ import annotations

#: call the model's ``step`` in Python
PY = 0
#: legal iff v == a; v unchanged (a read that saw a = its output)
READ = 1
#: legal; v unchanged (a READ whose output is UNKNOWN)
READ_ANY = 2
#: v := a (a write of its input)
WRITE = 3
#: legal iff v == a; v := b (a cas whose input is [a b], output anything but False or UNKNOWN)
CAS = 4
#: legal iff v != a; v unchanged (a CAS whose output is False: it ran and failed its compare)
CAS_FALSE = 5
#: if v == a then v := b; legal either way (a CAS whose output is UNKNOWN)
CAS_ANY = 6
#: v := v + a, nil counting as empty (porcupine's kv append of its input)
APPEND = 7
