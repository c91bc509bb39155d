"""targets.kafka.dist and the run-level prepare of targets.kafka.target: reading a Kafka binary
distribution (``--kafka-dist``) from a folder or a tar archive, its version and digest, every
way a path can fail to be one, the unpacked copy of an archive, and what a run records."""
from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from targets.errors import TargetError
from targets.kafka import target
from targets.kafka.dist import DistError, dist_libs, read_dist
from targets.kafka.releases import NEWEST, UnsupportedOption, release
from targets.kafka.settings import KafkaSettings


def clients_jar(version: str | None) -> bytes:
    """A kafka-clients jar (a zip) holding ``kafka/kafka-version.properties`` (none for None)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("org/apache/kafka/clients/Dummy.class", b"\xca\xfe")
        if version is not None:
            z.writestr("kafka/kafka-version.properties", f"commitId=abc\nversion={version}\ndate=1\n")
    return buf.getvalue()


def make_dist(root: Path, version: str = "4.0.2", *, server: str | None = None, clients: str | None = "same",
              logging: tuple[str, ...] | None = None, extra: dict[str, bytes] | None = None) -> Path:
    """A tiny distribution folder ``root/kafka_2.13-<version>``: bin/, config/, libs/ with the
    server jar (``server`` overrides its name), a kafka-clients jar saying ``clients`` (``same``:
    ``version``), the logging jars (default: the release's stack's) and ``extra`` files."""
    home = root / f"kafka_2.13-{version}"
    (home / "bin").mkdir(parents=True)
    (home / "config").mkdir()
    (home / "bin" / "kafka-server-start.sh").write_text("#!/bin/sh\n")
    libs = home / "libs"
    libs.mkdir()
    (libs / (server or f"kafka_2.13-{version}.jar")).write_bytes(b"server " + version.encode())
    (libs / f"kafka-clients-{version}.jar").write_bytes(clients_jar(version if clients == "same" else clients))
    if logging is None:
        logging = (("log4j-core-2.24.3.jar", "log4j-api-2.24.3.jar")
                   if release(version, newer=True).logging.name == "log4j2"
                   else ("reload4j-1.2.25.jar", "slf4j-reload4j-1.7.36.jar"))
    for name in logging:
        (libs / name).write_bytes(name.encode())
    for name, data in (extra or {}).items():
        (libs / name).write_bytes(data)
    return home


def tgz(home: Path, out: Path, arcroot: str | None = None) -> Path:
    with tarfile.open(out, "w:gz") as tar:
        tar.add(home, arcname=arcroot if arcroot is not None else home.name)
    return out


def test_a_folder_distribution(tmp_path):
    home = make_dist(tmp_path)
    d = read_dist(home)
    assert (d.kind, d.version, d.scala, d.path) == ("dir", "4.0.2", "2.13", home)
    assert d.release is release("4.0.2") and len(d.digest) == 64
    assert "kafka_2.13-4.0.2.jar" in d.jars and dist_libs(d, tmp_path / "cache") == home / "libs"


def test_a_tgz_has_the_digest_of_the_same_folder_and_unpacks_once(tmp_path):
    home = make_dist(tmp_path / "src", "3.7.2")
    archive = tgz(home, tmp_path / "kafka_2.13-3.7.2.tgz")
    d, folder = read_dist(archive), read_dist(home)
    assert (d.kind, d.version) == ("tar", "3.7.2") and d.libs == "kafka_2.13-3.7.2/libs"
    assert d.digest == folder.digest and d.jars == folder.jars
    libs = dist_libs(d, tmp_path / "cache")
    assert libs == tmp_path / "cache" / "dist" / d.digest / "libs"
    assert sorted(p.name for p in libs.iterdir()) == list(d.jars)
    assert (libs / "kafka_2.13-3.7.2.jar").read_bytes() == b"server 3.7.2"
    mtime = libs.stat().st_mtime_ns
    assert dist_libs(d, tmp_path / "cache") == libs and libs.stat().st_mtime_ns == mtime   # not unpacked again


def test_a_tar_with_libs_at_its_top_reads_too(tmp_path):
    home = make_dist(tmp_path / "src", "4.4.0")
    d = read_dist(tgz(home, tmp_path / "flat.tar.gz", arcroot="."))
    assert d.version == "4.4.0" and d.libs == "libs"


def test_two_builds_of_one_version_differ_in_digest(tmp_path):
    a = read_dist(make_dist(tmp_path / "a", "4.5.0-SNAPSHOT", extra={"kafka-raft-4.5.0-SNAPSHOT.jar": b"build 1"}))
    b = read_dist(make_dist(tmp_path / "b", "4.5.0-SNAPSHOT", extra={"kafka-raft-4.5.0-SNAPSHOT.jar": b"build 2"}))
    assert a.version == b.version == "4.5.0-SNAPSHOT" and a.digest != b.digest
    assert a.release is NEWEST              # a trunk build past the newest line: the newest line's row


def test_the_version_comes_from_kafka_clients_when_the_jar_name_has_none(tmp_path):
    home = make_dist(tmp_path, "3.9.2", server="kafka_2.13-trunk.jar")
    assert read_dist(home).version == "3.9.2"


def test_test_and_sources_jars_are_not_a_second_server_jar(tmp_path):
    home = make_dist(tmp_path, "4.0.2", extra={"kafka_2.13-4.0.2-test.jar": b"t", "kafka_2.13-4.0.2-sources.jar": b"s"})
    assert read_dist(home).version == "4.0.2"


@pytest.mark.parametrize("make, msg", [
    (lambda p: p / "nope", "no such file or directory"),
    (lambda p: (p / "notes.txt").write_text("hello") and p / "notes.txt", "neither a folder nor a tar archive"),
    (lambda p: (p / "empty").mkdir() or p / "empty", "no libs/ folder"),
    (lambda p: tgz(make_dist(p / "s") / "bin", p / "nolibs.tgz"), "the archive has no libs/\\*.jar"),
    (lambda p: make_dist(p, server="kafka-server-4.0.2.jar"), "holds no kafka_2.13-VERSION.jar or kafka_2.12-VERSION.jar"),
    (lambda p: make_dist(p, extra={"kafka_2.12-4.0.2.jar": b"x"}), "2 Kafka server jars"),
    (lambda p: make_dist(p, server="kafka_2.13-trunk.jar", clients=None), "its version is unreadable"),
    (lambda p: make_dist(p, clients="4.0.1"), "says version 4.0.2 but kafka-clients"),
    (lambda p: make_dist(p, logging=("log4j-api-2.24.3.jar",)), "logs through log4j2, but libs/ holds no log4j-core"),
    (lambda p: make_dist(p, "3.6.2", logging=()), "logs through log4j1"),
])
def test_what_is_not_a_distribution_says_what_was_missing(tmp_path, make, msg):
    path = make(tmp_path)
    with pytest.raises(DistError, match=msg) as err:
        read_dist(path)
    assert str(Path(path).absolute()) in str(err.value)


def test_a_distribution_before_3_3_is_refused(tmp_path):
    with pytest.raises(TargetError, match="production-ready from 3.3"):
        read_dist(make_dist(tmp_path, "3.2.3", logging=("reload4j-1.2.19.jar",)))


def run_settings(**kw) -> KafkaSettings:
    return KafkaSettings(**{"kafka_version": "4.4.0", **kw})


def test_prepare_takes_the_version_and_digest_from_the_distribution(tmp_path):
    archive = tgz(make_dist(tmp_path / "src", "3.8.1"), tmp_path / "kafka_2.13-3.8.1.tgz")
    given = run_settings(kafka_dist=str(archive))
    done = target.prepare(given, frozenset({"kill"}))
    assert done.kafka_version == "3.8.1" and done.kafka_dist == str(archive.absolute())
    assert done.kafka_dist_digest == read_dist(archive).digest
    assert done.kraft_version == 0                      # 3.8's default: static voters
    assert given.kafka_version == "4.4.0" and given.kafka_dist_digest is None     # the given ones stay
    assert target.prepare(done, frozenset({"kill"})) == done       # idempotent


def test_prepare_refuses_what_the_distributions_release_cannot_do(tmp_path):
    settings = run_settings(kafka_dist=str(make_dist(tmp_path, "3.8.1")), kraft_version=1)
    with pytest.raises(UnsupportedOption, match="Kafka 3.8.1 cannot run --kraft-version 1"):
        target.prepare(settings)
    with pytest.raises(UnsupportedOption, match="Kafka 3.8.1 cannot run the membership nemesis"):
        target.prepare(run_settings(kafka_dist=str(make_dist(tmp_path / "m", "3.8.1"))), frozenset({"membership"}))


def test_a_distribution_changed_after_prepare_is_refused(tmp_path):
    home = make_dist(tmp_path, "4.0.2")
    done = target.prepare(run_settings(kafka_dist=str(home)))
    (home / "libs" / "kafka-raft-4.0.2.jar").write_bytes(b"rebuilt")
    with pytest.raises(DistError, match="changed since the run was prepared"):
        target.prepare(done)


def test_prepare_without_a_distribution_fills_the_releases_kraft_version():
    for version, kv in (("3.7.2", 0), ("3.9.2", 1), ("4.4.0", 1)):
        done = target.prepare(run_settings(kafka_version=version))
        assert done.kraft_version == kv and done.kafka_dist is None


def test_the_repeat_command_and_test_json_name_the_distribution(tmp_path):
    from harness.config.resolved import resolve
    from harness.config.run import RunConfig
    home = make_dist(tmp_path, "4.0.2")
    config = resolve(RunConfig(seed=1, db="kafka", workload="metadata", kafka_dist=str(home))).flat
    cmd = config.repeat_command()
    assert f"--kafka-dist {home}" in cmd and "--kafka-version" not in cmd
    record = config.to_dict()
    assert (record["kafka_dist"], record["kafka_version"]) == (str(home), "4.0.2")
    assert record["kafka_dist_digest"] == read_dist(home).digest
