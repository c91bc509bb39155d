"""The ``sh`` snippets that start, signal and stop a node's Kafka JVM, as pure functions of
:class:`targets.kafka.server_config.KafkaPaths` (a process is ours when its command line
matches ``kafka[.]Kafka``; its pid is in ``paths.pid``). Run on a node through
:class:`clusters.remote.Remote` by :class:`targets.kafka.db.KafkaDB`.
"""
from __future__ import annotations

import shlex
from typing import Sequence

from targets.kafka.server_config import KafkaPaths


def running_test(paths: KafkaPaths) -> str:
    """sh condition: the pid file names a live ``kafka.Kafka`` JVM (sets ``$pid``;
    zombies have no cmdline)."""
    return (f'pid=$(cat {shlex.quote(paths.pid)} 2>/dev/null) && [ -n "$pid" ] && '
            'tr "\\000" " " < /proc/$pid/cmdline 2>/dev/null | grep -q "kafka[.]Kafka"')


def signal_script(paths: KafkaPaths, sig: str) -> str:
    """sh: send ``sig`` to the JVM; prints ``signalled`` if there was one."""
    return f'if {running_test(paths)}; then kill -{sig} "$pid" && echo signalled; fi'


def kill_script(paths: KafkaPaths) -> str:
    """sh: SIGKILL the pid-file JVM, then any ``kafka.Kafka <our config>`` (not this
    shell), then wait up to 5 s for it to be gone. Prints ``signalled`` per kill."""
    return (f"{signal_script(paths, '9')}\n"
            "for p in /proc/[0-9]*; do\n"
            '  n=${p#/proc/}; [ "$n" = "$$" ] && continue\n'
            '  c=$(tr "\\000" " " < $p/cmdline 2>/dev/null) || continue\n'
            f'  case "$c" in *kafka[.]Kafka\\ {shlex.quote(paths.config)}*) '
            'kill -9 "$n" 2>/dev/null && echo signalled;; esac\n'
            "done\n"
            f"i=0; while {running_test(paths)} && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
            "true")


def stop_script(paths: KafkaPaths, timeout_s: float) -> str:
    """sh: SIGTERM (and SIGCONT, in case it is paused), wait up to ``timeout_s``;
    prints ``signalled`` if a JVM got SIGTERM and ``sigkill`` if it still runs."""
    ticks = max(1, int(timeout_s * 10))
    return (f'if {running_test(paths)}; then kill -TERM "$pid"; kill -CONT "$pid"; echo signalled; fi\n'
            f"i=0; while {running_test(paths)} && [ $i -lt {ticks} ]; do sleep 0.1; i=$((i+1)); done\n"
            f"if {running_test(paths)}; then echo sigkill; fi\n")


def start_script(paths: KafkaPaths, argv: Sequence[str]) -> str:
    """sh: unless the JVM runs, start ``argv`` detached (``nohup``, stdout and
    stderr appended to ``kafka.out``), write its pid; prints ``started`` or ``running``."""
    return (f"if {running_test(paths)}; then echo running; exit 0; fi\n"
            f"cd / && mkdir -p {shlex.quote(paths.log_dir)} || exit 1\n"
            f"nohup {shlex.join(argv)} </dev/null >>{shlex.quote(paths.out)} 2>&1 &\n"
            f"echo $! > {shlex.quote(paths.pid)}\n"
            "echo started")
