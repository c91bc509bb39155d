"""What differs between Apache Kafka's KRaft releases, 3.3 (KRaft production-ready, KIP-833)
to the newest 4.x: one table, :data:`RELEASES`, one row per release line.

Every module of ``targets/kafka`` that does something a release decides reads it here:
the jars' pom and logging stack (:mod:`targets.kafka.jars`, :mod:`targets.kafka.image`,
:mod:`targets.kafka.host_files`), the ``server.properties`` keys and the ``StorageTool
format`` flags (:mod:`targets.kafka.server_config`), the tool classes, the DescribeQuorum
versions (:mod:`targets.kafka.describe_quorum`) and the voter changes
(:mod:`targets.kafka.voters`). What a release cannot do is refused before any cluster is
made by :func:`check_run_options` (exit 3).

The facts were read from each line's newest jars as Maven Central serves them (2026-11-26):
the ``validVersions`` of ``common/message/DescribeQuorumRequest.json`` in kafka-clients, the
``--help`` of ``kafka.tools.StorageTool format`` and of ``MetadataQuorumCommand``, and
whether kafka-raft holds ``ProspectiveState`` (KIP-996's Pre-Vote), then confirmed by runs.
``newest`` is the newest patch of the line that resolved from Maven Central here; any patch
of a line may be asked for (Maven says whether it exists).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Iterable

from targets.errors import TargetError
from targets.kafka.logging_stacks import LOG4J1, LOG4J2, LoggingStack

#: ``MAJOR.MINOR.PATCH`` and an optional pre-release suffix (``-SNAPSHOT``, ``-rc1``: own builds only)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z][0-9A-Za-z.-]*))?")

#: ``StorageTool format`` flags of 3.3 (``--help`` of 3.3.2)
_FORMAT_33 = frozenset({"--config", "--cluster-id", "--release-version", "--ignore-formatted"})
#: KIP-853's quorum flags (3.9)
_FORMAT_DYNAMIC = frozenset({"--standalone", "--initial-controllers", "--no-initial-controllers"})
_OLD_MQC = "kafka.admin.MetadataQuorumCommand"
_MQC = "org.apache.kafka.tools.MetadataQuorumCommand"


class UnsupportedOption(TargetError):
    """A run option, fault or setting that the chosen Kafka release cannot do (exit 3). The
    message names the release and the feature, and from which release it exists."""


@dataclasses.dataclass(frozen=True)
class Release:
    """What one release line (``line``, e.g. ``(3, 7)``) of Kafka does differently.

    ``newest``: the newest patch that resolved from Maven Central (``"3.7.2"``).
    ``logging``: its :class:`~targets.kafka.logging_stacks.LoggingStack` (log4j 1 before 4.0).
    ``kraft_versions``: the kraft.version values it can format (1: KIP-853's dynamic quorum,
    ``controller.quorum.bootstrap.servers``, AddRaftVoter/RemoveRaftVoter; from 3.9).
    ``controller_advertises``: a controller may list its controller listener in
    ``advertised.listeners`` (from 3.9; before, a controller-only node must have none and a
    combined node's must leave the controller listener out).
    ``format_flags``: the ``StorageTool format`` flags it takes (``--feature`` from 3.8,
    ``--standalone``/``--initial-controllers``/``--no-initial-controllers`` from 3.9).
    ``storage_tool``/``quorum_tool``: the tool classes; ``quorum_tool_flags``: the
    ``MetadataQuorumCommand`` options and commands it has (``--bootstrap-controller`` from
    3.7, KIP-919; ``add-controller``/``remove-controller`` from 3.9).
    ``describe_quorum``: the DescribeQuorum (api key 55) versions its controllers serve,
    inclusive. ``pre_vote``: KIP-996's Pre-Vote (from 4.0; no release can switch it off).
    ``patches``: every patch release of the line whose jars resolved from Maven Central here,
    oldest first, ``newest`` last (what ``kraft-chaos bisect`` steps through). What a release
    is known to show under faults is the Kafka bug catalogue's
    (``harness/catalogue/kafka_bugs.py``, ``known_kinds``).
    """

    line: tuple[int, int]
    newest: str
    logging: LoggingStack
    kraft_versions: tuple[int, ...]
    controller_advertises: bool
    format_flags: frozenset[str]
    quorum_tool: str
    quorum_tool_flags: frozenset[str]
    describe_quorum: tuple[int, int]
    pre_vote: bool
    storage_tool: str = "kafka.tools.StorageTool"
    patches: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The line as text, ``"3.7"``."""
        return f"{self.line[0]}.{self.line[1]}"

    @property
    def voter_changes(self) -> bool:
        """AddRaftVoter/RemoveRaftVoter (KIP-853) through ``add-controller``/``remove-controller``."""
        return 1 in self.kraft_versions and "remove-controller" in self.quorum_tool_flags

    @property
    def default_kraft_version(self) -> int:
        """The kraft.version a run gets when none is asked for: the highest it has."""
        return max(self.kraft_versions)


def _row(line: tuple[int, int], newest: str, logging: LoggingStack, *, dynamic: bool, feature: bool,
         scram: bool, bootstrap_controller: bool, dq: tuple[int, int], pre_vote: bool,
         quorum_tool: str = _MQC, older: tuple[int, ...] = ()) -> Release:
    flags = _FORMAT_33 | ({"--add-scram"} if scram else set()) | ({"--feature"} if feature else set())
    tool = {"--bootstrap-server", "--command-config", "describe"}
    tool |= {"--bootstrap-controller"} if bootstrap_controller else set()
    tool |= {"add-controller", "remove-controller"} if dynamic else set()
    return Release(line, newest, logging, (0, 1) if dynamic else (0,), dynamic,
                   flags | (_FORMAT_DYNAMIC if dynamic else frozenset()), quorum_tool, frozenset(tool), dq,
                   pre_vote, patches=(*(f"{line[0]}.{line[1]}.{p}" for p in older), newest))


#: every release line kraft-chaos runs, oldest first; ``older``: the line's patches before its
#: newest whose jars resolve from Maven Central here (2026-11-26). Left out: 3.9.0, which formats
#: dynamic quorums wrongly (KAFKA-18028), and 4.0.1, whose connect-api, connect-json and
#: connect-transforms jars (kafka-tools' dependencies) Maven Central does not serve here
RELEASES: tuple[Release, ...] = (
    # KRaft production-ready (KIP-833); MetadataQuorumCommand still in core (kafka.admin)
    _row((3, 3), "3.3.2", LOG4J1, dynamic=False, feature=False, scram=False, bootstrap_controller=False,
         older=(0, 1), dq=(0, 1), pre_vote=False, quorum_tool=_OLD_MQC),
    _row((3, 4), "3.4.1", LOG4J1, dynamic=False, feature=False, scram=False, bootstrap_controller=False,
         older=(0,), dq=(0, 1), pre_vote=False),
    _row((3, 5), "3.5.2", LOG4J1, dynamic=False, feature=False, scram=True, bootstrap_controller=False,
         older=(0, 1), dq=(0, 1), pre_vote=False),
    _row((3, 6), "3.6.2", LOG4J1, dynamic=False, feature=False, scram=True, bootstrap_controller=False,
         older=(0, 1), dq=(0, 1), pre_vote=False),
    _row((3, 7), "3.7.2", LOG4J1, dynamic=False, feature=False, scram=True, bootstrap_controller=True,
         older=(0, 1), dq=(0, 1), pre_vote=False),
    _row((3, 8), "3.8.1", LOG4J1, dynamic=False, feature=True, scram=True, bootstrap_controller=True,
         older=(0,), dq=(0, 1), pre_vote=False),
    # KIP-853 dynamic quorums; 3.9.0 formats dynamic quorums wrongly (KAFKA-18028): use 3.9.1+
    _row((3, 9), "3.9.2", LOG4J1, dynamic=True, feature=True, scram=True, bootstrap_controller=True,
         older=(1,), dq=(0, 2), pre_vote=False),
    # ZooKeeper removed; log4j2; Pre-Vote (KIP-996)
    _row((4, 0), "4.0.2", LOG4J2, dynamic=True, feature=True, scram=True, bootstrap_controller=True,
         older=(0,), dq=(0, 2), pre_vote=True),
    _row((4, 1), "4.1.2", LOG4J2, dynamic=True, feature=True, scram=True, bootstrap_controller=True,
         older=(0, 1), dq=(0, 2), pre_vote=True),
    _row((4, 2), "4.2.2", LOG4J2, dynamic=True, feature=True, scram=True, bootstrap_controller=True,
         older=(0, 1), dq=(0, 2), pre_vote=True),
    _row((4, 3), "4.3.1", LOG4J2, dynamic=True, feature=True, scram=True, bootstrap_controller=True,
         older=(0,), dq=(0, 2), pre_vote=True),
    _row((4, 4), "4.4.0", LOG4J2, dynamic=True, feature=True, scram=True, bootstrap_controller=True,
         dq=(0, 2), pre_vote=True),
)

OLDEST, NEWEST = RELEASES[0], RELEASES[-1]
#: the version a run gets without ``--kafka-version``: the newest release that resolves
DEFAULT_VERSION = NEWEST.newest
_BY_LINE = {r.line: r for r in RELEASES}


def parse_version(version: str, *, prerelease: bool = False) -> tuple[int, int, int, str]:
    """``"3.7.2"`` -> ``(3, 7, 2, "")``; with ``prerelease`` also ``"4.5.0-SNAPSHOT"`` ->
    ``(4, 5, 0, "SNAPSHOT")`` (an own build's version). Raises :class:`TargetError` for
    any other shape (``4.3``, ``latest``, a suffix without ``prerelease``)."""
    m = _VERSION.fullmatch(version) if isinstance(version, str) else None
    if m is None or (m.group(4) and not prerelease):
        shape = "MAJOR.MINOR.PATCH" + ("[-SUFFIX]" if prerelease else " (digits only)")
        raise TargetError(f"Kafka version {version!r} is not of the form {shape}, e.g. {DEFAULT_VERSION}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or ""


def release(version: str, *, newer: bool = False) -> Release:
    """The row of the line ``version`` (``"3.7.2"``) belongs to.

    ``newer``: a version past the newest line (an own build of trunk, ``4.5.0-SNAPSHOT``)
    gets the newest line's row; without it, and always for a version before 3.3, raises
    :class:`TargetError` naming the supported lines. Pre-release suffixes are accepted only
    with ``newer`` (``--kafka-dist``; Maven serves releases). Raises :class:`TargetError`
    for a malformed version too.
    """
    major, minor, _patch, _suffix = parse_version(version, prerelease=newer)
    row = _BY_LINE.get((major, minor))
    if row is not None:
        return row
    supported = f"supported: {OLDEST.name} to {NEWEST.name} ({', '.join(r.name for r in RELEASES)})"
    if (major, minor) < OLDEST.line:
        raise TargetError(f"Kafka {version} is not supported: KRaft is production-ready from "
                          f"{OLDEST.name} (KIP-833); {supported}")
    if (major, minor) > NEWEST.line and newer:
        return NEWEST
    raise TargetError(f"Kafka {version} is not a release line kraft-chaos knows; {supported}")


def version_key(version: str) -> tuple[int, int, int]:
    """``"3.7.2"`` -> ``(3, 7, 2)``, for ordering releases. Raises :class:`TargetError` for a
    malformed version."""
    return parse_version(version)[:3]


def newest_patch(line: str) -> str:
    """The newest patch of release line ``line`` (``"3.9"`` -> ``"3.9.2"``); a full version
    (``"3.9.1"``) is returned as it is once its line is known. Raises :class:`TargetError`
    for a line or version the table does not have, or a malformed one."""
    m = re.fullmatch(r"(\d+)\.(\d+)", line) if isinstance(line, str) else None
    if m is None:
        release(line)           # a full version of a known line, or TargetError
        return line
    row = _BY_LINE.get((int(m.group(1)), int(m.group(2))))
    if row is None:
        raise TargetError(f"Kafka {line} is not a release line kraft-chaos knows; supported: "
                          f"{', '.join(r.name for r in RELEASES)}")
    return row.newest


def patches_between(first: str, last: str) -> list[str]:
    """Every patch release of the table (:attr:`Release.patches`) from ``first`` to ``last``,
    both included, oldest first. Raises :class:`TargetError` for a malformed version or
    ``first`` after ``last``."""
    lo, hi = version_key(first), version_key(last)
    if lo > hi:
        raise TargetError(f"Kafka {first} is after {last}: give the older release first")
    return [p for r in RELEASES for p in r.patches if lo <= version_key(p) <= hi]


def check_run_options(rel: Release, version: str, kraft_version: int | None,
                      faults: Iterable[str] = ()) -> None:
    """Refuse what Kafka ``version`` (of line ``rel``) cannot do, before any cluster is made.

    ``kraft_version``: the run's (None: the release's default); ``faults``: the fault families
    it plays (``"membership"``, ...). Refused: ``kraft_version`` 1 before 3.9, and the
    ``membership`` nemesis (AddRaftVoter/RemoveRaftVoter) on a release without voter changes.
    Raises :class:`UnsupportedOption` naming the version, the feature and the first release
    that has it.
    """
    first_dynamic = next(r for r in RELEASES if 1 in r.kraft_versions).name
    if kraft_version is not None and kraft_version not in rel.kraft_versions:
        raise UnsupportedOption(
            f"Kafka {version} cannot run --kraft-version {kraft_version}: kraft.version 1 (KIP-853 "
            f"dynamic quorum, controller.quorum.bootstrap.servers) exists from Kafka {first_dynamic}; "
            f"Kafka {rel.name} has only static controller.quorum.voters (--kraft-version 0)")
    if "membership" in set(faults) and not rel.voter_changes:
        raise UnsupportedOption(
            f"Kafka {version} cannot run the membership nemesis: voter changes (KIP-853 "
            f"AddRaftVoter/RemoveRaftVoter, kafka-metadata-quorum add-controller/remove-controller) "
            f"exist from Kafka {first_dynamic}")


#: the first release line with the ``transaction.version`` feature (KIP-890 part 2)
TRANSACTION_VERSION_LINE = (4, 0)
#: its levels: 0 the original protocol, 1 flexible records, 2 KIP-890 part 2 (EndTxn v5)
TRANSACTION_VERSIONS = (0, 1, 2)


def check_transaction_version(rel: Release, version: str, level: int | None) -> None:
    """Refuse ``--transaction-version level`` (None: not asked) on a release without the
    ``transaction.version`` feature, or a level it does not have. Raises
    :class:`UnsupportedOption` naming the version and the first release that has it."""
    if level is None:
        return
    first = ".".join(map(str, TRANSACTION_VERSION_LINE))
    if rel.line < TRANSACTION_VERSION_LINE:
        raise UnsupportedOption(
            f"Kafka {version} cannot run --transaction-version {level}: the transaction.version "
            f"feature (KIP-890 part 2) exists from Kafka {first}")
    if level not in TRANSACTION_VERSIONS:
        raise UnsupportedOption(f"Kafka {version} has no transaction.version {level}: it has "
                                f"{', '.join(map(str, TRANSACTION_VERSIONS))}")


def run_kraft_version(rel: Release, kraft_version: int | None) -> int:
    """The kraft.version of a run: ``kraft_version``, or the release's default (1 from 3.9,
    else 0) when it is None."""
    return rel.default_kraft_version if kraft_version is None else kraft_version


#: the README's releases table: its header row, then :func:`table_rows`
TABLE_HEADER = ("line", "newest patch", "logging", "kraft.version", "controllers advertise",
                "format flags past 3.3's", "MetadataQuorumCommand", "--bootstrap-controller",
                "DescribeQuorum", "Pre-Vote", "patches that resolve")


def table_rows() -> list[tuple[str, ...]]:
    """The releases table as text cells (:data:`TABLE_HEADER`), one row per line, oldest
    first. The README's table is checked against it."""
    def yes(b: bool) -> str:
        return "yes" if b else "no"
    return [(r.name, r.newest, r.logging.name, ", ".join(map(str, r.kraft_versions)), yes(r.controller_advertises),
             " ".join(sorted(r.format_flags - _FORMAT_33)) or "-", r.quorum_tool.rpartition(".")[0],
             yes("--bootstrap-controller" in r.quorum_tool_flags),
             f"v{r.describe_quorum[0]}-v{r.describe_quorum[1]}", yes(r.pre_vote),
             " ".join(r.patches)) for r in RELEASES]


def table_markdown() -> str:
    """:func:`table_rows` as a Markdown table (the README's)."""
    lines = ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows()]
    return "\n".join(lines) + "\n"
