"""The :class:`~clusters.remote.Remote` for Docker containers: exec, put and get."""
from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

import docker
import docker.errors

from clusters.remote import ExecResult, Remote, RemoteError

from clusters.commands import as_argv as _argv, split_remote_path, tar_of, with_timeout as _with_timeout


def _decode(b: bytes | None) -> str:
    return (b or b"").decode("utf-8", errors="replace")


class DockerRemote(Remote):
    """Runs commands in, and copies files to and from, one container per node.

    ``containers`` maps node name (``"n1"``) to container name or id. All
    engine calls go through ``client`` (a ``docker.DockerClient``).
    """

    def __init__(self, client: docker.DockerClient, containers: Mapping[str, str]):
        self.client = client
        self.containers = dict(containers)

    def _container(self, node: str, cmd: object = None):
        if node not in self.containers:
            raise RemoteError(node, cmd, f"unknown node; nodes are {sorted(self.containers)}")
        try:
            return self.client.containers.get(self.containers[node])
        except docker.errors.NotFound:
            raise RemoteError(node, cmd, f"container {self.containers[node]} does not exist") from None
        except docker.errors.DockerException as e:
            raise RemoteError(node, cmd, f"cannot reach container {self.containers[node]}: {e}") from e

    def exec(self, node: str, cmd: Sequence[str] | str, *, check: bool = True,
             detach: bool = False, timeout_s: float | None = 30.0) -> ExecResult:
        """Run ``cmd`` in ``node``'s container (see :meth:`Remote.exec`).

        A foreground command with ``timeout_s`` runs under coreutils
        ``timeout -k 2 <timeout_s>``; exit status 124 or 137 is reported as a
        timeout. A detached command is not bounded. Raises :class:`RemoteError`
        on an unknown node, a missing or stopped/paused container, a timeout,
        or (``check=True``) a non-zero exit.
        """
        argv = _argv(cmd)
        container = self._container(node, cmd)
        api = self.client.api
        try:
            if detach:
                exec_id = api.exec_create(container.id, argv, stdout=False, stderr=False)["Id"]
                api.exec_start(exec_id, detach=True)
                return ExecResult(0, "", "")
            exec_id = api.exec_create(container.id, _with_timeout(argv, timeout_s))["Id"]
            out, err = api.exec_start(exec_id, demux=True)
            code = api.exec_inspect(exec_id)["ExitCode"]
        except docker.errors.NotFound:
            raise RemoteError(node, cmd, f"container {container.name} is gone") from None
        except docker.errors.APIError as e:
            raise RemoteError(node, cmd, f"exec failed: {e.explanation or e}") from e
        except docker.errors.DockerException as e:
            raise RemoteError(node, cmd, f"exec failed: {e}") from e
        return ExecResult(int(code if code is not None else -1), _decode(out), _decode(err)).checked(
            node, cmd, timeout_s, check)

    def put(self, node: str, local_path: Path, remote_path: str) -> None:
        """Copy local file or directory ``local_path`` to ``remote_path`` in the container.

        The copy is owned by root. Raises ``FileNotFoundError`` when
        ``local_path`` is missing, ``ValueError`` when ``remote_path`` is not
        absolute, and :class:`RemoteError` when the remote parent directory is
        missing or the copy fails.
        """
        local_path = Path(local_path)
        if not local_path.exists():
            raise FileNotFoundError(f"put to {node}: local path {local_path} does not exist")
        parent, name = split_remote_path(remote_path)
        data = tar_of(local_path, name)
        container = self._container(node, f"put {remote_path}")
        try:
            ok = container.put_archive(parent, data)
        except docker.errors.NotFound:
            raise RemoteError(node, f"put {remote_path}",
                              f"remote directory {parent} does not exist") from None
        except docker.errors.DockerException as e:
            raise RemoteError(node, f"put {remote_path}", f"copy failed: {e}") from e
        if not ok:
            raise RemoteError(node, f"put {remote_path}", "the engine refused the archive")

    def get(self, node: str, remote_path: str, local_path: Path) -> None:
        """Copy ``remote_path`` (file or directory) from the container to ``local_path``.

        ``local_path`` becomes the copy: its parents are created and an existing
        file or directory at ``local_path`` is replaced. Symlinks are kept as
        links. Raises :class:`RemoteError` when the remote path does not exist, or the copy
        failed or was cut short (a file of a live directory vanished while it was read).
        """
        local_path = Path(local_path)
        remote_path = remote_path.rstrip("/") or "/"
        container = self._container(node, f"get {remote_path}")
        try:
            stream, stat = container.get_archive(remote_path)
            with tempfile.TemporaryFile() as spool:
                for chunk in stream:
                    spool.write(chunk)
                spool.seek(0)
                local_path.parent.mkdir(parents=True, exist_ok=True)
                with tempfile.TemporaryDirectory(dir=local_path.parent,
                                                 prefix=f".{local_path.name}.get-") as tmp:
                    with tarfile.open(fileobj=spool, mode="r") as tar:
                        if hasattr(tarfile, "tar_filter"):   # Python >= 3.11.4
                            tar.extractall(tmp, filter="tar")
                        else:
                            tar.extractall(tmp)
                    extracted = Path(tmp) / stat["name"]
                    if local_path.is_symlink() or local_path.is_file():
                        local_path.unlink()
                    elif local_path.is_dir():
                        shutil.rmtree(local_path)
                    extracted.rename(local_path)
        except docker.errors.NotFound:
            raise RemoteError(node, f"get {remote_path}", "remote path does not exist") from None
        except docker.errors.DockerException as e:
            raise RemoteError(node, f"get {remote_path}", f"copy failed: {e}") from e
        except tarfile.TarError as e:
            # the engine cuts its archive short when a file vanishes while it is read
            raise RemoteError(node, f"get {remote_path}", f"copy failed: the archive was cut short ({e}); "
                              "a file changed or vanished while it was copied") from e
