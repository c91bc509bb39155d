"""The Apache Kafka node image, built offline: a Debian base with a JRE, plus Kafka's jars.

Two layers, like ``clusters/image.py``'s:

* the base, ``kraft-chaos-kafka-base:bookworm``: debootstrap's minimal
  bookworm with python3, iproute2, iptables, procps (what the nemeses use)
  and ``openjdk-17-jre-headless`` (debootstrap pulls in its dependencies),
  imported with the engine's image import. Built once (about 2 min), then
  cached by tag. Needs root, ``debootstrap`` and a Debian mirror; no registry.
* the node image, ``kraft-chaos-kafka:<digest>``: the jars Maven resolved
  (:mod:`targets.kafka.jars`), or those of a user's distribution (``--kafka-dist``,
  :mod:`targets.kafka.dist`), in ``/opt/kafka/libs/``, and the two configs of the
  release's logging stack (:mod:`targets.kafka.logging_stacks`: log4j 1 before 4.0,
  log4j2 from 4.0) in ``/opt/kafka/config/``. ``<digest>`` covers the Kafka version, the
  pom (or the distribution's content digest), the jars' names and sizes, both configs and
  the Dockerfile (so the base's image id): the image is rebuilt exactly when one of them
  changes, and two builds of one version never share an image.
"""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Callable

import docker
import docker.errors

from clusters.image import BASE_PACKAGES, build_base_image, build_image, hold_image, prune_images
from targets.kafka.jars import DEFAULT_CACHE_ROOT, jar_listing, pom_digest, pom_for, resolve_jars
from targets.kafka.releases import DEFAULT_VERSION, release
from targets.kafka.server_config import KAFKA_HOME, LIBS_DIR

KAFKA_BASE_TAG = "kraft-chaos-kafka-base:bookworm"
KAFKA_BASE_PACKAGES = (*BASE_PACKAGES, "openjdk-17-jre-headless")
KAFKA_REPO = "kraft-chaos-kafka"
IMAGE_LABEL = "kraft-chaos.image"
VERSION_LABEL = "kraft-chaos.kafka-version"
#: where the jars came from: ``maven``, or ``dist:<path>`` for a user's distribution
SOURCE_LABEL = "kraft-chaos.kafka-source"
DIGEST_LEN = 16


Log = Callable[[str], None]


def kafka_dockerfile(base_image: str, base_id: str, version: str) -> str:
    """The Dockerfile of the node layer: ``libs/`` and ``config/`` copied to
    ``/opt/kafka``; the base's image id as a label (a rebuilt base changes the
    digest), ``KAFKA_HOME`` and ``KAFKA_VERSION`` in the environment."""
    return "\n".join([
        f"FROM {base_image}",
        f'LABEL kraft-chaos.base-id="{base_id}"',
        f"COPY libs {LIBS_DIR}",
        f"COPY config {KAFKA_HOME}/config",
        f"ENV KAFKA_HOME={KAFKA_HOME} KAFKA_VERSION={version}",
        'CMD ["sleep","infinity"]',
    ]) + "\n"


def config_files(version: str = DEFAULT_VERSION, *, newer: bool = False) -> dict[str, bytes]:
    """``{path in the build context: bytes}`` of the configs baked into the image of Kafka
    ``version``: its logging stack's (:meth:`LoggingStack.files`; ``newer`` as
    :func:`targets.kafka.releases.release`). Raises ``TargetError`` for a bad version."""
    return release(version, newer=newer).logging.files()


def image_digest(version: str, pom_sha256: str, jars: list[tuple[str, int]], dockerfile: str,
                 files: dict[str, bytes]) -> str:
    """SHA-256 (hex, first 16 digits) over the version, the pom's digest (or a distribution's
    content digest), the jars' ``(name, size)``, the Dockerfile and the config files (path
    and bytes)."""
    h = hashlib.sha256()
    head = json.dumps({"version": version, "pom": pom_sha256, "jars": [list(j) for j in jars],
                       "dockerfile": dockerfile}, sort_keys=True).encode()
    h.update(len(head).to_bytes(8, "big") + head)
    for name in sorted(files):
        for part in (name.encode(), files[name]):
            h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()[:DIGEST_LEN]


def write_build_context(out: IO[bytes], libs: Path, dockerfile: str, files: dict[str, bytes]) -> None:
    """Write a tar build context into ``out``: ``Dockerfile``, ``libs/<jar>`` for every
    ``*.jar`` in ``libs`` (sorted) and ``files``; everything owned by root, mode 0644."""
    def add(tar: tarfile.TarFile, name: str, data: IO[bytes], size: int) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.uid, info.gid = size, 0o644, 0, 0
        info.uname = info.gname = "root"
        tar.addfile(info, data)

    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in {"Dockerfile": dockerfile.encode(), **files}.items():
            add(tar, name, io.BytesIO(data), len(data))
        for name, size in jar_listing(libs):
            with open(Path(libs) / name, "rb") as f:
                add(tar, f"libs/{name}", f, size)


def _image_id(client: docker.DockerClient, name: str) -> str | None:
    try:
        return client.images.get(name).id
    except docker.errors.ImageNotFound:
        return None


def ensure_kafka_base(client: docker.DockerClient, log: Log = print) -> tuple[str, str]:
    """``(tag, image id)`` of :data:`KAFKA_BASE_TAG`, built with debootstrap if absent.

    Raises :class:`~clusters.errors.ClusterError` as
    :func:`clusters.image.build_base_image` does (not root, no debootstrap,
    unreachable mirror, failed import).
    """
    image_id = _image_id(client, KAFKA_BASE_TAG)
    if image_id is None:
        image_id = build_base_image(client, KAFKA_BASE_TAG, log, packages=KAFKA_BASE_PACKAGES)
    return KAFKA_BASE_TAG, image_id


def ensure_kafka_image(client: docker.DockerClient, version: str = DEFAULT_VERSION, log: Log = print,
                       *, cache_root: Path | None = None, dist=None) -> str:
    """Return the tag of a node image holding Kafka ``version``, building what is missing.

    The jars: Maven's (:func:`targets.kafka.jars.resolve_jars`, cached in ``cache_root``), or
    with ``dist`` (a :class:`targets.kafka.dist.KafkaDist`; ``version`` is then its version)
    the distribution's own ``libs/`` (:func:`targets.kafka.dist.dist_libs`). Makes the JRE
    base if absent (:func:`ensure_kafka_base`), then builds ``kraft-chaos-kafka:<digest>``
    (see :func:`image_digest`) unless an image with that tag exists. This checkout's reference
    tag is put on it (:func:`clusters.image.hold_image`), and images of the same version and
    source it held before are removed unless another checkout holds them too or a container
    uses them (:func:`prune_kafka_images`). ``log`` receives progress lines.

    Raises :class:`targets.errors.TargetError` for a bad version or a failed
    Maven run, and :class:`~clusters.errors.ClusterError` for a failed base
    build or layer build (with the end of the build log).
    """
    cache_root = Path(cache_root) if cache_root is not None else DEFAULT_CACHE_ROOT
    if dist is None:
        libs, source, content = resolve_jars(version, cache_root, log=log), "maven", pom_digest(pom_for(version))
    else:
        from targets.kafka.dist import dist_libs
        version, source, content = dist.version, f"dist:{dist.path}", dist.digest
        libs = dist_libs(dist, cache_root)
    base, base_id = ensure_kafka_base(client, log)
    dockerfile = kafka_dockerfile(base, base_id, version)
    files = config_files(version, newer=dist is not None)
    tag = f"{KAFKA_REPO}:{image_digest(version, content, jar_listing(libs), dockerfile, files)}"
    if _image_id(client, tag) is None:
        log(f"building Kafka {version} node image {tag} on {base} ({source}) ...")
        with tempfile.TemporaryFile() as ctx:
            write_build_context(ctx, libs, dockerfile, files)
            ctx.seek(0)
            build_image(client, ctx, tag, {IMAGE_LABEL: "kafka", VERSION_LABEL: version, SOURCE_LABEL: source},
                        f"Kafka image {tag} on {base}")
    hold_image(client, tag)
    prune_kafka_images(client, tag, version, log, source=source)
    return tag


def prune_kafka_images(client: docker.DockerClient, keep: str, version: str, log: Log = print,
                       *, source: str = "maven") -> list[str]:
    """Remove the Kafka node images of ``version`` from ``source`` (labelled
    ``kraft-chaos.image=kafka``, ``kraft-chaos.kafka-version=<version>`` and
    ``kraft-chaos.kafka-source=<source>``) this checkout held but no longer needs, and ones
    nobody references past the age limit (:func:`clusters.image_prune.prune_plan`), never
    ``keep``; returns the tags removed.

    Best effort: images still used by a container are kept; never raises.
    Images of other Kafka versions or sources are left alone.
    """
    return prune_images(client, keep, [f"{IMAGE_LABEL}=kafka", f"{VERSION_LABEL}={version}",
                                       f"{SOURCE_LABEL}={source}"], f"Kafka {version} node images", log)
