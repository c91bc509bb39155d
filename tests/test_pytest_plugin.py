"""The pytest plugin's ``chaos_run`` fixture, without Docker: inner test files run by
``pytester`` with the run replaced by a stand-in (``harness.pytest_plugin.RUN``),
and the JUnit XML they write."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

# imported here, before pytester's inner runs: modules first imported inside an inner run are
# dropped from sys.modules after it, and a second copy of asyncio breaks later tests
import harness.cli.main  # noqa: F401
import harness.pytest_plugin as plugin
import harness.run.runner  # noqa: F401
import nemesis.schedule  # noqa: F401
import targets.registry  # noqa: F401
import workloads.registry  # noqa: F401

pytest_plugins = ["pytester"]

VALID = {"valid": True, "anomalies": {"lost-write": 0}}
INVALID = {"valid": False, "anomalies": {"lost-write": 2, "duplicate": 0, "phantom": 1},
           "checkers": {"lost-write": {"valid": False, "anomalies": [{"value": 7, "op": 12}]}}}
UNKNOWN = {"valid": "unknown", "anomalies": {},
           "checkers": {"linearizability": {"valid": "unknown", "error": "timed out"}}}


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    """Replaces the run: ``configs`` collects each RunConfig; ``verdicts`` maps a seed to the
    results it gets (default VALID); each run gets its own folder under tmp_path."""
    class StandIn:
        configs: list = []
        verdicts: dict = {}

        def __call__(self, config):
            self.configs.append(config)
            run_dir = tmp_path / "runs" / f"{config.db}-{config.workload}-{config.seed}-{len(self.configs)}"
            run_dir.mkdir(parents=True)
            v = self.verdicts.get(config.seed, VALID)
            if isinstance(v, Exception):
                raise v
            return v, run_dir

    s = StandIn()
    s.configs, s.verdicts = [], {}
    monkeypatch.setattr(plugin, "RUN", s)
    return s


def junit(path) -> dict[str, ET.Element]:
    """testcase name -> element of a JUnit file."""
    return {tc.get("name"): tc for tc in ET.parse(path).getroot().iter("testcase")}


def props(tc: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in tc.iter("property")}


def test_chaos_run_is_parametrised_by_target_workload_nemesis_and_seed(pytester, stand_in, tmp_path):
    pytester.makepyfile("""
        def test_it(chaos_run):
            assert chaos_run.valid is True and chaos_run.anomalies == {}
    """)
    result = pytester.runpytest_inprocess(
        "--kraft-chaos-db", "kraft,kafka", "--kraft-chaos-workload", "append",
        "--kraft-chaos-nemesis", "partition,kill", "--kraft-chaos-nemesis", "none",
        "--kraft-chaos-seed", "1,2", "--kraft-chaos-time-limit", "12", "--kraft-chaos-nodes", "3",
        "--kraft-chaos-unsafe", "no-fsync", "--kraft-chaos-subnet", "10.86.0.0/24",
        "--kraft-chaos-cluster", "ssh", "--kraft-chaos-hosts", "lab.toml",
        "--kraft-chaos-store", str(tmp_path / "store"), "-rs", "-v")
    # append does not run on kafka: those four cells are skipped, naming why
    result.assert_outcomes(passed=4, skipped=4)
    result.stdout.fnmatch_lines(["*test_it?kraft-append-partition,kill-s1? PASSED*",
                                 "*workload 'append' does not run on --db kafka*"])
    cells = [(c.db, c.workload, c.nemesis, c.seed) for c in stand_in.configs]
    assert cells == [("kraft", "append", ["partition", "kill"], 1), ("kraft", "append", ["partition", "kill"], 2),
                     ("kraft", "append", [], 1), ("kraft", "append", [], 2)]
    c = stand_in.configs[0]
    assert (c.time_limit, c.nodes, c.unsafe, c.subnet, c.cluster, c.hosts, c.store) == \
        (12.0, 3, ["no-fsync"], "10.86.0.0/24", "ssh", "lab.toml", str(tmp_path / "store"))


def test_defaults_are_kraft_its_default_workload_the_default_nemesis_and_seed_0(pytester, stand_in):
    from harness.config.run import RunConfig
    pytester.makepyfile("""
        def test_it(chaos_run):
            pass
    """)
    pytester.runpytest_inprocess().assert_outcomes(passed=1)
    (c,) = stand_in.configs
    assert (c.db, c.workload, c.nemesis, c.seed) == ("kraft", "append", RunConfig(seed=0).nemesis, 0)


def test_junit_report_has_verdict_anomalies_and_store_and_an_invalid_run_fails(pytester, stand_in):
    stand_in.verdicts.update({1: INVALID, 2: UNKNOWN, 3: INVALID, 4: INVALID})
    pytester.makepyfile("""
        import pytest

        def test_safe(chaos_run):
            pass

        def test_bug_found(chaos_run):
            chaos_run.expect_invalid()

        def test_checked_by_hand(chaos_run):
            chaos_run.check()
            assert chaos_run.valid is True

        @pytest.mark.xfail(reason="known bug")
        def test_known(chaos_run):
            pass
    """)
    xml = pytester.path / "r.xml"
    result = pytester.runpytest_inprocess("--kraft-chaos-seed", "0,1,2,3", "--junitxml", str(xml),
                                          "-W", "error::pytest.PytestWarning")
    # test_safe: 0 passes, 1 (invalid) and 2 (unknown) fail, 3 fails; test_bug_found: only 1 and 3 pass;
    # test_checked_by_hand: as test_safe; test_known: 1, 2, 3 xfail, 0 xpasses
    result.assert_outcomes(passed=1 + 2 + 1, failed=3 + 2 + 3, xfailed=3, xpassed=1)
    cases = junit(xml)

    names = {n.split("[")[0] + "/" + n.rsplit("-", 1)[-1].rstrip("]"): tc for n, tc in cases.items()}
    valid = names["test_safe/s0"]
    assert valid.find("failure") is None
    p = props(valid)
    assert p["kraft_chaos.verdict"] == "VALID" and p["kraft_chaos.anomalies"] == "none"
    assert p["kraft_chaos.store"].endswith("kraft-append-0-1") and p["kraft_chaos.seed"] == "0"
    assert (p["kraft_chaos.db"], p["kraft_chaos.workload"]) == ("kraft", "append")
    assert p["kraft_chaos.repeat"].startswith("kraft-chaos run ") and "--seed 0" in p["kraft_chaos.repeat"]

    bad = names["test_safe/s1"]
    p = props(bad)
    assert p["kraft_chaos.verdict"] == "INVALID"
    assert p["kraft_chaos.anomalies"] == "lost-write=2, phantom=1"
    assert (p["kraft_chaos.anomaly.lost-write"], p["kraft_chaos.anomaly.phantom"]) == ("2", "1")
    assert "kraft_chaos.anomaly.duplicate" not in p
    msg = bad.find("failure").get("message")
    assert "kraft-chaos run INVALID: lost-write 2, phantom 1" in msg and p["kraft_chaos.store"] in msg
    assert "repeat with: kraft-chaos run" in bad.find("failure").text

    msg = names["test_safe/s2"].find("failure").get("message")
    assert "UNKNOWN" in msg and props(names["test_safe/s2"])["kraft_chaos.verdict"] == "UNKNOWN"
    assert names["test_bug_found/s1"].find("failure") is None
    assert "expected INVALID, got VALID" in names["test_bug_found/s0"].find("failure").get("message")
    assert "INVALID: lost-write 2" in names["test_checked_by_hand/s3"].find("failure").get("message")
    assert names["test_known/s1"].find("skipped") is not None


def test_a_run_that_cannot_be_made_is_an_error_with_its_cause(pytester, stand_in):
    from clusters.errors import ClusterError
    stand_in.verdicts[0] = ClusterError("no Docker engine answered")
    pytester.makepyfile("""
        def test_it(chaos_run):
            pass
    """)
    xml = pytester.path / "r.xml"
    pytester.runpytest_inprocess("--junitxml", str(xml)).assert_outcomes(errors=1)
    (tc,) = junit(xml).values()
    assert "no Docker engine answered" in tc.find("error").get("message")
    p = props(tc)
    assert p["kraft_chaos.verdict"] == "ERROR" and "ClusterError" in p["kraft_chaos.error"]


def test_the_marker_sets_fields_and_replaces_axes(pytester, stand_in):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kraft_chaos(nodes=3, rate=20, nemesis=["kill", "partition:isolate-leader,pause"], seed=5)
        def test_it(chaos_run):
            assert chaos_run.config.rate == 20
    """)
    pytester.runpytest_inprocess("--kraft-chaos-seed", "1,2", "--kraft-chaos-nodes", "5").assert_outcomes(passed=2)
    assert [(c.nodes, c.nemesis, c.seed) for c in stand_in.configs] == \
        [(3, ["kill"], 5), (3, ["partition:isolate-leader", "pause"], 5)]


def test_bad_names_are_usage_errors(pytester, stand_in):
    pytester.makepyfile("""
        def test_it(chaos_run):
            pass
    """)
    for args, text in ((["--kraft-chaos-db", "nope"], "*unknown --db 'nope'*"),
                       (["--kraft-chaos-nemesis", "partiton"], "*unknown nemesis 'partiton'*"),
                       (["--kraft-chaos-seed", "x"], "*seed must be an integer, got 'x'*"),
                       (["--kraft-chaos-cluster", "vm"], "*--kraft-chaos-cluster must be one of auto, "
                                                         "docker, netns, ssh; got 'vm'*")):
        result = pytester.runpytest_inprocess(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: kraft-chaos: " + text.lstrip("*")])
    assert stand_in.configs == []


def test_run_fn_option_names_the_stand_in(pytester, tmp_path):
    pytester.syspathinsert()
    pytester.makepyfile(fake_run=f"""
        def run(config):
            return {{"valid": False, "anomalies": {{"duplicate": 3}}}}, {str(tmp_path)!r}
    """)
    pytester.makepyfile(test_inner="""
        def test_it(chaos_run):
            pass
    """)
    result = pytester.runpytest_inprocess("--kraft-chaos-run-fn", "fake_run:run")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*kraft-chaos run INVALID: duplicate 3 (store: *)*"])


def test_the_plugin_is_registered_once_through_its_entry_point(pytestconfig):
    import importlib.metadata
    eps = [e for e in importlib.metadata.entry_points(group="pytest11") if e.value == "harness.pytest_plugin"]
    assert len(eps) == 1
    mgr = pytestconfig.pluginmanager
    assert [p for p in mgr.get_plugins() if getattr(p, "__name__", "") == "harness.pytest_plugin"] == [plugin]
