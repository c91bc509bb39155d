"""harness/reports/trends.py: per-day tables, the three trend PNGs and index.html."""
import matplotlib.image as mpimg
import pandas as pd
import pytest

from harness.reports.trends import (anomaly_runs_per_day, availability_per_day, day_tick_positions,
                            latency_by_nemesis, write_trends)

ANOMALIES = ["lost_write", "phantom", "duplicate", "inconsistent_offsets", "divergence",
             "election_safety", "nonmonotonic_read", "linearizability"]
NAMES = ["anomalies-per-day.png", "availability-per-day.png", "latency-by-nemesis.png", "index.html"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NAN = float("nan")


def run(name, date, verdict="valid", nemesis="partition+kill+pause", availability=0.9,
        p50=5.0, p99=50.0, error=None, **anomalies):
    row = {"run": name, "date": date, "workload": "append", "synthetic": False, "verdict": verdict,
           "ops": 1000, "availability": availability, "latency_p50_ms": p50, "latency_p99_ms": p99,
           "nemesis": nemesis, "seed": 1, "commit": "abc", "malformed_lines": 0, "error": error}
    row.update({a: anomalies.get(a, 0) for a in ANOMALIES})
    return row


def sample_runs():
    """8 runs over 3 days (one undated), 2 nemesis kinds, some anomalies."""
    return pd.DataFrame([
        run("append-partition+kill+pause/20261120T100000.000Z", "2026-11-20", availability=0.8),
        run("append-partition+kill+pause/20261120T110000.000Z", "2026-11-20", "invalid",
            availability=0.6, lost_write=3, inconsistent_offsets=1),
        run("append-none/20261120T120000.000Z", "2026-11-20", nemesis="none", availability=1.0,
            p50=1.0, p99=4.0),
        run("append-partition+kill+pause/20261121T100000.000Z", "2026-11-21", "invalid",
            availability=0.5, lost_write=1, phantom=2),
        run("kv-none/20261121T110000.000Z", "2026-11-21", "unknown", nemesis="none",
            availability=NAN, p50=NAN, p99=NAN, error="checker timed out"),
        run("append-partition+kill+pause/20261122T100000.000Z", "2026-11-22", "invalid",
            availability=0.7, phantom=1, linearizability=1),
        run("append-partition+kill+pause/20261122T110000.000Z", "2026-11-22", p50=8.0, p99=900.0),
        run("append-none/undated", None, "invalid", nemesis="none", duplicate=2),
    ])


MALFORMED = [{"file": "runs/part-0001.jsonl", "line": 17, "reason": "not JSON"}]


def assert_png(path, min_w=400, min_h=200):
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] >= min_h and img.shape[1] >= min_w
    assert img.std() > 0   # not a blank image


def test_anomaly_runs_per_day_counts_runs_per_type():
    per_day = anomaly_runs_per_day(sample_runs(), ANOMALIES)
    assert list(per_day.index) == ["2026-11-20", "2026-11-21", "2026-11-22"]   # undated run left out
    assert list(per_day.columns) == [*ANOMALIES, "runs"]
    expected = pd.DataFrame(0, index=per_day.index, columns=per_day.columns)
    expected.loc["2026-11-20", ["lost_write", "inconsistent_offsets"]] = 1
    expected.loc["2026-11-21", ["lost_write", "phantom"]] = 1
    expected.loc["2026-11-22", ["phantom", "linearizability"]] = 1
    expected["runs"] = [3, 2, 2]
    pd.testing.assert_frame_equal(per_day, expected, check_dtype=False)
    assert (per_day.dtypes == "int64").all()


def test_anomaly_runs_per_day_counts_a_run_once_per_type_however_many():
    runs = pd.DataFrame([run("a", "2026-01-02", lost_write=5), run("b", "2026-01-02", lost_write=1),
                         run("c", "2026-01-01", phantom=NAN)])
    per_day = anomaly_runs_per_day(runs, ANOMALIES)
    assert list(per_day.index) == ["2026-01-01", "2026-01-02"]
    assert per_day.loc["2026-01-02", "lost_write"] == 2
    assert per_day.loc["2026-01-01"].drop("runs").sum() == 0   # NaN counts as 0


def test_availability_per_day_mean_and_min():
    av = availability_per_day(sample_runs())
    assert av.loc["2026-11-20", "mean"] == pytest.approx(0.8)
    assert av.loc["2026-11-20", "min"] == pytest.approx(0.6)
    assert av.loc["2026-11-21", "mean"] == pytest.approx(0.5)   # the NaN run is left out
    assert av.loc["2026-11-21", "n"] == 1
    assert av.loc["2026-11-22", "min"] == pytest.approx(0.7)


def test_latency_by_nemesis_groups_kinds_none_first():
    data = latency_by_nemesis(sample_runs())
    assert list(data) == ["none", "partition+kill+pause"]
    assert sorted(data["none"]["latency_p50_ms"]) == [1.0, 5.0]   # NaN left out
    assert sorted(data["partition+kill+pause"]["latency_p99_ms"]) == [50.0] * 4 + [900.0]


def test_write_trends_writes_plots_and_page(tmp_path):
    runs = sample_runs()
    runs.loc[len(runs)] = run("evil/<script>alert(1)</script>", "2026-11-22", "invalid",
                              error="<b>boom</b>", divergence=1)
    types = pd.DataFrame({"anomaly": ["lost_write", "phantom"], "runs": [2, 2], "total": [4, 3]})
    out = tmp_path / "analysis" / "trends"   # created, parents too
    paths = write_trends(runs, types, out, ANOMALIES, malformed=MALFORMED)
    assert paths == [out / n for n in NAMES]
    for p in paths[:3]:
        assert_png(p)
    page = paths[3].read_text()
    assert "<title>kraft-chaos analysis</title>" in page
    for name in NAMES[:3]:
        assert f'src="{name}"' in page
    assert "9 runs: 3 valid, 5 invalid, 1 unknown" in page
    for name in runs.loc[runs["verdict"] != "valid", "run"]:
        if "<" not in name:
            assert name in page
    assert "lost_write: 3, inconsistent_offsets: 1" in page
    assert "checker timed out" in page
    assert "runs/part-0001.jsonl:17" in page and "not JSON" in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>boom</b>" not in page and "&lt;b&gt;boom&lt;/b&gt;" in page
    assert "1 run without a date" in page
    assert "http" not in page   # nothing external


def test_write_trends_empty_runs(tmp_path):
    paths = write_trends(pd.DataFrame(), pd.DataFrame(columns=["anomaly", "runs", "total"]),
                         tmp_path, ANOMALIES)
    assert [p.name for p in paths] == NAMES
    for p in paths[:3]:
        assert_png(p)
    page = paths[3].read_text()
    assert "No runs." in page and "malformed" not in page
    assert anomaly_runs_per_day(pd.DataFrame(), ANOMALIES).empty


def test_write_trends_empty_runs_with_columns(tmp_path):
    empty = pd.DataFrame([run("x", "2026-01-01")]).iloc[:0]
    paths = write_trends(empty, pd.DataFrame(), tmp_path, ANOMALIES, malformed=MALFORMED)
    assert "No runs." in paths[3].read_text()
    assert "runs/part-0001.jsonl:17" in paths[3].read_text()


def test_write_trends_all_nan_availability_and_latency(tmp_path):
    runs = pd.DataFrame([run(f"r{i}", "2026-03-01", availability=None, p50=None, p99=None)
                         for i in range(3)])
    paths = write_trends(runs, pd.DataFrame(), tmp_path, ANOMALIES)
    for p in paths[:3]:
        assert_png(p)
    page = paths[3].read_text()
    assert "3 runs: 3 valid, 0 invalid, 0 unknown" in page and "Every run is valid." in page


def test_write_trends_no_dates_at_all(tmp_path):
    runs = pd.DataFrame([run("a", None), run("b", "not-a-date", "invalid", lost_write=1)])
    paths = write_trends(runs, pd.DataFrame(), tmp_path, ANOMALIES)
    for p in paths[:3]:
        assert_png(p)
    assert "2 runs without a date" in paths[3].read_text()


def test_write_trends_many_days_with_gaps(tmp_path):
    days = pd.date_range("2026-01-01", periods=120, freq="D").strftime("%Y-%m-%d")
    runs = pd.DataFrame([run(f"r{i}", d, "invalid" if i % 7 == 0 else "valid",
                             nemesis=["none", "kill", "partition"][i % 3],
                             availability=0.5 + (i % 5) / 10, p50=0.5 + i % 4, p99=10.0 ** (i % 5),
                             lost_write=int(i % 7 == 0), phantom=int(i % 11 == 0))
                         for i, d in enumerate(days) if i % 9 != 4])   # some days without runs
    paths = write_trends(runs, pd.DataFrame(), tmp_path, ANOMALIES)
    for p in paths[:3]:
        assert_png(p)
    per_day = anomaly_runs_per_day(runs, ANOMALIES)
    assert per_day["runs"].sum() == len(runs) and len(per_day) == len(runs)


def test_day_tick_positions_thinned_over_60_days():
    assert day_tick_positions(1) == [0]
    assert day_tick_positions(60) == list(range(60))
    pos = day_tick_positions(120)
    assert pos[0] == 0 and len(pos) <= 30 and pos == list(range(0, 120, 4))


def test_write_trends_missing_column_raises(tmp_path):
    runs = pd.DataFrame([run("a", "2026-01-01")]).drop(columns=["latency_p99_ms"])
    with pytest.raises(ValueError, match="latency_p99_ms"):
        write_trends(runs, pd.DataFrame(), tmp_path, ANOMALIES)
    with pytest.raises(ValueError, match="made_up"):
        write_trends(pd.DataFrame([run("a", "2026-01-01")]), pd.DataFrame(), tmp_path, ["made_up"])


def test_anomalies_chart_tells_its_two_axes_apart():
    from matplotlib.colors import to_hex

    from harness.reports.trends import RUNS_COLOUR, _type_colours, anomalies_figure
    fig = anomalies_figure(anomaly_runs_per_day(sample_runs(), ANOMALIES), ANOMALIES)
    try:
        left, right = fig.axes
        assert "left" in left.get_ylabel() and "right" in right.get_ylabel()
        assert left.get_ylabel() != right.get_ylabel()
        # the right axis, its ticks, spine and line have one colour no anomaly type has
        colour = to_hex(RUNS_COLOUR)
        assert colour not in {to_hex(c) for c in _type_colours(ANOMALIES).values()}
        assert to_hex(right.yaxis.label.get_color()) == colour
        assert to_hex(right.spines["right"].get_edgecolor()) == colour
        assert all(to_hex(t.label2.get_color()) == colour for t in right.yaxis.get_major_ticks())
        assert to_hex(left.yaxis.label.get_color()) != colour
        (line,) = right.get_lines()
        assert to_hex(line.get_color()) == colour and line.get_linestyle() == "--"
        # every legend entry says which axis it is read on
        labels = [t.get_text() for t in left.get_legend().get_texts()]
        assert "all runs that day (line, right axis)" in labels
        assert [lb for lb in labels if "left axis" in lb] == [
            f"{c} (bars, left axis)" for c in ("lost_write", "phantom", "inconsistent_offsets", "linearizability")]
    finally:
        import matplotlib.pyplot as plt
        plt.close(fig)
