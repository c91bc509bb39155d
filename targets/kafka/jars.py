"""Apache Kafka's jars, resolved from Maven with the pom of the release's logging stack
(``targets/kafka/poms/``, :mod:`targets.kafka.releases`) and cached per version.

No Kafka tarball and no container registry: Maven fetches ``kafka_2.13``,
``kafka-tools`` and the logging runtime (reload4j before 4.0, log4j2 from 4.0; about 50-105
jars, 37-56 MB) into ``<cache_root>/<version>/libs``. A stamp file next to ``libs`` records
the pom's digest, the version and the jars' names and sizes; the cache is reused
while they match. Maven writes into a temporary folder that is renamed into
place only when it succeeded, so a failed or interrupted run leaves no half
folder behind; concurrent callers serialise on a lock file.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from targets.errors import TargetError
from targets.kafka.releases import DEFAULT_VERSION, parse_version, release

DEFAULT_CACHE_ROOT = Path.home() / ".cache" / "kraft-chaos" / "kafka"
STAMP_NAME = "stamp.json"
#: seconds one Maven run may take (a cold resolve of 4.3.1 takes about 30 s)
MVN_TIMEOUT_S = 900.0

Log = Callable[[str], None]

# What Maven 3.8/3.9 print when an artifact cannot be had, most specific first.
_MISSING_PATTERNS = (
    re.compile(r"The following artifacts could not be resolved: (.+?): (?=[A-Z])"),
    re.compile(r"Could not find artifact (\S+)"),
    re.compile(r"(\S+:\S+:\S+:\S+) was not found in"),
    re.compile(r"Failed to read artifact descriptor for (\S+)"),
    re.compile(r"Could not transfer artifact (\S+)"),
    re.compile(r"Could not resolve dependencies for project \S+: (.+?)(?: -> |$)"),
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def validate_version(version: str) -> str:
    """Return ``version`` if it is a Kafka release kraft-chaos runs (``MAJOR.MINOR.PATCH``,
    digits only, of a line in :data:`targets.kafka.releases.RELEASES`). Raises
    :class:`TargetError` otherwise (``4.3``, ``4.3.1-rc1``, ``latest``, ``2.8.2``), before
    Maven runs."""
    parse_version(version)
    release(version)
    return version


def pom_for(version: str) -> Path:
    """The pom that resolves ``version``'s jars: its release's logging stack's
    (``poms/reload4j.xml`` before 4.0, ``poms/log4j2.xml`` from 4.0). Raises :class:`TargetError`
    as :func:`validate_version`."""
    return release(validate_version(version)).logging.pom


def pom_digest(pom: Path) -> str:
    """SHA-256 (hex) of the pom file's bytes. Raises ``FileNotFoundError``."""
    return hashlib.sha256(Path(pom).read_bytes()).hexdigest()


def jar_listing(libs: Path) -> list[tuple[str, int]]:
    """``[(file name, size in bytes), ...]`` of the ``*.jar`` files in ``libs``, sorted by name."""
    return sorted((p.name, p.stat().st_size) for p in Path(libs).glob("*.jar") if p.is_file())


def missing_artifact(output: str) -> str | None:
    """The artifact(s) Maven could not resolve, parsed from its output, or None.

    Understands "Could not find artifact G:A:T:V", "G:A:T:V was not found in
    ...", "The following artifacts could not be resolved: X, Y" and similar.
    """
    text = _ANSI.sub("", output)
    for pattern in _MISSING_PATTERNS:
        m = pattern.search(text)
        if m:
            return m.group(1).strip().rstrip(":")
    return None


_BOILERPLATE = ("Re-run Maven", "To see the full stack", "For more information", "[Help 1] http")


def _error_lines(output: str, limit: int = 6) -> str:
    """Maven's ``[ERROR]`` lines without its standard advice, at most ``limit`` of them
    (else the last ``limit`` lines of output)."""
    lines = [ln.strip() for ln in _ANSI.sub("", output).splitlines()]
    errors = [ln for ln in lines if ln.startswith("[ERROR]") and ln != "[ERROR]"
              and not any(b in ln for b in _BOILERPLATE)]
    if errors:
        return "\n".join(errors[:limit])
    return "\n".join([ln for ln in lines if ln][-limit:])


def _read_stamp(version_dir: Path) -> dict | None:
    try:
        return json.loads((version_dir / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return None


def cached_libs(version: str, cache_root: Path = DEFAULT_CACHE_ROOT, pom: Path | None = None) -> Path | None:
    """The cached ``libs`` folder for ``version`` if its stamp matches the pom (default:
    :func:`pom_for`) and the jars on disk (names and sizes), else None."""
    pom = pom_for(version) if pom is None else pom
    version_dir = Path(cache_root) / version
    stamp = _read_stamp(version_dir)
    if not stamp or stamp.get("version") != version or stamp.get("pom_sha256") != pom_digest(pom):
        return None
    libs = version_dir / "libs"
    if not libs.is_dir() or [list(x) for x in jar_listing(libs)] != stamp.get("jars"):
        return None
    return libs


@contextlib.contextmanager
def cache_lock(cache_root: Path) -> Iterator[None]:
    """Hold ``<cache_root>/.lock`` (``flock``, exclusive; the folder is made if missing) while
    the block runs: one process at a time fills a cache folder."""
    cache_root.mkdir(parents=True, exist_ok=True)
    with open(cache_root / ".lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def mvn_argv(mvn: str, pom: Path, version: str, out_dir: Path) -> list[str]:
    """The Maven command line that copies the pom's dependencies for ``version`` into ``out_dir``."""
    return [mvn, "-B", "-q", "-f", str(pom), f"-Dkafka.version={version}",
            "dependency:copy-dependencies", f"-DoutputDirectory={out_dir}"]


def resolve_jars(version: str = DEFAULT_VERSION, cache_root: Path | None = None, *,
                 pom: Path | None = None, log: Log = lambda _m: None, timeout_s: float = MVN_TIMEOUT_S,
                 expect: str = "kafka_2.13-") -> Path:
    """Return the folder holding every jar Kafka ``version`` needs, resolving it with Maven if not cached.

    ``pom`` defaults to the release's (:func:`pom_for`); ``cache_root`` defaults to
    ``~/.cache/kraft-chaos/kafka``; the result is
    ``<cache_root>/<version>/libs``. Runs ``mvn -B -q -f <copy of pom>
    -Dkafka.version=V dependency:copy-dependencies -DoutputDirectory=...`` in a
    temporary folder under ``cache_root`` and renames it into place when Maven
    succeeded. A cache whose stamp (version, pom SHA-256, jar names and sizes)
    matches is reused without running Maven.

    ``expect``: the file name prefix of a jar the pom must bring (the broker's by default;
    another pom, e.g. the Java client's, names its own).

    Raises :class:`TargetError` for a version that is not a supported release (before
    Maven runs, :func:`validate_version`), when ``mvn`` is not on ``PATH``, on a Maven failure (the
    message names the version and the artifact Maven could not find) or a
    timeout (``timeout_s`` seconds).
    """
    pom = Path(pom) if pom is not None else pom_for(version)
    cache_root = Path(cache_root) if cache_root is not None else DEFAULT_CACHE_ROOT
    libs = cached_libs(version, cache_root, pom)
    if libs is not None:
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise TargetError(f"Maven (mvn) is not installed, so the jars of Kafka {version} cannot be "
                          "resolved: install it (`apt-get install -y maven`)")
    with cache_lock(cache_root):
        libs = cached_libs(version, cache_root, pom)  # another process may have made it meanwhile
        if libs is not None:
            return libs
        work = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=cache_root))
        try:
            return _resolve_into(mvn, version, cache_root, pom, work, log, timeout_s, expect)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _resolve_into(mvn: str, version: str, cache_root: Path, pom: Path, work: Path,
                  log: Log, timeout_s: float, expect: str = "kafka_2.13-") -> Path:
    staged = work / version
    (staged / "libs").mkdir(parents=True)
    shutil.copyfile(pom, work / "pom.xml")  # Maven may write target/ next to the pom
    argv = mvn_argv(mvn, work / "pom.xml", version, staged / "libs")
    log(f"resolving Kafka {version} jars with Maven into {cache_root / version} ...")
    try:
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TargetError(f"Maven did not resolve the jars of Kafka {version} within "
                          f"{timeout_s:.0f} s") from None
    except OSError as e:
        raise TargetError(f"cannot run Maven ({mvn}) for Kafka {version}: {e}") from e
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        artifact = missing_artifact(output)
        tail = _error_lines(output)
        what = f"could not find {artifact}" if artifact else f"exited {proc.returncode}"
        raise TargetError(f"resolving the jars of Kafka {version} failed: Maven {what} "
                          f"(is {version} released on Maven Central?)\n{tail}")
    jars = jar_listing(staged / "libs")
    if not any(name.startswith(expect) for name, _ in jars):
        raise TargetError(f"Maven succeeded for Kafka {version} but no {expect.rstrip('-')} jar was copied")
    stamp = {"version": version, "pom_sha256": pom_digest(pom), "jars": [list(j) for j in jars]}
    (staged / STAMP_NAME).write_text(json.dumps(stamp, indent=1) + "\n")
    final = cache_root / version
    if final.exists():  # stale: move it aside first, so the swap itself is one rename
        shutil.move(str(final), str(work / "old"))
    os.rename(staged, final)
    log(f"Kafka {version}: {len(jars)} jars, {sum(s for _, s in jars) / 1e6:.0f} MB")
    return final / "libs"
