"""Command and file-copy helpers shared by the backends' :class:`~clusters.remote.Remote`\\ s.

``as_argv`` and ``with_timeout`` shape a node command the same way on every backend (a
string runs under ``sh -c``; a bounded command runs under coreutils ``timeout``);
``tar_of`` and ``extract_tar`` are the two halves of ``put``/``get`` as tar streams.
"""
from __future__ import annotations

import io
import math
import shlex
import posixpath
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Sequence

#: exit status of coreutils ``timeout`` when the command ran out of time (SIGTERM / SIGKILL)
TIMEOUT_EXIT_CODES = (124, 137)
#: seconds between ``timeout``'s SIGTERM and its SIGKILL
KILL_AFTER_S = 2


def as_argv(cmd: Sequence[str] | str) -> list[str]:
    """``cmd`` as an argv list: a string becomes ``["sh", "-c", cmd]``.

    Raises ``TypeError``/``ValueError`` for anything else or an empty command.
    """
    if isinstance(cmd, str):
        if not cmd.strip():
            raise ValueError("command string is empty")
        return ["sh", "-c", cmd]
    if isinstance(cmd, (bytes, bytearray)):
        raise TypeError(f"command must be str or a sequence of str, got bytes: {cmd!r}")
    argv = list(cmd)
    if not argv:
        raise ValueError("command argv is empty")
    bad = [a for a in argv if not isinstance(a, str)]
    if bad:
        raise TypeError(f"command argv items must be str, got {bad!r} in {argv!r}")
    return argv


def with_timeout(argv: list[str], timeout_s: float | None) -> list[str]:
    """Prefix ``argv`` with coreutils ``timeout -k 2 <s>`` when ``timeout_s`` is set (seconds > 0)."""
    if timeout_s is None:
        return argv
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive or None, got {timeout_s!r}")
    secs = max(1, math.ceil(timeout_s * 1000) / 1000)
    return ["timeout", "-k", str(KILL_AFTER_S), f"{secs:g}", *argv]


def split_remote_path(remote_path: str) -> tuple[str, str]:
    """``(parent, name)`` of an absolute node path other than ``/`` (a trailing ``/`` is
    dropped). Raises ``ValueError`` naming the path otherwise."""
    path = remote_path.rstrip("/")
    if not remote_path.startswith("/") or not path:
        raise ValueError(f"remote_path must be an absolute path other than /, got {remote_path!r}")
    parent, name = posixpath.split(path)
    return parent or "/", name


#: exit status of the copy scripts when the remote path (or, for a put, its parent) is missing
COPY_MISSING = 44


def untar_script(parent: str) -> str:
    """The shell script a put runs on the node: extract the tar on stdin into ``parent``,
    exiting :data:`COPY_MISSING` when ``parent`` is not a directory."""
    return f"[ -d {shlex.quote(parent)} ] || exit {COPY_MISSING}; tar -x -C {shlex.quote(parent)} -f -"


def tar_script(remote_path: str) -> tuple[str, str, str]:
    """``(path, name, script)`` for a get of ``remote_path``: the normalised path, the tar
    entry's name, and the shell script that writes the tar to stdout, exiting
    :data:`COPY_MISSING` when the path does not exist."""
    path = remote_path.rstrip("/") or "/"
    parent, name = split_remote_path(path) if path != "/" else ("/", ".")
    script = (f"[ -e {shlex.quote(path)} ] || [ -L {shlex.quote(path)} ] || exit {COPY_MISSING}; "
              f"tar -c -C {shlex.quote(parent)} -f - {shlex.quote(name)}")
    return path, name, script


def tar_of(local_path: Path, name: str) -> bytes:
    """An uncompressed tar of ``local_path`` (file or directory, recursively) stored as
    ``name``, every entry owned by root (uid/gid 0)."""
    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(local_path), arcname=name, recursive=True, filter=as_root)
    return buf.getvalue()


def extract_tar(stream: IO[bytes], name: str, local_path: Path) -> None:
    """Extract the entry ``name`` of the tar in ``stream`` so that it becomes ``local_path``:
    parents are created, an existing file or directory there is replaced, symlinks stay
    links. Raises ``FileNotFoundError`` when the tar holds no ``name``."""
    local_path = Path(local_path)
    local_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=local_path.parent, prefix=f".{local_path.name}.get-") as tmp:
        with tarfile.open(fileobj=stream, mode="r") as tar:
            if hasattr(tarfile, "tar_filter"):   # Python >= 3.11.4
                tar.extractall(tmp, filter="tar")
            else:
                tar.extractall(tmp)
        extracted = Path(tmp) / name
        if not extracted.exists() and not extracted.is_symlink():
            raise FileNotFoundError(f"the copy holds no {name!r}")
        if local_path.is_symlink() or local_path.is_file():
            local_path.unlink()
        elif local_path.is_dir():
            shutil.rmtree(local_path)
        extracted.rename(local_path)
