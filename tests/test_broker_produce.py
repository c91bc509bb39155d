"""kraft/rules/produce.py: Produce's acks and min.insync.replicas decisions."""
from kraft.core import errors
from kraft.rules.produce import DEFINITE, check_append, outcome


def test_check_append():
    assert check_append(1, isr_size=1, min_insync=2) == errors.NONE      # acks=1 ignores the ISR
    assert check_append(0, isr_size=1, min_insync=2) == errors.NONE
    assert check_append(-1, isr_size=2, min_insync=2) == errors.NONE
    assert check_append(-1, isr_size=1, min_insync=2) == errors.NOT_ENOUGH_REPLICAS
    assert check_append(2, isr_size=3, min_insync=1) == errors.INVALID_REQUIRED_ACKS


def test_acks_one_waits_for_the_leaders_counted_end():
    assert outcome(1, offset=5, counted_end=5, hw=0, isr_size=1, min_insync=3) is None
    assert outcome(1, offset=5, counted_end=6, hw=0, isr_size=1, min_insync=3) == errors.NONE


def test_acks_all_waits_for_the_high_watermark():
    assert outcome(-1, offset=5, counted_end=9, hw=5, isr_size=3, min_insync=2) is None
    assert outcome(-1, offset=5, counted_end=9, hw=6, isr_size=3, min_insync=2) == errors.NONE
    assert outcome(-1, offset=5, counted_end=9, hw=6, isr_size=1, min_insync=2) == \
        errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_acks_zero_is_done_at_once():
    assert outcome(0, offset=5, counted_end=0, hw=0, isr_size=0, min_insync=3) == errors.NONE


def test_after_append_errors_are_not_definite():
    assert errors.NOT_ENOUGH_REPLICAS in DEFINITE
    assert errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND not in DEFINITE
    assert errors.REQUEST_TIMED_OUT not in DEFINITE
