"""targets.kafka.releases: the table of what differs between Kafka's KRaft releases, its
lookups and refusals, what reads it (server.properties, the format argv, the tools, the
JVM's logging option, DescribeQuorum versions), the README's copy of it, and (with Java and
Maven at hand) the real StorageTool of a 3.x release fed our argv."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from targets.errors import TargetError
from targets.kafka import releases
from targets.kafka import server_config as sc
from targets.kafka.describe_quorum import speakable
from targets.kafka.releases import (DEFAULT_VERSION, NEWEST, RELEASES, UnsupportedOption, check_run_options,
                                    parse_version, release, run_kraft_version)
from targets.kafka.server_config import ROLE_BROKER, ROLE_COMBINED, ROLE_CONTROLLER, Controller, directory_id
from targets.kafka.voters import quorum_status_argv

ROOT = Path(__file__).resolve().parent.parent
CONTROLLERS = [Controller(i, f"10.0.0.{10 + i}", directory_id(7, i)) for i in (1, 2, 3)]
CID = sc.cluster_uuid("run-1", 7)


def test_the_table_runs_from_3_3_to_the_newest_line_in_order():
    lines = [r.line for r in RELEASES]
    assert lines == sorted(lines) and len(set(lines)) == len(lines)
    assert lines[0] == (3, 3) and NEWEST.line == lines[-1] >= (4, 4)
    assert DEFAULT_VERSION == NEWEST.newest          # the default is the newest release that resolved
    for r in RELEASES:                                # each newest patch belongs to its own line
        assert parse_version(r.newest)[:2] == r.line and release(r.newest) is r


# every fact, for a sample of versions: (version, logging, kraft versions, controllers advertise,
# --feature, dynamic format flags, quorum tool, --bootstrap-controller, DescribeQuorum, Pre-Vote)
FACTS = [
    ("3.3.2", "log4j1", (0,), False, False, False, "kafka.admin.MetadataQuorumCommand", False, (0, 1), False),
    ("3.6.2", "log4j1", (0,), False, False, False, "org.apache.kafka.tools.MetadataQuorumCommand", False, (0, 1), False),
    ("3.7.0", "log4j1", (0,), False, False, False, "org.apache.kafka.tools.MetadataQuorumCommand", True, (0, 1), False),
    ("3.8.1", "log4j1", (0,), False, True, False, "org.apache.kafka.tools.MetadataQuorumCommand", True, (0, 1), False),
    ("3.9.2", "log4j1", (0, 1), True, True, True, "org.apache.kafka.tools.MetadataQuorumCommand", True, (0, 2), False),
    ("4.0.2", "log4j2", (0, 1), True, True, True, "org.apache.kafka.tools.MetadataQuorumCommand", True, (0, 2), True),
    ("4.4.0", "log4j2", (0, 1), True, True, True, "org.apache.kafka.tools.MetadataQuorumCommand", True, (0, 2), True),
]


@pytest.mark.parametrize("version, logging, kv, adv, feature, dynamic, tool, boot, dq, pre_vote", FACTS)
def test_every_fact_of_a_sample_of_versions(version, logging, kv, adv, feature, dynamic, tool, boot, dq, pre_vote):
    r = release(version)
    assert r.logging.name == logging and r.kraft_versions == kv and r.controller_advertises == adv
    assert ("--feature" in r.format_flags) == feature
    assert {"--standalone", "--initial-controllers", "--no-initial-controllers"} <= r.format_flags or not dynamic
    assert not dynamic or r.voter_changes
    assert dynamic or not (r.format_flags & {"--standalone", "--initial-controllers", "--no-initial-controllers"})
    assert r.quorum_tool == tool and ("--bootstrap-controller" in r.quorum_tool_flags) == boot
    assert r.describe_quorum == dq and r.pre_vote == pre_vote and r.storage_tool == "kafka.tools.StorageTool"
    assert r.default_kraft_version == max(kv)
    assert r.logging.pom.is_file()


@pytest.mark.parametrize("bad, msg", [
    ("4.3", "not of the form MAJOR.MINOR.PATCH"), ("latest", "not of the form"), ("", "not of the form"),
    ("4.3.1-rc1", "not of the form"), (" 4.3.1", "not of the form"), (None, "not of the form"),
    ("3.2.3", "production-ready from 3.3"), ("2.8.0", "production-ready from 3.3"),
    ("5.0.0", "not a release line kraft-chaos knows"), ("4.99.0", "supported: 3.3 to")])
def test_malformed_and_unsupported_versions_raise_target_errors(bad, msg):
    with pytest.raises(TargetError, match=msg):
        release(bad)


def test_an_own_build_past_the_newest_line_gets_the_newest_row():
    assert release("4.99.0-SNAPSHOT", newer=True) is NEWEST
    assert release("3.9.1-SNAPSHOT", newer=True) is release("3.9.1")
    assert parse_version("4.5.0-SNAPSHOT", prerelease=True) == (4, 5, 0, "SNAPSHOT")
    with pytest.raises(TargetError, match="production-ready"):
        release("3.2.0-SNAPSHOT", newer=True)


def opts(kraft_version=None, faults=()):
    """``check_run_options``'s run arguments: the kraft.version asked (None: the release's
    default) and the fault families played."""
    return kraft_version, frozenset(faults)


@pytest.mark.parametrize("version, options, msg", [
    ("3.8.1", opts(kraft_version=1), "Kafka 3.8.1 cannot run --kraft-version 1: kraft.version 1 (KIP-853 "
                                     "dynamic quorum, controller.quorum.bootstrap.servers) exists from Kafka 3.9"),
    ("3.3.2", opts(kraft_version=1), "Kafka 3.3.2 cannot run --kraft-version 1"),
    ("3.8.1", opts(faults=["kill", "membership"]),
     "Kafka 3.8.1 cannot run the membership nemesis: voter changes (KIP-853 AddRaftVoter/RemoveRaftVoter, "
     "kafka-metadata-quorum add-controller/remove-controller) exist from Kafka 3.9"),
    ("3.6.2", opts(faults=["membership"]), "Kafka 3.6.2 cannot run the membership nemesis"),
])
def test_refusals_name_the_version_and_the_feature(version, options, msg):
    with pytest.raises(UnsupportedOption) as err:
        check_run_options(release(version), version, *options)
    assert msg in str(err.value)
    assert isinstance(err.value, TargetError)


@pytest.mark.parametrize("version, options", [
    ("3.8.1", opts()), ("3.8.1", opts(kraft_version=0, faults=["partition", "kill"])),
    ("3.9.2", opts(kraft_version=1, faults=["membership"])), ("4.4.0", opts(faults=["membership"]))])
def test_what_a_release_can_do_passes(version, options):
    check_run_options(release(version), version, *options)


def test_the_default_kraft_version_is_the_releases_newest():
    assert run_kraft_version(release("3.8.1"), None) == 0
    assert run_kraft_version(release("3.9.2"), None) == 1
    assert run_kraft_version(release("4.4.0"), 0) == 0


# --- what reads the table ------------------------------------------------------------------

def props(version, role, node_id, kraft_version):
    text = sc.render_server_properties(role=role, node_id=node_id, host=f"10.0.0.{10 + node_id}",
                                       controllers=CONTROLLERS, kraft_version=kraft_version, log_dirs="/d",
                                       metadata_log_dir="/m", n_brokers=3, rel=release(version))
    return dict(line.split("=", 1) for line in text.splitlines()[1:])


@pytest.mark.parametrize("version", ["3.3.2", "3.8.1"])
def test_before_3_9_controllers_do_not_advertise_their_listener(version):
    c = props(version, ROLE_CONTROLLER, 1, 0)
    assert "advertised.listeners" not in c and c["listeners"] == "CONTROLLER://10.0.0.11:9093"
    assert c["controller.quorum.voters"] == "1@10.0.0.11:9093,2@10.0.0.12:9093,3@10.0.0.13:9093"
    combined = props(version, ROLE_COMBINED, 2, 0)
    assert combined["advertised.listeners"] == "PLAINTEXT://10.0.0.12:9092"
    assert combined["listeners"] == "PLAINTEXT://10.0.0.12:9092,CONTROLLER://10.0.0.12:9093"
    with pytest.raises(TargetError, match=f"Kafka {version[:3]} has no kraft.version 1"):
        props(version, ROLE_CONTROLLER, 1, 1)


@pytest.mark.parametrize("version", ["3.9.2", "4.4.0"])
def test_from_3_9_controllers_advertise_and_bootstrap(version):
    c = props(version, ROLE_CONTROLLER, 1, 1)
    assert c["advertised.listeners"] == "CONTROLLER://10.0.0.11:9093"
    assert c["controller.quorum.bootstrap.servers"] == "10.0.0.11:9093,10.0.0.12:9093,10.0.0.13:9093"
    assert props(version, ROLE_COMBINED, 2, 1)["advertised.listeners"] == (
        "PLAINTEXT://10.0.0.12:9092,CONTROLLER://10.0.0.12:9093")


def fmt(version, role=ROLE_CONTROLLER, node_id=1, kraft_version=0, **kw):
    return sc.format_argv(role=role, node_id=node_id, cluster_id=CID, config_path="/etc/kafka/server.properties",
                          controllers=CONTROLLERS, kraft_version=kraft_version, rel=release(version), **kw)


def test_format_arguments_per_release():
    old = fmt("3.3.2", release_version="3.3-IV3")
    assert old[old.index("kafka.tools.StorageTool"):] == [
        "kafka.tools.StorageTool", "format", "--config", "/etc/kafka/server.properties", f"--cluster-id={CID}",
        "--release-version", "3.3-IV3"]
    assert "-Dlog4j.configuration=file:/opt/kafka/config/tools-log4j.properties" in old
    with pytest.raises(TargetError, match="Kafka 3.7's kafka-storage format has no --feature"):
        fmt("3.7.2", features={"group.version": 1})
    assert fmt("3.8.1", features={"group.version": 1})[-2:] == ["--feature", "group.version=1"]
    dyn = fmt("3.9.2", kraft_version=1)
    assert dyn[-2] == "--initial-controllers" and dyn[-1].startswith("1@10.0.0.11:9093:")
    assert fmt("3.9.2", ROLE_BROKER, 4, kraft_version=1)[-1] == "--no-initial-controllers"
    assert fmt("3.9.2", kraft_version=1, joining=True)[-1] == "--no-initial-controllers"
    assert "-Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties" in fmt("4.0.2")


def test_server_argv_takes_the_releases_logging_option():
    v3 = sc.server_argv(ROLE_CONTROLLER, rel=release("3.9.2"))
    assert "-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties" in v3
    assert not any("log4j2" in a for a in v3)
    v4 = sc.server_argv(ROLE_CONTROLLER, rel=release("4.0.2"))
    assert "-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties" in v4


def test_quorum_tools_per_release():
    old = quorum_status_argv("c:9093", "b:9092", rel=release("3.3.2"))
    assert "kafka.admin.MetadataQuorumCommand" in old and old[-4:] == ["--bootstrap-server", "b:9092",
                                                                       "describe", "--status"]
    new = quorum_status_argv("c:9093", "b:9092", rel=release("3.7.2"))
    assert "org.apache.kafka.tools.MetadataQuorumCommand" in new and "--bootstrap-controller" in new
    from targets.kafka.voters import add_argv, remove_argv
    with pytest.raises(TargetError, match="Kafka 3.8's kafka-metadata-quorum has no remove-controller"):
        remove_argv("c:9093", 2, "x" * 22, rel=release("3.8.1"))
    assert add_argv("c:9093", "/p", rel=release("3.9.2"))[-1] == "add-controller"


def test_describe_quorum_versions_asked_are_the_releases():
    assert speakable(release("3.6.2").describe_quorum) == (0, 1)
    assert speakable(release("4.4.0").describe_quorum) == (0, 2)
    with pytest.raises(ValueError, match="outside"):
        speakable((3, 4))


def test_nothing_outside_the_table_branches_on_the_version():
    """No comparison of Kafka release versions in targets/kafka outside releases.py: of
    ``kafka_version``/``self.version``/``.line``, of a ``(3, 9)`` tuple or a ``"3.9"`` string,
    or a ``startswith("3.")`` (the wire protocol's message versions in protocol.py are another
    matter)."""
    pattern = re.compile(r"(kafka_version|self\.version|\.line)\s*[<>]=?|[<>]=?\s*(\(\s*[34]\s*,\s*\d+\s*\)"
                         r"|[\"'][34]\.\d+)|startswith\([\"'][34]\.")
    for path in (ROOT / "targets" / "kafka").glob("*.py"):
        if path.name == "releases.py":
            continue
        hits = [ln for ln in path.read_text().splitlines() if pattern.search(ln) and not ln.lstrip().startswith("#")]
        assert not hits, f"{path.name}: {hits}"


def test_readme_table_matches_the_code():
    text = (ROOT / "README.md").read_text()
    start = text.index("<!-- kafka-releases-table -->")
    lines = text[start:].splitlines()[1:]
    rows = lines[:next(i for i, ln in enumerate(lines) if not ln.startswith("|"))]
    cells = [tuple(c.strip() for c in ln.strip("|").split("|")) for ln in rows]
    assert cells[0] == releases.TABLE_HEADER
    assert cells[2:] == [tuple(r) for r in releases.table_rows()]


@pytest.fixture(scope="module")
def libs_of():
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("needs java and mvn on the host")
    from targets.kafka.jars import resolve_jars
    return resolve_jars


@pytest.mark.parametrize("version, kraft_version", [("3.3.2", 0), ("3.9.2", 1)])
def test_real_storage_tool_of_a_3x_release_takes_our_arguments(libs_of, tmp_path, version, kraft_version):
    """Our properties and argv for ``version``, fed to that release's real ``StorageTool format``."""
    libs, rel = libs_of(version), release(version)
    controllers = [Controller(1, "127.0.0.1", directory_id(3, 1))]
    for role, nid in ((ROLE_CONTROLLER, 1), (ROLE_BROKER, 2)):
        d = tmp_path / f"n{nid}"
        d.mkdir()
        (d / "server.properties").write_text(sc.render_server_properties(
            role=role, node_id=nid, host="127.0.0.1", controllers=controllers, kraft_version=kraft_version,
            log_dirs=str(d / "data"), metadata_log_dir=str(d / "meta"), n_brokers=1, rel=rel))
        argv = sc.format_argv(role=role, node_id=nid, cluster_id=CID, config_path=str(d / "server.properties"),
                              controllers=controllers, kraft_version=kraft_version, classpath=f"{libs}/*",
                              jvm_opts=sc.TOOL_HEAP_OPTS, rel=rel)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        meta = dict(line.split("=", 1) for line in (d / "meta" / "meta.properties").read_text().splitlines()
                    if "=" in line and not line.startswith("#"))
        assert meta["cluster.id"] == CID and meta["node.id"] == str(nid)


def test_each_lines_patches_that_resolve_end_with_its_newest():
    """``Release.patches``: what ``kraft-chaos bisect`` steps through, every patch whose jars
    resolved here; the catalogue's releases (3.5.1, 3.7.0, 4.0.0) among them; 3.9.0
    (KAFKA-18028) and 4.0.1 (kafka-tools' connect jars not served) left out."""
    for r in RELEASES:
        assert r.patches and r.patches[-1] == r.newest
        assert all(releases.release(p) is r for p in r.patches)
        assert [releases.version_key(p) for p in r.patches] == sorted(releases.version_key(p) for p in r.patches)
    every = [p for r in RELEASES for p in r.patches]
    assert {"3.5.1", "3.7.0", "4.0.0"} <= set(every) and not {"3.9.0", "4.0.1"} & set(every)
    assert releases.patches_between("3.3.0", NEWEST.newest) == every
    assert releases.patches_between("3.8.1", "3.9.2") == ["3.8.1", "3.9.1", "3.9.2"]
    with pytest.raises(TargetError, match="give the older release first"):
        releases.patches_between("4.0.0", "3.9.2")


def test_a_line_names_its_newest_patch():
    assert releases.newest_patch("3.9") == "3.9.2" and releases.newest_patch("4.4") == NEWEST.newest
    assert releases.newest_patch("3.7.0") == "3.7.0"
    for bad in ("3.2", "5.0", "x"):
        with pytest.raises(TargetError):
            releases.newest_patch(bad)
