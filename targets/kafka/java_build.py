"""The Java client program (``java_client/*.java``) built for one Kafka release and
cached: Kafka's own Java client, kafka-clients, of the release under test, driven by
``targets/kafka/txn_java.py``.

:func:`ensure_java_client` resolves the program's jars with Maven (``poms/clients.xml``:
kafka-clients of the release, Gson, slf4j-simple; :func:`targets.kafka.jars.resolve_jars`)
into ``<cache_root>/<version>/libs``, then compiles the sources with ``javac`` against them
into ``<cache_root>/<version>/classes-<digest>/``, where the digest covers the sources, the
jars (names and sizes) and javac's version: a changed source or release builds anew, an
unchanged one is reused. javac writes into a temporary folder renamed into place when it
succeeded; concurrent callers serialise on the cache's lock file.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from targets.errors import TargetError
from targets.kafka.jars import cache_lock, jar_listing, resolve_jars, validate_version

DEFAULT_CACHE_ROOT = Path.home() / ".cache" / "kraft-chaos" / "java-client"
POM = Path(__file__).resolve().parent / "poms" / "clients.xml"
SOURCES = Path(__file__).resolve().parent / "java_client"
MAIN_CLASS = "TxnClient"
#: the oldest JDK the program is compiled for (``javac --release``)
JAVA_RELEASE = 17
#: JVM flags: the client is small and short-lived; C1 only starts it faster
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-Xss512k",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.showDateTime=true")
#: seconds javac may take
JAVAC_TIMEOUT_S = 300.0

Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class JavaClientBuild:
    """A built program: Kafka ``version``, its ``libs`` folder and its ``classes`` folder."""

    version: str
    libs: Path
    classes: Path

    def classpath(self) -> str:
        """The JVM's ``-cp``: the classes, then every jar."""
        return os.pathsep.join([str(self.classes), *(str(self.libs / n) for n, _ in jar_listing(self.libs))])

    def argv(self, java: str | None = None) -> list[str]:
        """The command line that runs the program (``java``: default :func:`find_java`)."""
        return [java or find_java(), *JVM_FLAGS, "-cp", self.classpath(), MAIN_CLASS]


@functools.lru_cache(maxsize=8)
def javac_version(javac: str) -> str:
    """``javac -version``'s answer (``"javac 17.0.15"``; asked once per process). Raises
    :class:`TargetError` when it does not run."""
    try:
        proc = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TargetError(f"cannot run {javac}: {e}") from None
    return (proc.stdout + proc.stderr).strip()


def java_files(sources: Path) -> list[Path]:
    """The ``*.java`` files of the folder ``sources``, sorted by name."""
    return sorted(Path(sources).glob("*.java"))


def build_digest(sources: Path, jars: list[tuple[str, int]], javac: str) -> str:
    """SHA-256 (hex, 16 digits) over the sources (names and bytes), the jars' ``(name, size)``
    and javac's version."""
    h = hashlib.sha256()
    parts = [x for f in java_files(sources) for x in (f.name.encode(), f.read_bytes())]
    for part in (*parts, json.dumps([list(j) for j in jars]).encode(), javac.encode()):
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()[:16]


def find_java() -> str:
    """The ``java`` that runs the program: ``$JAVA_HOME/bin/java`` when there is one (as the
    javac beside it compiled it), else ``java`` (on ``PATH``)."""
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").is_file():
        return str(Path(home, "bin", "java"))
    return "java"


def find_javac() -> str:
    """The ``javac`` to use: ``$JAVA_HOME/bin/javac``, else the one on ``PATH``. Raises
    :class:`TargetError` naming the package to install when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "javac").is_file():
        return str(Path(home, "bin", "javac"))
    found = shutil.which("javac")
    if found is None:
        raise TargetError("the Java client (--client java) is compiled at set-up, but there is no javac: "
                          "install a JDK >= 17 (apt-get install -y openjdk-17-jdk-headless, or make run/test, "
                          "which run scripts/ensure-jdk.sh)")
    return found


def ensure_java_client(version: str, cache_root: Path | None = None, *, log: Log = lambda _m: None,
                       sources: Path = SOURCES, pom: Path = POM) -> JavaClientBuild:
    """The Java client program for Kafka ``version``, resolved and built if not cached (see
    the module docstring; ``sources``: the folder of the program's ``.java`` files). Raises
    :class:`TargetError`: a version that is not a supported
    release (before Maven runs), a jar Maven cannot resolve (the message names it), no
    javac, or a failed compilation (with javac's first lines)."""
    validate_version(version)
    cache_root = Path(cache_root) if cache_root is not None else DEFAULT_CACHE_ROOT
    libs = resolve_jars(version, cache_root, pom=pom, log=log, expect="kafka-clients-")
    javac = find_javac()
    digest = build_digest(Path(sources), jar_listing(libs), javac_version(javac))
    classes = libs.parent / f"classes-{digest}"
    if (classes / f"{MAIN_CLASS}.class").is_file():
        return JavaClientBuild(version, libs, classes)
    with cache_lock(cache_root):
        if not (classes / f"{MAIN_CLASS}.class").is_file():
            _compile(javac, Path(sources), libs, classes, version, log)
    return JavaClientBuild(version, libs, classes)


def _compile(javac: str, sources: Path, libs: Path, classes: Path, version: str, log: Log) -> None:
    work = Path(tempfile.mkdtemp(prefix=".classes-", dir=classes.parent))
    try:
        cp = os.pathsep.join(str(libs / n) for n, _ in jar_listing(libs))
        argv = [javac, "--release", str(JAVA_RELEASE), "-nowarn", "-encoding", "UTF-8", "-cp", cp,
                "-d", str(work), *map(str, java_files(sources))]
        log(f"compiling the Java client against kafka-clients {version} ...")
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise TargetError(f"javac of the Java client for Kafka {version} failed: {e}") from None
        if proc.returncode != 0:
            head = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[:12])
            raise TargetError(f"javac of the Java client for Kafka {version} failed (exit {proc.returncode}):\n{head}")
        # builds of other sources stay (tens of kB each): a JVM of another checkout may run them
        os.rename(work, classes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
