"""The files and shell scripts the SSH backend puts on, and runs on, a host (as root).

Layout on a host, for node ``<node>`` of run ``<run_id>`` (:func:`node_dir`)::

    <run_dir>/<run_id>/<node>/.kraft-chaos-node   marker: the sweep removes only such folders
                              init.sh, init.log   the node's init (see below) and its output
                              init.pid            "<host pid> <start time>" of the init
                              software/bin/python3         "exec <python> -S", first on PATH
                              software/files/<i>/<name>    the deployed files (our kraft/)
                              upper/{etc,var,opt}, owork/  the overlays' layers

A node is a process tree started by ``setsid unshare --pid --fork --kill-child --mount
--mount-proc``, as a node of the netns backend but in the host's network namespace (it listens
on the host's address): its init (:data:`REAPER`) lives in a mount namespace where ``/etc``,
``/var`` and ``/opt`` are overlays whose upper layers are in the node's folder (so
``/etc/kraft`` and ``/var/lib/kraft`` are the node's own, and the host's own files are never
written), the deployed files are read-only bind mounts, and a pid namespace (``/proc`` shows
only the node's processes, so the targets' process-control scripts act on this node only).
Killing the init with SIGKILL ends every process of the node. Partitions are iptables rules in
the host's ``KC-*`` chains (:mod:`nemesis.partition`); :func:`teardown_script` removes them.

Tools the hosts need (:data:`TOOLS`): Debian's coreutils, util-linux, iptables, tar, sed, grep.
"""
from __future__ import annotations

import io
import posixpath
import shlex
import tarfile
import time
from pathlib import Path
from typing import Mapping

from clusters.jre import PROBE as JAVA_PROBE

#: the marker file of a node folder
MARKER = ".kraft-chaos-node"
#: where a node finds ``python3`` (a wrapper adding ``-S``): first on its PATH
TOOLS_DIR = "/opt/kraft-chaos/bin"
OVERLAY_DIRS = ("etc", "var", "opt")
#: commands every host needs (on PATH :data:`clusters.ssh_session.HOST_PATH`)
TOOLS = ("sh", "tar", "timeout", "setsid", "unshare", "nsenter", "mount", "iptables", "sed", "cut", "grep")
#: the node's init: reap orphans forever (stdlib only)
REAPER = ("import os, time\nwhile True:\n    try:\n        os.waitpid(-1, 0)\n"
          "    except ChildProcessError:\n        time.sleep(0.2)\n    except InterruptedError:\n        pass\n")
SKIP = ("__pycache__", ".pytest_cache")
#: seconds a node's init may take to set up its namespaces
INIT_TIMEOUT_S = 30
#: sh: print field 22 (start time) of /proc/$1/stat, or nothing
_START_TIME = "st() { sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f20; }"


def node_dir(run_dir: str, run_id: str, node: str) -> str:
    """The node's folder on its host: ``<run_dir>/<run_id>/<node>``."""
    return posixpath.join(run_dir, run_id, node)


def init_script(ndir: str, python: str, files: Mapping[str, Path], hosts_lines: str) -> str:
    """The sh script (run inside the node's new namespaces) that mounts the overlays and the
    deployed ``files`` (``{node path: local path}``, in sorted order as ``software/files/<i>``),
    appends ``hosts_lines`` to the node's ``/etc/hosts``, prints ``ready`` and becomes the init."""
    q = shlex.quote
    lines = ["set -e"]
    for d in OVERLAY_DIRS:
        lines.append(f"mount -t overlay overlay -o lowerdir=/{d},upperdir={q(f'{ndir}/upper/{d}')},"
                     f"workdir={q(f'{ndir}/owork/{d}')} /{d}")
    lines += [f"mkdir -p {TOOLS_DIR}", f"mount --bind -o ro {q(ndir + '/software/bin')} {TOOLS_DIR}"]
    for i, (inside, src) in enumerate(sorted(files.items())):
        snap = f"{ndir}/software/files/{i}/{src.name}"
        make = (f"mkdir -p {q(inside)}" if src.is_dir()
                else f"mkdir -p {q(posixpath.dirname(inside))} && touch {q(inside)}")
        lines += [make, f"mount --bind -o ro {q(snap)} {q(inside)}"]
    lines += [f"printf %s {q(hosts_lines)} >> /etc/hosts", "echo ready",
              f"exec {q(python)} -c {q(REAPER)} </dev/null >/dev/null 2>&1"]
    return "\n".join(lines) + "\n"


def deploy_tar(run_id: str, node: str, python: str, files: Mapping[str, Path], init: str) -> bytes:
    """The node folder's initial contents as an uncompressed tar (root-owned entries): marker,
    ``init.sh``, the python wrapper, the deployed files (caches and ``*.pyc`` left out) and the
    overlays' empty layers."""
    buf = io.BytesIO()
    now = time.time()

    def entry(name: str, data: bytes | None = None, mode: int = 0o644) -> None:
        info = tarfile.TarInfo(name)
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mtime = now
        if data is None:
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        else:
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        base = posixpath.basename(info.name)
        if base in SKIP or base.endswith((".pyc", ".pyo")):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        entry(MARKER, f"kraft-chaos run {run_id} node {node}\n".encode())
        entry("init.sh", init.encode(), 0o755)
        for d in ("software", "software/bin", "software/files", "upper", "owork",
                  *(f"upper/{d}" for d in OVERLAY_DIRS), *(f"owork/{d}" for d in OVERLAY_DIRS)):
            entry(d)
        entry("software/bin/python3", f"#!/bin/sh\nexec {shlex.quote(python)} -S \"$@\"\n".encode(), 0o755)
        for i, (_, src) in enumerate(sorted(files.items())):
            entry(f"software/files/{i}")
            tar.add(str(src), arcname=f"software/files/{i}/{src.name}", recursive=True, filter=as_root)
    return buf.getvalue()


def unpack_script(ndir: str, python: str) -> str:
    """sh: create the node folder, unpack the deploy tar from stdin into it, byte-compile the
    deployed files with the host's ``python``."""
    q = shlex.quote
    return (f"set -e; mkdir -p {q(ndir)}; tar -x -C {q(ndir)} -f -; "
            f"{q(python)} -m compileall -q {q(ndir + '/software/files')} >/dev/null")


def launch_script(ndir: str) -> str:
    """sh: start the node's init (detached, in a session of its own), wait for its ``ready``,
    write ``init.pid`` and print ``init <pid> <start time>``; on failure print its output to
    stderr and exit 1."""
    d = shlex.quote(ndir)
    return f"""{_START_TIME}
cd {d}
setsid sh -c 'echo $$ > unshare.pid; exec unshare --pid --fork --kill-child --mount --propagation private \\
  --mount-proc sh {d}/init.sh' </dev/null >init.log 2>&1 &
i=0
while ! grep -qx ready init.log 2>/dev/null; do
  u=$(cat unshare.pid 2>/dev/null)
  if [ $i -ge {INIT_TIMEOUT_S * 10} ] || {{ [ -n "$u" ] && ! kill -0 "$u" 2>/dev/null; }}; then
    echo "its init did not start:" >&2; cat init.log >&2; [ -n "$u" ] && kill -9 "$u" 2>/dev/null; exit 1
  fi
  sleep 0.1; i=$((i+1))
done
u=$(cat unshare.pid)
c=$(cat /proc/$u/task/$u/children 2>/dev/null | cut -d' ' -f1)
if [ -z "$c" ]; then
  for p in /proc/[0-9]*; do [ "$(sed 's/.*) //' $p/stat 2>/dev/null | cut -d' ' -f2)" = "$u" ] && c=${{p#/proc/}}; done
fi
echo "$c $(st $c)" > init.pid
echo "init $(cat init.pid)"
"""


def teardown_script(run_dir: str, run_id: str | None, node: str | None) -> str:
    """sh: remove node ``node`` of run ``run_id`` from this host (None: every node, every run;
    only folders holding :data:`MARKER`): SIGKILL each init whose pid and start time match its
    ``init.pid`` and wait for it to be gone, delete the folder, then the run's and ``run_dir``
    when empty, and every ``KC-*`` iptables chain with the INPUT/OUTPUT jumps to it. Prints one
    ``removed ...`` line per thing removed and ``warning ...`` lines."""
    q = shlex.quote
    pattern = f"{q(run_dir)}/{q(run_id) if run_id else '*'}/{q(node) if node else '*'}/{MARKER}"
    return f"""{_START_TIME}
for m in {pattern}; do
  [ -f "$m" ] || continue
  d=${{m%/{MARKER}}}
  if read -r pid start < "$d/init.pid" 2>/dev/null && [ -n "$pid" ] && [ "$(st $pid)" = "$start" ]; then
    kill -9 "$pid" && echo "removed node init $pid ($d)"
    i=0; while [ -e /proc/$pid ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    [ -e /proc/$pid ] && echo "warning: init $pid of $d survived SIGKILL for 5 s"
  fi
  rm -rf "$d" && echo "removed folder $d"
  rmdir "${{d%/*}}" 2>/dev/null || true
done
rmdir {q(run_dir)} 2>/dev/null && echo "removed folder {run_dir}"
if command -v iptables >/dev/null 2>&1; then
  for c in $(iptables -w -S 2>/dev/null | sed -n 's/^-N \\(KC-[^ ]*\\)$/\\1/p'); do
    for hook in INPUT OUTPUT; do while iptables -w -D $hook -j $c 2>/dev/null; do :; done; done
    iptables -w -F $c && iptables -w -X $c && echo "removed iptables chain $c" || echo "warning: iptables chain $c stays"
  done
fi
true
"""


def runs_script(run_dir: str) -> str:
    """sh: one line ``<run id> <node> live|dead`` per node folder under ``run_dir`` (live: its
    init's pid and start time match ``init.pid``)."""
    return f"""{_START_TIME}
for m in {shlex.quote(run_dir)}/*/*/{MARKER}; do
  [ -f "$m" ] || continue
  d=${{m%/{MARKER}}}; n=${{d##*/}}; r=${{d%/*}}; r=${{r##*/}}
  s=dead
  if read -r pid start < "$d/init.pid" 2>/dev/null && [ -n "$pid" ] && [ "$(st $pid)" = "$start" ]; then s=live; fi
  echo "$r $n $s"
done
"""


def preflight_script(python: str, java: bool = False) -> str:
    """sh: print ``missing <tool>`` per missing tool of :data:`TOOLS`, then ``python <path>
    <major.minor>`` (or ``python-missing``), then whether overlayfs is available; with ``java``
    also ``java <path> <first line of java -version>`` (or ``java-missing``,
    :data:`clusters.jre.PROBE`)."""
    tools = " ".join(TOOLS)
    return f"""for t in {tools}; do command -v $t >/dev/null 2>&1 || echo "missing $t"; done
p=$(command -v {shlex.quote(python)} 2>/dev/null)
if [ -n "$p" ]; then echo "python $(readlink -f "$p") $("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
else echo python-missing; fi
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems && echo overlay || echo overlay-missing
""" + (JAVA_PROBE if java else "")
