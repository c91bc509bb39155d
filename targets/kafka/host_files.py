"""Kafka's node files for backends whose nodes run the host's JVM (``--cluster netns`` and
``ssh``): the same jars and log configs the node image holds (:mod:`targets.kafka.image`),
at the same paths, from folders on this machine.

The jars are Maven's, resolved into the local cache exactly as the image build does
(:func:`targets.kafka.jars.resolve_jars`), or a user's distribution's own ``libs/``
(``--kafka-dist``, :func:`targets.kafka.dist.dist_libs`). The two configs of the release's
logging stack are written next to them, into ``<cache_root>/<version>/config`` (a
distribution's: ``<cache_root>/dist/<digest>/config``), rewritten only when their bytes
differ (a new file is renamed into place, so concurrent runs never see half a file).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from targets.kafka.jars import DEFAULT_CACHE_ROOT, resolve_jars
from targets.kafka.logging_stacks import CONFIG_DIR
from targets.kafka.releases import DEFAULT_VERSION
from targets.kafka.server_config import KAFKA_HOME, LIBS_DIR

#: the oldest Java the nodes' Kafka runs on (Kafka 4.x brokers need 17)
MIN_JAVA = 17

Log = Callable[[str], None]


def write_configs(dest: Path, files: dict[str, bytes]) -> Path:
    """Write ``files`` (``{"config/<name>": bytes}``, :func:`targets.kafka.image.config_files`)
    into the folder ``dest`` (created if missing) by their base names, each file only when
    its bytes differ; returns ``dest``. Raises ``OSError``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        path = dest / Path(name).name
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=dest)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return dest


def host_files(version: str = DEFAULT_VERSION, log: Log = lambda _m: None, *,
               cache_root: Path | None = None, dist=None) -> dict[str, Path]:
    """``{node path: local folder}`` of Kafka ``version``: ``/opt/kafka/libs`` (the resolved
    jars, 49-107 files, 37-56 MB) and ``/opt/kafka/config`` (its logging stack's configs).
    With ``dist`` (a :class:`targets.kafka.dist.KafkaDist`, whose version is then used) the
    jars are the distribution's own.

    Resolves the jars with Maven when they are not cached (``cache_root``: default
    ``~/.cache/kraft-chaos/kafka``). Raises :class:`targets.errors.TargetError` for a bad
    version or a failed Maven run, ``OSError`` when the configs cannot be written.
    """
    from targets.kafka.image import config_files
    cache_root = Path(cache_root) if cache_root is not None else DEFAULT_CACHE_ROOT
    if dist is None:
        libs = resolve_jars(version, cache_root, log=log)
        config = libs.parent / "config"
        files = config_files(version)
    else:
        from targets.kafka.dist import dist_home, dist_libs
        libs, config = dist_libs(dist, cache_root), dist_home(dist, cache_root) / "config"
        version, files = dist.version, config_files(dist.version, newer=True)
    return {LIBS_DIR: libs, CONFIG_DIR: write_configs(config, files)}


def host_env(version: str = DEFAULT_VERSION) -> dict[str, str]:
    """The environment the node image sets (``KAFKA_HOME``, ``KAFKA_VERSION``)."""
    return {"KAFKA_HOME": KAFKA_HOME, "KAFKA_VERSION": version}
