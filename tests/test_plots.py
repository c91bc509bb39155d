"""harness/reports/plots.py: fault bands from the nemesis ops, and the PNG files."""
from harness.reports.plot_data import fault_intervals
from harness.reports.plots import write_plots
from tests.histories.builder import clean_run


def nem(i, t_s, typ, f, value=None):
    return {"index": i, "time": int(t_s * 1e9), "type": typ, "process": "nemesis", "f": f, "value": value}


def test_fault_intervals_pair_start_and_stop_infos():
    h = [nem(0, 1, "invoke", "start-kill"), nem(1, 1.2, "info", "start-kill"),
         nem(2, 3, "invoke", "stop-kill"), nem(3, 3.1, "info", "stop-kill"),
         nem(4, 5, "invoke", "start-partition"), nem(5, 5.5, "info", "start-partition"),
         {"index": 6, "time": int(9e9), "type": "invoke", "process": 0, "f": "append", "value": 1}]
    assert fault_intervals(h) == [("kill", 1.2, 3.1), ("partition", 5.5, 9.0)]   # still active at the end
    assert fault_intervals([]) == []


def test_write_plots_makes_three_pngs(tmp_path):
    h, _ = clean_run(300)
    paths = write_plots(h.ops, tmp_path)
    assert [p.name for p in paths] == ["latency-raw.png", "rate.png", "latency-quantiles.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000


def test_write_plots_from_a_stream_draws_what_the_list_draws(tmp_path):
    """A history read op by op (e.g. history.iter_history) gives the same PNGs as the list."""
    h, _ = clean_run(120)
    (tmp_path / "list").mkdir()
    (tmp_path / "stream").mkdir()
    from_list = write_plots(h.ops, tmp_path / "list")
    from_stream = write_plots(iter(h.ops), tmp_path / "stream")
    for a, b in zip(from_list, from_stream):
        assert a.read_bytes() == b.read_bytes()


def test_plot_data_keeps_arrays_and_the_faults():
    from harness.reports.plot_data import PlotData
    h, _ = clean_run(40)
    data = PlotData.of(iter(h.ops))
    assert data.fault_intervals() == fault_intervals(h.ops)
    xs, ys, order = data.points[("append", "ok")]
    assert len(xs) == len(ys) == len(order) == sum(
        1 for o in h.ops if o["f"] == "append" and o["type"] == "ok")
    assert list(order) == sorted(order) and min(ys) >= 1e-3


def test_latency_quantiles_per_window_are_ordered():
    """p50 <= p95 <= p99 <= max in every window, windows of whole seconds at their midpoints."""
    from harness.reports.plot_data import PlotData
    from harness.reports.plots import latency_quantiles, quantile_window_s
    h, _ = clean_run(300)
    data = PlotData.of(h.ops)
    assert quantile_window_s(30) == 1.0 and quantile_window_s(600) == 10.0
    q = latency_quantiles(data, window_s=0.05)
    assert "append" in q
    mids, values = q["append"]
    assert list(values) == ["p50", "p95", "p99", "max"]
    assert len(mids) == len(values["max"]) > 1 and all(abs((m / 0.05) % 1 - 0.5) < 1e-6 for m in mids)
    for a, b in (("p50", "p95"), ("p95", "p99"), ("p99", "max")):
        assert (values[a] <= values[b]).all()
    assert latency_quantiles(PlotData()) == {}
