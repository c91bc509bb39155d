"""The log: torn-tail recovery, truncation and the epoch cache (KIP-595)."""
import os

import pytest

from kraft.core.records import DATA, LEADER_CHANGE, Record
from kraft.storage.log import Log, LogError
from kraft.storage.logreader import read_data_dir
from kraft.storage.segments import list_segments


def fill(log: Log, epochs):
    for e in epochs:
        log.append(Record(log.end_offset, e, DATA, {"v": log.end_offset}))
    log.flush()


def test_torn_tail_is_cut_at_the_last_valid_record(tmp_path):
    lg = Log(tmp_path / "log")
    lg.open()
    fill(lg, [1, 1, 1, 2])
    lg.close()
    seg = list_segments(tmp_path / "log")[-1][1]
    whole = seg.stat().st_size
    with open(seg, "ab") as f:                 # a record cut off mid-write
        f.write(b"\x00\x00\x00\x40\x12\x34")
    assert read_data_dir(tmp_path).torn_bytes == 6
    lg2 = Log(tmp_path / "log")
    lg2.open()
    assert lg2.recovered_bytes == 6
    assert [r.offset for r in lg2.records] == [0, 1, 2, 3]
    assert seg.stat().st_size == whole
    fill(lg2, [3])                              # appends continue after the cut
    lg2.close()
    assert [r.epoch for r in read_data_dir(tmp_path).records] == [1, 1, 1, 2, 3]


def test_corrupt_record_cuts_the_rest(tmp_path):
    lg = Log(tmp_path / "log")
    lg.open()
    fill(lg, [1] * 5)
    pos = lg._pos[2][1]
    lg.close()
    seg = list_segments(tmp_path / "log")[0][1]
    data = bytearray(seg.read_bytes())
    data[pos + 20] ^= 0xFF                      # flip a byte inside record 2 (CRC mismatch)
    seg.write_bytes(bytes(data))
    lg2 = Log(tmp_path / "log")
    lg2.open()
    assert lg2.end_offset == 2 and lg2.recovered_bytes > 0


def test_segments_roll_and_truncate_across_them(tmp_path):
    lg = Log(tmp_path / "log", segment_bytes=200)
    lg.open()
    fill(lg, [1] * 10 + [2] * 10)
    assert [b for b, _ in list_segments(tmp_path / "log")] == [0, 8, 15]
    assert lg.truncate_to(7) == 13
    assert [b for b, _ in list_segments(tmp_path / "log")] == [0]
    assert lg.end_offset == 7 and lg.last_epoch == 1
    assert lg.end_offset_for_epoch(2) == (1, 7)
    fill(lg, [3, 3])
    lg.close()
    again = Log(tmp_path / "log", segment_bytes=200)
    again.open()
    assert [r.epoch for r in again.records] == [1] * 7 + [3, 3]
    assert again.recovered_bytes == 0


def test_end_offset_for_epoch(tmp_path):
    lg = Log(tmp_path / "log")
    lg.open()
    fill(lg, [1, 1, 1, 3, 3, 5])
    assert lg.end_offset_for_epoch(0) == (0, 0)
    assert lg.end_offset_for_epoch(1) == (1, 3)
    assert lg.end_offset_for_epoch(2) == (1, 3)     # largest epoch <= 2 is 1
    assert lg.end_offset_for_epoch(3) == (3, 5)
    assert lg.end_offset_for_epoch(5) == (5, 6)
    assert lg.end_offset_for_epoch(9) == (5, 6)
    assert lg.epoch_start(3) == 3 and lg.epoch_start(2) is None


def test_no_fsync_switch_keeps_records_in_the_process(tmp_path):
    lg = Log(tmp_path / "log", fsync=False)
    lg.open()
    lg.append(Record(0, 1, LEADER_CHANGE, {"LeaderId": 1}))
    lg.flush()
    assert lg.flushed_end == 1                       # counted as stored ...
    assert read_data_dir(tmp_path).records == []     # ... but a crash now would lose it
    lg.write_out_buffer()
    assert len(read_data_dir(tmp_path).records) == 1
    os.close(lg._fd)


def test_writes_after_close_raise_log_error_and_change_nothing(tmp_path):
    lg = Log(tmp_path / "log")
    lg.open()
    fill(lg, [1, 1])
    lg.append(Record(2, 1, DATA, {"v": 2}))          # appended, not yet fsynced
    lg.close()
    for write in (lambda: lg.append(Record(3, 1, DATA, {"v": 3})), lg.flush, lambda: lg.truncate_to(1)):
        with pytest.raises(LogError, match="not open"):
            write()
    assert lg.end_offset == 3 and lg.flushed_end == 2
    assert [r.offset for r in read_data_dir(tmp_path).records] == [0, 1, 2]
