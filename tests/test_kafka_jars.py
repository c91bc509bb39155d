"""targets.kafka.jars: version validation, Maven error parsing, the per-version jar cache
(against a fake ``mvn`` on PATH) and one real Maven resolve of the default version."""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from targets.errors import TargetError
from targets.kafka import jars
from targets.kafka.jars import DEFAULT_VERSION, missing_artifact, resolve_jars, validate_version

FAKE_MVN = """#!/bin/sh
# records each call, then copies two fake jars into -DoutputDirectory (or fails on request)
echo "$@" >> "{calls}"
if [ -f "{fail}" ]; then
  echo "[ERROR] Failed to execute goal on project kafka-node-libs: Could not resolve dependencies for project x:y:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka-tools:jar:4.3.9 (absent): Could not find artifact org.apache.kafka:kafka-tools:jar:4.3.9 in central (https://repo.maven.apache.org/maven2) -> [Help 1]"
  echo "[ERROR] Re-run Maven using the -X switch to enable full debug logging."
  exit 1
fi
for a in "$@"; do
  case "$a" in
    -Dkafka.version=*) v=${{a#-Dkafka.version=}};;
    -DoutputDirectory=*) out=${{a#-DoutputDirectory=}};;
  esac
done
mkdir -p "$out"
printf 'kafka' > "$out/kafka_2.13-$v.jar"
printf 'log4j-core' > "$out/log4j-core-2.25.4.jar"
"""


@pytest.fixture
def fake_mvn(tmp_path, monkeypatch):
    """A fake ``mvn`` first on PATH. Returns ``(calls file, fail flag file)``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls, fail = tmp_path / "mvn-calls", tmp_path / "mvn-fail"
    mvn = bin_dir / "mvn"
    mvn.write_text(FAKE_MVN.format(calls=calls, fail=fail))
    mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return calls, fail


def _n_calls(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


@pytest.mark.parametrize("good", ["4.3.1", "4.0.0", "3.3.2", "3.9.0", "4.4.0", "3.7.15"])
def test_validate_version_accepts_every_supported_line(good):
    assert validate_version(good) == good


@pytest.mark.parametrize("bad", ["4.3", "4.3.1-rc1", "latest", "", " 4.3.1", "4.3.1\n", "v4.3.1", None, 431])
def test_validate_version_rejects_other_shapes(bad):
    with pytest.raises(TargetError, match="MAJOR.MINOR.PATCH"):
        validate_version(bad)


@pytest.mark.parametrize("bad, why", [("3.2.3", "production-ready from 3.3"), ("2.8.2", "production-ready"),
                                      ("5.0.0", "not a release line"), ("4.10.22", "not a release line")])
def test_validate_version_rejects_lines_outside_the_table(bad, why):
    with pytest.raises(TargetError, match=why):
        validate_version(bad)


@pytest.mark.parametrize("version, pom", [("3.3.2", "reload4j.xml"), ("3.9.2", "reload4j.xml"),
                                          ("4.0.2", "log4j2.xml"), ("4.4.0", "log4j2.xml")])
def test_each_release_resolves_with_its_logging_stacks_pom(version, pom):
    assert jars.pom_for(version).name == pom and jars.pom_for(version).is_file()


def test_bad_version_is_rejected_before_maven_runs(fake_mvn, tmp_path):
    calls, _ = fake_mvn
    with pytest.raises(TargetError, match="not of the form"):
        resolve_jars("4.3", tmp_path / "cache")
    assert _n_calls(calls) == 0 and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("output, artifact", [
    ("[ERROR] ... The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:9.9.9, "
     "org.apache.kafka:kafka-tools:jar:9.9.9: Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central",
     "org.apache.kafka:kafka_2.13:jar:9.9.9, org.apache.kafka:kafka-tools:jar:9.9.9"),
    ("Could not resolve dependencies for project a:b:pom:1: org.apache.kafka:kafka-tools:jar:4.4.0 was not found in "
     "https://repo.maven.apache.org/maven2 during a previous attempt.", "org.apache.kafka:kafka-tools:jar:4.4.0"),
    ("\x1b[1;31m[ERROR] Could not find artifact org.apache.kafka:kafka-tools:jar:4.4.0 in central\x1b[m",
     "org.apache.kafka:kafka-tools:jar:4.4.0"),
    ("BUILD FAILURE, no idea why", None),
])
def test_missing_artifact_is_parsed_from_maven_output(output, artifact):
    assert missing_artifact(output) == artifact


def test_resolve_then_reuse_the_cache(fake_mvn, tmp_path):
    calls, _ = fake_mvn
    cache = tmp_path / "cache"
    libs = resolve_jars("4.3.1", cache)
    assert libs == cache / "4.3.1" / "libs"
    assert sorted(p.name for p in libs.iterdir()) == ["kafka_2.13-4.3.1.jar", "log4j-core-2.25.4.jar"]
    argv = calls.read_text().split()
    assert {"-B", "-q", "-Dkafka.version=4.3.1", "dependency:copy-dependencies"} <= set(argv)
    stamp = json.loads((cache / "4.3.1" / "stamp.json").read_text())
    assert stamp["version"] == "4.3.1" and stamp["pom_sha256"] == jars.pom_digest(jars.pom_for("4.3.1"))
    assert stamp["jars"] == [["kafka_2.13-4.3.1.jar", 5], ["log4j-core-2.25.4.jar", 10]]
    assert resolve_jars("4.3.1", cache) == libs
    assert _n_calls(calls) == 1                           # reused: Maven not run again
    assert sorted(p.name for p in cache.iterdir()) == [".lock", "4.3.1"]   # no temp folders left


def test_cache_is_redone_when_pom_or_jars_change(fake_mvn, tmp_path):
    calls, _ = fake_mvn
    cache = tmp_path / "cache"
    pom = tmp_path / "pom.xml"
    shutil.copyfile(jars.pom_for("4.3.1"), pom)
    resolve_jars("4.3.1", cache, pom=pom)
    pom.write_text(pom.read_text().replace("<version>1</version>", "<version>2</version>", 1))
    resolve_jars("4.3.1", cache, pom=pom)
    assert _n_calls(calls) == 2                            # a new pom: resolved again
    (cache / "4.3.1" / "libs" / "log4j-core-2.25.4.jar").write_text("truncated")
    resolve_jars("4.3.1", cache, pom=pom)
    assert _n_calls(calls) == 3                            # a jar changed size: resolved again
    resolve_jars("4.3.2", cache, pom=pom)
    assert _n_calls(calls) == 4 and (cache / "4.3.2" / "libs" / "kafka_2.13-4.3.2.jar").is_file()
    assert (cache / "4.3.1" / "libs").is_dir()             # versions are cached side by side


def test_maven_failure_names_version_and_artifact_and_leaves_no_folder(fake_mvn, tmp_path):
    calls, fail = fake_mvn
    fail.write_text("")
    cache = tmp_path / "cache"
    with pytest.raises(TargetError) as err:
        resolve_jars("4.3.9", cache)
    msg = str(err.value)
    assert "Kafka 4.3.9" in msg and "could not find org.apache.kafka:kafka-tools:jar:4.3.9" in msg
    assert "Re-run Maven" not in msg                       # Maven's boilerplate is left out
    assert sorted(p.name for p in cache.iterdir()) == [".lock"]


def test_missing_mvn_is_a_clear_error(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(TargetError, match=r"Maven \(mvn\) is not installed.*4\.3\.1"):
        resolve_jars("4.3.1", tmp_path / "cache")


@pytest.mark.skipif(shutil.which("mvn") is None, reason="Maven (mvn) is not installed")
def test_real_maven_resolves_the_default_version(tmp_path, monkeypatch):
    """Resolves the real ``DEFAULT_VERSION`` from Maven Central (about 30 s with a cold
    ~/.m2, a few seconds with a warm one), then reuses it without Maven."""
    libs = resolve_jars(DEFAULT_VERSION, tmp_path / "cache")
    names = {p.name for p in libs.glob("*.jar")}
    v = DEFAULT_VERSION
    assert {f"kafka_2.13-{v}.jar", f"kafka-tools-{v}.jar", f"kafka-raft-{v}.jar", f"kafka-clients-{v}.jar"} <= names
    log4j = {n.rsplit("-", 1)[0]: n.rsplit("-", 1)[1] for n in names if n.startswith("log4j-")}
    assert set(log4j) == {"log4j-api", "log4j-core", "log4j-slf4j-impl"}
    assert len(set(log4j.values())) == 1                   # api, core and binding share a version
    assert any(n.startswith("slf4j-api-1.7.") for n in names)    # hence log4j-slf4j-impl, not -slf4j2-
    monkeypatch.setenv("PATH", str(tmp_path))              # no mvn: must come from the cache
    assert resolve_jars(DEFAULT_VERSION, tmp_path / "cache") == libs


# --- the node image's pure parts (targets.kafka.image): digest, Dockerfile, build context ------

def _libs(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13-4.3.1.jar").write_bytes(b"k" * 5)
    (libs / "log4j-core-2.25.4.jar").write_bytes(b"l" * 3)
    (libs / "README").write_text("not a jar")
    return libs


def test_image_digest_covers_version_pom_jars_dockerfile_and_configs(tmp_path):
    from targets.kafka.image import config_files, image_digest, kafka_dockerfile
    df = kafka_dockerfile("kraft-chaos-kafka-base:bookworm", "sha256:1", "4.3.1")
    jar_list = jars.jar_listing(_libs(tmp_path))
    files = config_files("4.3.1")
    base = image_digest("4.3.1", "p1", jar_list, df, files)
    assert len(base) == 16 and base == image_digest("4.3.1", "p1", list(jar_list), df, dict(files))
    assert jar_list == [("kafka_2.13-4.3.1.jar", 5), ("log4j-core-2.25.4.jar", 3)]
    changed = [image_digest("4.3.2", "p1", jar_list, df, files),
               image_digest("4.3.1", "p2", jar_list, df, files),
               image_digest("4.3.1", "p1", jar_list[:1], df, files),
               image_digest("4.3.1", "p1", [(jar_list[0][0], 6), jar_list[1]], df, files),
               image_digest("4.3.1", "p1", jar_list, df.replace("sha256:1", "sha256:2"), files),
               image_digest("4.3.1", "p1", jar_list, df, {**files, "config/log4j2.properties": b"x"})]
    assert len(set(changed) | {base}) == 7


@pytest.mark.parametrize("version, server, tools, marker", [
    ("4.3.1", "log4j2.properties", "tools-log4j2.properties", "fileName = ${logDir}/controller.log"),
    ("3.7.2", "log4j.properties", "tools-log4j.properties", "File=${kafka.logs.dir}/controller.log")])
def test_build_context_holds_dockerfile_jars_and_the_releases_log_configs(tmp_path, version, server, tools, marker):
    import io
    import tarfile

    from targets.kafka.image import config_files, kafka_dockerfile, write_build_context
    df = kafka_dockerfile("kraft-chaos-kafka-base:bookworm", "sha256:1", version)
    assert df.startswith("FROM kraft-chaos-kafka-base:bookworm\n") and "COPY libs /opt/kafka/libs" in df
    buf = io.BytesIO()
    write_build_context(buf, _libs(tmp_path), df, config_files(version))
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        assert sorted(tar.getnames()) == ["Dockerfile", f"config/{server}", f"config/{tools}",
                                          "libs/kafka_2.13-4.3.1.jar", "libs/log4j-core-2.25.4.jar"]
        text = tar.extractfile(f"config/{server}").read().decode()
        assert all(m.uid == 0 and m.gid == 0 and m.mode == 0o644 for m in tar.getmembers())
    # the server config writes server.log and controller.log into -Dkafka.logs.dir
    assert marker in text and "server.log" in text
