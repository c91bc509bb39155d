"""pytest plugin (entry point ``pytest11``): ``chaos_run``, ``kraft_chaos_run``, markers and options.

Installed with the package (``pip install -e .``), pytest loads it by
itself; ``-p no:kraft_chaos`` turns it off.

**``chaos_run``**: one real run per test *cell*. A test that requests it is
parametrised (``pytest_generate_tests``) by target x workload x nemesis x
seed, taken from the options (defaults: ``kraft``, the target's default
workload, the default nemesis, seed 0)::

    def test_safe(chaos_run):            # fails by itself when the run is invalid
        assert chaos_run.results["stats"]["counts"]["append"]["ok"] > 100

    pytest --kraft-chaos-db kraft,kafka --kraft-chaos-nemesis partition,kill \\
           --kraft-chaos-nemesis none --kraft-chaos-seed 1,2 --junitxml report.xml

The fixture runs the test (:func:`harness.run.runner.run_test`) during set-up
and returns a :class:`ChaosRun`. The verdict is checked after the test body,
as Jepsen's ``(is (:valid? results))`` would be: a run whose verdict is not
``True`` fails the test (``<failure>`` in the JUnit report) with a message
naming the verdict, the anomalies and the store path, unless the test body
failed first or called :meth:`ChaosRun.check` itself (the same check, at
that point). After :meth:`ChaosRun.expect_invalid` (a test that wants a bug
found) it is the other way round: a run that is *not* invalid fails. Under
``@pytest.mark.xfail`` a bad verdict is an xfail. A run that cannot be made (cluster or harness error) is a set-up
error (``<error>``).

Every ``chaos_run`` test gets JUnit properties (``record_property``):
``kraft_chaos.verdict`` (VALID, INVALID, UNKNOWN or ERROR),
``kraft_chaos.anomalies`` (``"lost-write=2, duplicate=1"`` or ``"none"``),
``kraft_chaos.anomaly.<kind>`` (count, one per kind found),
``kraft_chaos.store`` (the run folder), ``kraft_chaos.db``,
``kraft_chaos.workload``, ``kraft_chaos.nemesis``, ``kraft_chaos.seed``,
``kraft_chaos.repeat`` (the command line that repeats the run).

``@pytest.mark.kraft_chaos(**fields)`` sets :class:`harness.config.run.RunConfig`
fields for a test's runs; ``db``, ``workload``, ``nemesis`` (a ``--nemesis``
string or a list of them) and ``seed`` (an int or a list) replace that axis of
the parametrisation (``nemesis="partition,kill"`` is one cell, ``nemesis=["kill",
"none"]`` two).

**``kraft_chaos_run``**: a factory, ``kraft_chaos_run(**fields) -> (results,
store_dir)``, for tests that drive their own configs::

    @pytest.mark.docker
    def test_partitions(kraft_chaos_run):
        results, store_dir = kraft_chaos_run(nodes=3, time_limit=20, nemesis=["partition"])
        assert results["valid"] is True

Runs go to a per-session temporary store unless ``--kraft-chaos-store DIR``
is given. :data:`RUN` (or ``--kraft-chaos-run-fn MODULE:FUNC``) replaces the
function that makes ``chaos_run``'s run, for tests of the plugin itself.
"""
from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any, Callable

import pytest

from clusters.registry import BACKENDS
from harness.config.resolved import resolve
from harness.config.run import RunConfig
from harness.reports.summary import format_results
from harness.run import runner
from nemesis.schedule import parse_fault_names
from targets.registry import DEFAULT_TARGET, target_spec
from workloads.registry import workload_spec

#: ``RUN(config) -> (results, run_dir)`` makes ``chaos_run``'s run of a RunConfig; None: a real
#: run (the config resolved, ``harness.run.runner.prepare_run``, then ``run_test(config,
#: run_dir, progress=False)``)
RUN: Callable[[Any], tuple[dict, Path]] | None = None

#: the axes a test is parametrised by, in the id's order
AXES = ("db", "workload", "nemesis", "seed")
#: property names in the JUnit report start with this
PROP = "kraft_chaos."

_CHAOS_KEY = pytest.StashKey["ChaosRun"]()
_STORE_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--kraft-chaos-*`` options (group ``kraft-chaos``)."""
    g = parser.getgroup("kraft-chaos", "kraft-chaos runs (chaos_run, kraft_chaos_run)")
    g.addoption("--kraft-chaos-store", default=None,
                help="store root for the runs (default: a temporary directory)")
    g.addoption("--kraft-chaos-db", action="append", default=None, metavar="DB[,DB...]",
                help="targets to parametrise chaos_run by: kraft, kafka (default kraft)")
    g.addoption("--kraft-chaos-workload", action="append", default=None, metavar="W[,W...]",
                help="workloads (default: each target's default workload)")
    g.addoption("--kraft-chaos-nemesis", action="append", default=None, metavar="NEMESIS[;NEMESIS...]",
                help="one --nemesis value per use, e.g. 'partition,kill' or 'none'; ';' separates "
                     "several in one use (default: the run's default nemesis)")
    g.addoption("--kraft-chaos-seed", action="append", default=None, metavar="N[,N...]",
                help="seeds (default 0)")
    g.addoption("--kraft-chaos-time-limit", type=float, default=None, metavar="S",
                help="seconds of workload and faults per run (default: the run's default)")
    g.addoption("--kraft-chaos-nodes", type=int, default=None, metavar="N", help="cluster size")
    g.addoption("--kraft-chaos-unsafe", default=None, metavar="SWITCH[,SWITCH...]",
                help="kraft.core.unsafe switches for every run (kraft target)")
    g.addoption("--kraft-chaos-subnet", default=None, metavar="CIDR", help="cluster subnet")
    g.addoption("--kraft-chaos-cluster", default=None, metavar="BACKEND",
                help="where the nodes run: auto, docker, netns or ssh (default: the run's default, auto)")
    g.addoption("--kraft-chaos-hosts", default=None, metavar="HOSTS.toml",
                help="the hosts file of --kraft-chaos-cluster ssh (clusters/ssh_hosts.py)")
    g.addoption("--kraft-chaos-run-fn", default=None, metavar="MODULE:FUNC",
                help="a stand-in for the run, FUNC(config) -> (results, run_dir) (tests of the plugin)")


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``docker`` and ``kraft_chaos`` markers; checks the axis options and the
    backend when given (``pytest.UsageError`` naming a bad target, workload, nemesis, seed or
    ``--kraft-chaos-cluster``)."""
    config.addinivalue_line("markers", "docker: needs a running Docker engine (starts a real cluster)")
    config.addinivalue_line("markers", "kraft_chaos(**fields): RunConfig fields for this test's chaos_run "
                                       "runs; db, workload, nemesis, seed replace that axis")
    if any(config.getoption(f"--kraft-chaos-{a}") for a in ("db", "workload", "nemesis", "seed")):
        cells_for(config)
    backend = config.getoption("--kraft-chaos-cluster")
    if backend is not None:
        if backend not in ("auto", *BACKENDS):
            raise pytest.UsageError(f"kraft-chaos: --kraft-chaos-cluster must be one of auto, "
                                    f"{', '.join(BACKENDS)}; got {backend!r}")


# -- cells --------------------------------------------------------------------

def _split(values: list[str] | None, sep: str = ",") -> list[str]:
    return [p.strip() for v in values or [] for p in v.split(sep) if p.strip()]


def _listify(v: Any) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _nemesis_list(value: Any) -> list[str]:
    """One nemesis cell value, a ``--nemesis`` string (``"partition,kill"``, ``"none"``), as
    a list of fault names; ``ValueError`` for an unknown name."""
    if not isinstance(value, str):
        raise ValueError(f"nemesis {value!r}: give a --nemesis string such as 'partition,kill' or 'none'")
    return parse_fault_names(value)


def _seed(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        raise ValueError(f"seed must be an integer, got {v!r}") from None


def cells_for(config: pytest.Config, marker_fields: dict | None = None) -> list[dict]:
    """The cells a ``chaos_run`` test runs: dicts ``{"db", "workload", "nemesis" (list), "seed"}``,
    plus ``"skip"`` (a reason) for a workload the target cannot run. Raises
    ``pytest.UsageError`` for an unknown target, workload, nemesis or a bad seed."""
    fields = dict(marker_fields or {})
    opt = config.getoption
    try:
        dbs = _listify(fields["db"]) if "db" in fields else _split(opt("--kraft-chaos-db")) or [DEFAULT_TARGET]
        for db in dbs:
            target_spec(db)
        workloads = (_listify(fields["workload"]) if "workload" in fields
                     else _split(opt("--kraft-chaos-workload")) or [None])
        for w in workloads:
            if w is not None:
                workload_spec(w)
        if "nemesis" in fields:        # one --nemesis value, or a list of them (one cell each)
            nemeses = [_nemesis_list(x) for x in _listify(fields["nemesis"])]
        else:
            given = _split(opt("--kraft-chaos-nemesis"), ";")
            nemeses = [_nemesis_list(x) for x in given] or [list(RunConfig(seed=0).nemesis)]
        seeds = [_seed(s) for s in (_listify(fields["seed"]) if "seed" in fields
                                    else _split(opt("--kraft-chaos-seed")) or [0])]
    except ValueError as e:
        raise pytest.UsageError(f"kraft-chaos: {e}") from None
    cells = []
    for db in dbs:
        for w in workloads:
            workload = w or target_spec(db).default_workload
            dbs_ok = workload_spec(workload).dbs
            for n in nemeses:
                for seed in seeds:
                    cell = {"db": db, "workload": workload, "nemesis": n, "seed": seed}
                    if db not in dbs_ok:
                        cell["skip"] = (f"workload {workload!r} does not run on --db {db}: "
                                        f"it supports {', '.join(dbs_ok)}")
                    cells.append(cell)
    return cells


def cell_id(cell: dict) -> str:
    """A test id for a cell, e.g. ``kraft-append-partition,kill-s0``."""
    return f"{cell['db']}-{cell['workload']}-{','.join(cell['nemesis']) or 'none'}-s{cell['seed']}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrises every test that requests ``chaos_run`` by its cells (:func:`cells_for`)."""
    if "chaos_run" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("kraft_chaos")
    cells = cells_for(metafunc.config, marker.kwargs if marker else None)
    metafunc.parametrize("chaos_run", [
        pytest.param(c, id=cell_id(c), marks=[pytest.mark.skip(reason=c["skip"])] if "skip" in c else [])
        for c in cells], indirect=True)


# -- the run -----------------------------------------------------------------

@dataclasses.dataclass
class ChaosRun:
    """One finished run of a ``chaos_run`` test.

    ``results``: the run's ``results.json`` (dict); ``valid``: its verdict
    (True, False or ``"unknown"``); ``anomalies``: ``{kind: count}`` of the
    kinds found (count > 0); ``store``: the run folder (Path); ``config``: the
    :class:`harness.config.run.RunConfig` it ran.
    """

    config: Any
    results: dict
    store: Path
    expected_invalid: bool = False
    checked: bool = False

    @property
    def valid(self) -> Any:
        """The verdict: True, False or ``"unknown"``."""
        return self.results.get("valid")

    @property
    def anomalies(self) -> dict[str, int]:
        """``{kind: count}`` for every kind with at least one anomaly, in results order."""
        return {k: n for k, n in (self.results.get("anomalies") or {}).items() if n}

    def verdict_word(self) -> str:
        """``VALID``, ``INVALID`` or ``UNKNOWN``."""
        return {True: "VALID", False: "INVALID"}.get(self.valid, "UNKNOWN")

    def expect_invalid(self) -> None:
        """Declare that this test wants a bug found: the test fails unless the verdict is False."""
        self.expected_invalid = True

    def problem(self) -> str | None:
        """The failure message this run deserves, or None: a verdict other than True (or,
        after :meth:`expect_invalid`, other than False). The first line names the verdict,
        the anomalies and the store; then the run's summary and the repeat command."""
        if (self.valid is False) if self.expected_invalid else (self.valid is True):
            return None
        found = ", ".join(f"{k} {n}" for k, n in self.anomalies.items()) or "no anomalies"
        want = "expected INVALID, got " if self.expected_invalid else ""
        return (f"kraft-chaos run {want}{self.verdict_word()}: {found} (store: {self.store})\n"
                f"{format_results(self.results)}\nrepeat with: {self.config.repeat_command()}")

    def check(self) -> None:
        """Fail the test now (``pytest.fail`` with :meth:`problem`'s message, no traceback)
        unless the verdict is the wanted one; afterwards the plugin does not check again."""
        __tracebackhide__ = True
        self.checked = True
        msg = self.problem()
        if msg:
            pytest.fail(msg, pytrace=False)


def _store_root(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``--kraft-chaos-store`` or one temporary store for the session."""
    given = request.config.getoption("--kraft-chaos-store")
    if given:
        return given
    stash = request.config.stash
    if _STORE_KEY not in stash:
        stash[_STORE_KEY] = str(tmp_path_factory.mktemp("kraft-chaos-store"))
    return stash[_STORE_KEY]


def _run_function(config: pytest.Config) -> Callable[[Any], tuple[dict, Path]] | None:
    """:data:`RUN`, or ``--kraft-chaos-run-fn``'s function (``pytest.UsageError`` if it cannot be found)."""
    spec = config.getoption("--kraft-chaos-run-fn")
    if not spec:
        return RUN
    mod, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError, ValueError) as e:
        raise pytest.UsageError(f"--kraft-chaos-run-fn {spec!r}: {e}") from None


def run_config_for(config: pytest.Config, cell: dict, marker_fields: dict | None, store_root: str):
    """The :class:`harness.config.run.RunConfig` of one cell: the cell's axes, then the
    options (time limit, nodes, unsafe, subnet, cluster, hosts), then the marker's other fields.
    Raises ``TypeError`` for a field RunConfig does not have."""
    opt = config.getoption
    fields: dict[str, Any] = {"store": store_root}
    for name, key in (("time_limit", "--kraft-chaos-time-limit"), ("nodes", "--kraft-chaos-nodes"),
                      ("subnet", "--kraft-chaos-subnet"), ("cluster", "--kraft-chaos-cluster"),
                      ("hosts", "--kraft-chaos-hosts")):
        if opt(key) is not None:
            fields[name] = opt(key)
    if opt("--kraft-chaos-unsafe"):
        fields["unsafe"] = _split([opt("--kraft-chaos-unsafe")])
    fields.update({k: v for k, v in (marker_fields or {}).items() if k not in AXES})
    fields.update({k: cell[k] for k in AXES})
    return RunConfig(**fields)


def _record(item: pytest.Item, props: dict[str, Any]) -> None:
    for k, v in props.items():
        item.user_properties.append((PROP + k, v))


@pytest.fixture
def chaos_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ChaosRun:
    """One run of this test's cell (see the module docstring); returns a :class:`ChaosRun`.

    Raises what the run raises (``clusters.errors.ClusterError``,
    ``harness.run.runner.RunSetupError``, ``ValueError`` for a bad config, ...) as
    a set-up error, with ``kraft_chaos.verdict`` ERROR and ``kraft_chaos.error``
    recorded; an interrupted run (``harness.run.runner.Interrupted``) stops the
    session as Ctrl-C does.
    """
    marker = request.node.get_closest_marker("kraft_chaos")
    fields = marker.kwargs if marker else None
    cell = getattr(request, "param", None) or cells_for(request.config, fields)[0]
    cfg = run_config_for(request.config, cell, fields, _store_root(request, tmp_path_factory))
    item = request.node
    _record(item, {"db": cfg.db, "workload": cfg.workload, "nemesis": ",".join(cfg.nemesis) or "none",
                   "seed": cfg.seed, "repeat": cfg.repeat_command()})
    run = _run_function(request.config)
    run_dir = None
    try:
        if run is None:
            config, run_dir = runner.prepare_run(resolve(cfg))
            results, run_dir = runner.run_test(config, run_dir, progress=False)
            cfg = config.flat          # with its defaults filled in, as the store records it
        else:
            results, run_dir = run(cfg)
    except runner.Interrupted:
        raise KeyboardInterrupt(f"kraft-chaos run interrupted (store: {run_dir})") from None
    except Exception as e:
        _record(item, {"verdict": "ERROR", "error": f"{type(e).__name__}: {e}", "store": run_dir or ""})
        raise
    chaos = ChaosRun(cfg, results, Path(run_dir))
    _record(item, {"verdict": chaos.verdict_word(),
                   "anomalies": ", ".join(f"{k}={n}" for k, n in chaos.anomalies.items()) or "none",
                   **{f"anomaly.{k}": n for k, n in chaos.anomalies.items()},
                   "store": str(chaos.store)})
    item.stash[_CHAOS_KEY] = chaos
    return chaos


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """After a ``chaos_run`` test body that passed: :meth:`ChaosRun.check` (so a bad verdict
    is an ordinary test failure: JUnit ``<failure>``, ``xfail`` applies)."""
    __tracebackhide__ = True
    result = yield
    chaos = item.stash.get(_CHAOS_KEY, None)
    if chaos is not None and not chaos.checked:
        chaos.check()
    return result


@pytest.fixture
def kraft_chaos_run(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Callable[..., tuple[dict, Path]]:
    """A factory: ``kraft_chaos_run(**config) -> (results, store_dir)``.

    Keyword arguments are :class:`harness.config.run.RunConfig` fields; ``seed``
    defaults to 0 so a failing test repeats exactly. No live progress line.
    Raises whatever :func:`harness.run.runner.run_test` raises.
    """

    root = _store_root(request, tmp_path_factory)

    def run(**overrides: Any) -> tuple[dict, Path]:
        overrides.setdefault("seed", 0)
        overrides.setdefault("store", root)
        return runner.run_test(resolve(RunConfig(**overrides)), progress=False)

    return run
