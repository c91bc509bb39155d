"""The SparkSession for ``kraft-chaos analyze``: local[*] by default, any master given."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

#: The embedded default master: every core of this machine.
DEFAULT_MASTER = "local[*]"
_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://[^\s/]+(:\d+)?(,[^\s/]+(:\d+)?)*|yarn|"
                     r"k8s://\S+|mesos://\S+)$")


class SparkSetupError(RuntimeError):
    """Spark cannot start here: no Java 17+, or a bad master URL (the message says which)."""


def check_master(master: str) -> str:
    """Return ``master`` if it is a Spark master URL (local[N], spark://HOST:PORT, yarn,
    k8s://..., mesos://...), else raise :class:`SparkSetupError` naming it."""
    if not _MASTER.match(master or ""):
        raise SparkSetupError(f"bad --master {master!r}: use local[*], local[N], spark://HOST:PORT "
                              f"or yarn")
    return master


def java_major() -> int | None:
    """The major version of the ``java`` on PATH (or under JAVA_HOME), or None if there is none."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


#: Bytes of history per shuffle partition when the input is sized (about 100k ops).
BYTES_PER_PARTITION = 32 * 2**20


def partitions_for(input_bytes: int | None, cores: int) -> int:
    """Shuffle partitions for ``input_bytes`` of history on ``cores`` local cores: one per
    :data:`BYTES_PER_PARTITION`, at least 1, at most 2 x cores; 2 x cores when the
    size is unknown (None)."""
    top = max(2, 2 * cores)
    if input_bytes is None:
        return top
    return max(1, min(top, -(-input_bytes // BYTES_PER_PARTITION)))


def spark_session(master: str = DEFAULT_MASTER, app: str = "kraft-chaos analyze",
                  shuffle_partitions: int | None = None, driver_memory: str | None = None,
                  input_bytes: int | None = None):
    """Get or create the SparkSession, UI off, quiet logs, adaptive query execution on
    (shuffles coalesced to the data's size at run time, skewed joins split).

    Local masters get ``spark.sql.shuffle.partitions`` = ``shuffle_partitions``,
    else :func:`partitions_for` ``input_bytes`` (the histories' total size;
    2 x cores when not given: the default 200 is for clusters; one history
    of a few MB then runs each shuffle as one task, not a dozen near-empty
    ones) and ``driver_memory`` (default: a third of
    this machine's RAM, at least 1g; local executors run in the driver's
    JVM). Other masters keep their cluster's defaults. Raises
    :class:`SparkSetupError` for a bad master or when no Java 17+ is
    installed (PySpark 4 needs it; ``make`` installs it, see
    scripts/ensure-java.sh).
    """
    check_master(master)
    major = java_major()
    if major is None or major < 17:
        found = "no java on PATH" if major is None else f"java {major}"
        raise SparkSetupError(f"Spark needs Java 17 or newer ({found}): run `make spark` or "
                              f"install openjdk-17-jre-headless")
    if master.startswith("local"):
        # local workers run this interpreter (the venv's), not whatever python3 is on PATH
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
         .config("spark.sql.adaptive.advisoryPartitionSizeInBytes", str(16 * 2**20)))
    if master.startswith("local"):
        cores = os.cpu_count() or 2
        m = re.match(r"local\[(\d+)", master)
        if m:
            cores = int(m.group(1))
        parts = shuffle_partitions or partitions_for(input_bytes, cores)
        b = b.config("spark.sql.shuffle.partitions", str(parts))
        b = b.config("spark.driver.memory", driver_memory or _default_driver_memory())
        # the throughput collector: analysis is batch work with no pause target, and
        # on 2 cores G1's concurrent marking took a quarter of every job's time
        b = b.config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
        # one machine: cached columns and shuffle files stay in memory / page cache,
        # so compressing them costs CPU and saves nothing
        b = b.config("spark.sql.inMemoryColumnarStorage.compressed", "false")
        b = b.config("spark.shuffle.compress", "false").config("spark.shuffle.spill.compress", "false")
    elif shuffle_partitions:
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _default_driver_memory() -> str:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "2g"
    return f"{max(1, total // 3 // 2**30)}g"
