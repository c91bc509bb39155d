"""A user's own Kafka build (``--kafka-dist PATH``): a binary distribution, read and checked.

A distribution is what Kafka's ``./gradlew releaseTarGz`` makes and what a release candidate
ships: ``kafka_2.13-X.tgz`` (one top folder ``kafka_2.13-X/``), or that folder unpacked,
holding ``libs/*.jar``, ``bin/`` and ``config/``. Only ``libs/`` is used: the nodes run its
jars (its own logging jars included) with our ``server.properties`` and our log config for
its logging stack, exactly as a Maven version's jars are run.

* The version comes from the server jar's name, ``libs/kafka_2.13-X.jar`` (or
  ``kafka_2.12-X.jar``), and failing that from ``kafka/kafka-version.properties`` in
  ``libs/kafka-clients-*.jar``, which is what ``kafka-server-start.sh --version`` prints
  (``AppInfoParser``); when both are there they must agree. Its row of
  :data:`targets.kafka.releases.RELEASES` applies (a version past the newest line, e.g. a
  trunk build ``4.5.0-SNAPSHOT``, gets the newest line's).
* The digest (SHA-256 over every ``libs/*.jar``'s name and bytes) keys the node image and the
  unpacked copy, so two different builds that both call themselves ``4.5.0-SNAPSHOT`` never
  share one; the same build as a folder or as a ``.tgz`` has the same digest.

Anything else raises :class:`DistError` (exit 3) saying what was missing.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO, Iterator

from targets.errors import TargetError
from targets.kafka.jars import cache_lock
from targets.kafka.releases import Release, parse_version, release

#: the server jar: ``kafka_<scala>-<version>.jar``; test/sources/javadoc jars are not it
_SERVER_JAR = re.compile(r"kafka_(2\.1[23])-(.+)\.jar")
_NOT_SERVER = ("-test.jar", "-sources.jar", "-javadoc.jar", "-scaladoc.jar", "-test-sources.jar")
_CLIENTS_JAR = re.compile(r"kafka-clients-.+\.jar")
_VERSION_RESOURCE = "kafka/kafka-version.properties"
TAR_SUFFIXES = (".tgz", ".tar.gz", ".tar")


class DistError(TargetError):
    """A ``--kafka-dist`` path that is not a Kafka binary distribution (exit 3); the message
    names the path and what was missing."""


@dataclasses.dataclass(frozen=True)
class KafkaDist:
    """A Kafka distribution read from ``path`` (absolute): ``kind`` ``"dir"`` or ``"tar"``;
    ``version`` (``"4.0.2"``, ``"4.5.0-SNAPSHOT"``) and ``scala`` (``"2.13"``) of its server
    jar; ``digest``: SHA-256 hex over its ``libs/*.jar`` (names and bytes); ``jars``: those
    names, sorted; ``libs``: the member prefix of ``libs/`` in a tar (``"kafka_2.13-X/libs"``)
    or the folder's ``libs`` path."""

    path: Path
    kind: str
    version: str
    scala: str
    digest: str
    jars: tuple[str, ...]
    libs: str

    @property
    def release(self) -> Release:
        """Its row of the releases table (a version past the newest line: the newest's)."""
        return release(self.version, newer=True)


def _jar_entries_dir(path: Path) -> tuple[str, Iterator[tuple[str, IO[bytes]]]]:
    libs = path / "libs"
    if not libs.is_dir():
        raise DistError(f"--kafka-dist {path}: no libs/ folder (a Kafka binary distribution holds "
                        f"libs/*.jar, bin/ and config/)")
    return str(libs), _files(libs)


def _tar_libs_prefix(path: Path, tar: tarfile.TarFile) -> tuple[str, list[tarfile.TarInfo]]:
    """``(prefix, jar members)``: ``libs/`` at the top or under the one top folder."""
    by_dir: dict[str, list[tarfile.TarInfo]] = {}
    for m in tar.getmembers():
        p = PurePosixPath(m.name)          # "./libs/x.jar" reads as libs/x.jar
        if m.isfile() and p.suffix == ".jar" and p.parent.name == "libs" and len(p.parts) <= 3:
            by_dir.setdefault(str(p.parent), []).append(m)
    if not by_dir:
        raise DistError(f"--kafka-dist {path}: the archive has no libs/*.jar (at its top or under "
                        f"one top folder such as kafka_2.13-X/)")
    if len(by_dir) > 1:
        raise DistError(f"--kafka-dist {path}: the archive has several libs/ folders ({', '.join(sorted(by_dir))}): "
                        f"one distribution per archive")
    prefix, members = next(iter(by_dir.items()))
    return prefix, sorted(members, key=lambda m: m.name)


def _digest_and_names(entries: Iterator[tuple[str, IO[bytes]]]) -> tuple[str, list[str], dict[str, bytes]]:
    """SHA-256 over (name, bytes) of every jar; their names; the kafka-clients jars' bytes (for
    the version resource)."""
    h, names, clients = hashlib.sha256(), [], {}
    for name, f in entries:
        data = f.read()
        for part in (name.encode(), data):
            h.update(len(part).to_bytes(8, "big") + part)
        names.append(name)
        if _CLIENTS_JAR.fullmatch(name):
            clients[name] = data
    return h.hexdigest(), names, clients


def _clients_version(path: Path, clients: dict[str, bytes]) -> str | None:
    import io
    for name, data in clients.items():
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                text = z.read(_VERSION_RESOURCE).decode("utf-8", "replace")
        except (zipfile.BadZipFile, KeyError):
            continue
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "version" and value.strip():
                return value.strip()
    return None


def server_version(path: Path, names: list[str], clients: dict[str, bytes]) -> tuple[str, str]:
    """``(version, scala)`` of a distribution whose ``libs/`` holds ``names``. Raises
    :class:`DistError` for no server jar, two of them, or a version neither the jar's name
    nor kafka-clients' ``kafka/kafka-version.properties`` gives."""
    servers = [(n, _SERVER_JAR.fullmatch(n)) for n in names if not n.endswith(_NOT_SERVER)]
    servers = [(n, m) for n, m in servers if m]
    if not servers:
        raise DistError(f"--kafka-dist {path}: libs/ holds no kafka_2.13-VERSION.jar or "
                        f"kafka_2.12-VERSION.jar (the Kafka server's jar)")
    if len(servers) > 1:
        raise DistError(f"--kafka-dist {path}: libs/ holds {len(servers)} Kafka server jars "
                        f"({', '.join(n for n, _ in servers)}): one distribution, one kafka_2.1x jar")
    name, m = servers[0]
    scala, from_name = m.group(1), m.group(2)
    from_clients = _clients_version(path, clients)
    try:
        parse_version(from_name, prerelease=True)
    except TargetError:
        from_name = None
    if from_name and from_clients and from_name != from_clients:
        raise DistError(f"--kafka-dist {path}: {name} says version {from_name} but kafka-clients' "
                        f"{_VERSION_RESOURCE} says {from_clients}")
    version = from_name or from_clients
    if version is None:
        raise DistError(f"--kafka-dist {path}: its version is unreadable: neither {name} nor "
                        f"kafka-clients' {_VERSION_RESOURCE} gives MAJOR.MINOR.PATCH[-SUFFIX]")
    parse_version(version, prerelease=True)
    return version, scala


def read_dist(path: str | os.PathLike) -> KafkaDist:
    """Read the distribution at ``path`` (a folder, or a ``.tgz``/``.tar.gz``/``.tar``).

    Reads every jar of ``libs/`` once (about 1 s for 55 MB). Raises :class:`DistError`
    naming what was missing: no such path, not a folder nor a tar archive, no ``libs/``, no
    or two server jars, an unreadable version, no jar of its logging stack; and
    :class:`TargetError` for a version before 3.3.
    """
    p = Path(path).expanduser().absolute()
    if not p.exists():
        raise DistError(f"--kafka-dist {p}: no such file or directory")
    if p.is_dir():
        kind = "dir"
        libs, entries = _jar_entries_dir(p)
        digest, names, clients = _digest_and_names(entries)
    else:
        kind = "tar"
        try:
            tar = tarfile.open(p, "r:*")
        except (tarfile.TarError, OSError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else "not gzip, bzip2, xz nor plain tar"
            raise DistError(f"--kafka-dist {p}: neither a folder nor a tar archive (.tgz, .tar.gz, .tar): "
                            f"{why}") from None
        with tar:
            libs, members = _tar_libs_prefix(p, tar)
            digest, names, clients = _digest_and_names(
                (PurePosixPath(m.name).name, tar.extractfile(m)) for m in members)
    if not names:
        raise DistError(f"--kafka-dist {p}: libs/ holds no jars")
    version, scala = server_version(p, names, clients)
    dist = KafkaDist(p, kind, version, scala, digest, tuple(sorted(names)), libs)
    stack = dist.release.logging
    if not any(n.startswith(stack.marker_jars) for n in names):
        raise DistError(f"--kafka-dist {p}: Kafka {version} logs through {stack.name}, but libs/ holds "
                        f"no {' or '.join(m + '*.jar' for m in stack.marker_jars)}")
    return dist


def dist_home(dist: KafkaDist, cache_root: Path) -> Path:
    """``<cache_root>/dist/<digest>``: where a distribution's unpacked ``libs/`` (tar
    archives) and our log configs for it live."""
    return Path(cache_root) / "dist" / dist.digest


def dist_libs(dist: KafkaDist, cache_root: Path) -> Path:
    """The folder of the distribution's jars: a folder distribution's own ``libs/``; a tar's
    unpacked (once, into :func:`dist_home`, renamed into place when whole; its digest is
    checked again). Raises :class:`DistError` when the archive changed since it was read,
    ``OSError`` when it cannot be unpacked."""
    if dist.kind == "dir":
        return Path(dist.libs)
    home = dist_home(dist, cache_root)
    libs = home / "libs"
    if (home / "libs.ok").exists() and libs.is_dir():
        return libs
    with cache_lock(home.parent):
        if (home / "libs.ok").exists() and libs.is_dir():
            return libs
        home.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".libs-", dir=home))
        try:
            with tarfile.open(dist.path, "r:*") as tar:
                _, members = _tar_libs_prefix(dist.path, tar)
                for m in members:
                    with tar.extractfile(m) as src, open(work / PurePosixPath(m.name).name, "wb") as out:
                        shutil.copyfileobj(src, out)
            digest, _, _ = _digest_and_names(_files(work))
            if digest != dist.digest:
                raise DistError(f"--kafka-dist {dist.path}: the archive changed while it was used "
                                f"(digest {digest[:16]}, read as {dist.digest[:16]})")
            shutil.rmtree(libs, ignore_errors=True)
            os.rename(work, libs)
            (home / "libs.ok").write_text(dist.version + "\n")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return libs


def _files(folder: Path) -> Iterator[tuple[str, IO[bytes]]]:
    """``(name, open file)`` of every ``*.jar`` file in ``folder``, by name."""
    for jar in sorted(p for p in folder.iterdir() if p.name.endswith(".jar") and p.is_file()):
        with open(jar, "rb") as f:
            yield jar.name, f
