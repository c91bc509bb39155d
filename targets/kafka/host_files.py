"""Kafka's node files for backends whose nodes run the host's JVM (``--cluster netns`` and
``ssh``): the same jars and log4j2 configs the node image holds
(:mod:`targets.kafka.image`), at the same paths, from folders on this machine.

The jars are Maven's, resolved into the local cache exactly as the image build does
(:func:`targets.kafka.jars.resolve_jars`); the two configs are written next to them, into
``<cache_root>/<version>/config``, rewritten only when their bytes differ (a new file is
renamed into place, so concurrent runs never see half a file).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from targets.kafka.jars import DEFAULT_VERSION, resolve_jars
from targets.kafka.server_config import KAFKA_HOME, LIBS_DIR

#: the oldest Java the nodes' Kafka runs on (Kafka 4.x brokers need 17)
MIN_JAVA = 17
#: the node folder of the log4j2 configs (``log4j2.properties``, ``tools-log4j2.properties``)
CONFIG_DIR = f"{KAFKA_HOME}/config"

Log = Callable[[str], None]


def write_configs(dest: Path) -> Path:
    """Write the image's log4j2 configs (:func:`targets.kafka.image.config_files`) into the
    folder ``dest`` (created if missing), each file only when its bytes differ; returns
    ``dest``. Raises ``OSError``."""
    from targets.kafka.image import config_files
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in config_files().items():
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
               cache_root: Path | None = None) -> dict[str, Path]:
    """``{node path: local folder}`` of Kafka ``version``: ``/opt/kafka/libs`` (the resolved
    jars, about 90 files, 55 MB for 4.3.1) and ``/opt/kafka/config`` (the log4j2 configs).

    Resolves the jars with Maven when they are not cached (``cache_root``: default
    ``~/.cache/kraft-chaos/kafka``). Raises :class:`targets.errors.TargetError` for a bad
    version or a failed Maven run, ``OSError`` when the configs cannot be written.
    """
    libs = resolve_jars(version, cache_root, log=log)
    return {LIBS_DIR: libs, CONFIG_DIR: write_configs(libs.parent / "config")}


def host_env(version: str = DEFAULT_VERSION) -> dict[str, str]:
    """The environment the node image sets (``KAFKA_HOME``, ``KAFKA_VERSION``)."""
    return {"KAFKA_HOME": KAFKA_HOME, "KAFKA_VERSION": version}
