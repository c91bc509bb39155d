"""The node image: a Debian base plus the repo's ``kraft/`` package, built offline.

Two layers:

* the base, ``kraft-chaos-base:bookworm``: a minimal Debian bookworm rootfs made
  with ``debootstrap`` (python3, iproute2, iptables, procps) and imported with
  the engine's image import. Needs root, ``debootstrap`` and a Debian mirror,
  but no container registry. Built once, then cached by tag.
* the node image, ``kraft-chaos-node:<digest>``: ``kraft/`` copied to
  ``/opt/kraft/kraft`` on top of the base. ``<digest>`` covers the generated
  Dockerfile (so the base's name and image id) and every file under
  ``kraft/``, so the image is rebuilt exactly when one of them changes.

Users with a registry may pass ``base_image`` (e.g. ``python:3.12-slim``); the
layer then installs iptables, iproute2 and procps with apt-get.
"""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Sequence

import docker
import docker.errors

from clusters.errors import ClusterError
from clusters.image_prune import checkout_id, image_info, max_age_s, prune_plan, ref_tag

BASE_REPO = "kraft-chaos-base"
BASE_TAG = f"{BASE_REPO}:bookworm"
NODE_REPO = "kraft-chaos-node"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = os.environ.get("KRAFT_CHAOS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_PACKAGES = ("python3", "iproute2", "iptables", "procps")
#: directory and file names left out of the digest and the build context
IGNORED_NAMES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")
DIGEST_LEN = 16

Log = Callable[[str], None]


def _kraft_files(kraft_dir: Path) -> Iterator[tuple[str, Path]]:
    """Yield ``(posix relative path, absolute path)`` of every regular file under
    ``kraft_dir``, sorted by relative path, skipping caches and bytecode."""
    found = []
    for root, dirs, files in os.walk(kraft_dir):
        dirs[:] = [d for d in dirs if d not in IGNORED_NAMES]
        for name in files:
            if name.endswith(IGNORED_SUFFIXES):
                continue
            p = Path(root) / name
            if p.is_file():
                found.append((p.relative_to(kraft_dir).as_posix(), p))
    found.sort()
    return iter(found)


def kraft_digest(kraft_dir: Path, extra: bytes = b"") -> str:
    """SHA-256 (hex, first 16 digits) of ``extra`` and every file under ``kraft_dir``.

    Each file contributes its relative path and its bytes, length-prefixed, in
    sorted path order; ``__pycache__`` and ``*.pyc`` are skipped. Raises
    ``FileNotFoundError`` when ``kraft_dir`` is not a directory.
    """
    kraft_dir = Path(kraft_dir)
    if not kraft_dir.is_dir():
        raise FileNotFoundError(f"kraft package directory not found: {kraft_dir}")
    h = hashlib.sha256()
    h.update(len(extra).to_bytes(8, "big") + extra)
    for rel, path in _kraft_files(kraft_dir):
        data = path.read_bytes()
        name = rel.encode()
        h.update(len(name).to_bytes(8, "big") + name)
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:DIGEST_LEN]


def is_own_base(image: str) -> bool:
    """True when ``image`` is one of our debootstrap bases (which already have the tools)."""
    return image.split(":", 1)[0] == BASE_REPO


def node_dockerfile(base_image: str, base_id: str = "") -> str:
    """The Dockerfile text for the node layer on ``base_image``.

    A base that is not ours gets ``apt-get install iptables iproute2 procps``.
    ``base_id`` (the base's image id) is recorded as a label so that a rebuilt
    base yields a different digest.
    """
    lines = [f"FROM {base_image}"]
    if not is_own_base(base_image):
        lines.append("RUN apt-get update && apt-get install -y --no-install-recommends "
                     "iptables iproute2 procps && rm -rf /var/lib/apt/lists/*")
    if base_id:
        lines.append(f'LABEL kraft-chaos.base-id="{base_id}"')
    lines += ["COPY kraft /opt/kraft/kraft",
              "ENV PYTHONPATH=/opt/kraft",
              'CMD ["sleep","infinity"]']
    return "\n".join(lines) + "\n"


def build_context(kraft_dir: Path, dockerfile: str) -> io.BytesIO:
    """An in-memory tar build context: ``Dockerfile`` plus ``kraft/<files>``.

    Files are owned by root (uid/gid 0) and keep their mode bits.
    """
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        df = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(df)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(df))
        for rel, path in _kraft_files(Path(kraft_dir)):
            info = tar.gettarinfo(str(path), arcname=f"kraft/{rel}")
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            with open(path, "rb") as f:
                tar.addfile(info, f)
    buf.seek(0)
    return buf


def _image_id(client: docker.DockerClient, name: str) -> str | None:
    try:
        return client.images.get(name).id
    except docker.errors.ImageNotFound:
        return None


def _unmount_below(root: Path) -> None:
    """Lazily unmount anything debootstrap left mounted under ``root`` (deepest first)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return
    prefix = str(root.resolve()) + "/"
    points = [m.split()[1] for m in mounts if len(m.split()) > 1 and m.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def build_base_image(client: docker.DockerClient, tag: str = BASE_TAG, log: Log = print,
                     packages: Sequence[str] = BASE_PACKAGES) -> str:
    """Make the Debian bookworm base with debootstrap and import it as ``tag``.

    Runs ``debootstrap --variant=minbase --include=<packages>
    bookworm <tmp> <mirror>`` (about 40 s with the default
    :data:`BASE_PACKAGES`: python3, iproute2, iptables, procps; debootstrap
    pulls in their dependencies) then imports the rootfs tarball.
    The temp dir is removed afterwards, also on failure. Returns the image id.
    Raises :class:`ClusterError` when not root, debootstrap is missing or fails,
    or the import fails.
    """
    if os.geteuid() != 0:
        raise ClusterError(
            f"Building the base image {tag} needs root (debootstrap). Run as root, "
            "or pass --base-image NAME to build on an image from a registry.")
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise ClusterError(
            f"debootstrap is not installed, so the base image {tag} cannot be built: "
            "run scripts/ensure-docker.sh (or `apt-get install -y debootstrap`), "
            "or pass --base-image NAME.")
    work = Path(tempfile.mkdtemp(prefix="kraft-chaos-rootfs-", dir="/var/tmp"))
    rootfs = work / "rootfs"
    tarball = work / "rootfs.tar"
    try:
        log(f"building base image {tag}: debootstrap {DEBIAN_SUITE} from {DEBIAN_MIRROR} ...")
        cmd = [debootstrap, "--variant=minbase", f"--include={','.join(packages)}",
               DEBIAN_SUITE, str(rootfs), DEBIAN_MIRROR]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise ClusterError(
                f"debootstrap failed (exit {proc.returncode}) building {tag} from "
                f"{DEBIAN_MIRROR}; set KRAFT_CHAOS_DEBIAN_MIRROR to a reachable mirror "
                f"or pass --base-image NAME. Output:\n{tail}")
        _unmount_below(rootfs)
        # Leave out apt's caches: they only make the image bigger.
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            d = rootfs / cache
            if d.is_dir():
                for p in d.glob("*.deb"):
                    p.unlink()
        proc = subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ClusterError(f"tar of the base rootfs failed: {proc.stderr.strip()}")
        repo, _, version = tag.partition(":")
        log(f"importing base rootfs as {tag} ...")
        try:
            client.api.import_image(src=str(tarball), repository=repo, tag=version or "latest",
                                    changes=['CMD ["sleep","infinity"]'])
        except docker.errors.DockerException as e:
            raise ClusterError(f"importing the base rootfs as {tag} failed: {e}") from e
        image_id = _image_id(client, tag)
        if image_id is None:
            raise ClusterError(f"importing the base rootfs reported success but {tag} does not exist")
        return image_id
    finally:
        _unmount_below(rootfs)
        shutil.rmtree(work, ignore_errors=True)


def _ensure_base(client: docker.DockerClient, base_image: str | None, log: Log) -> tuple[str, str]:
    """Return ``(name, id)`` of the base image, building or pulling it if absent."""
    if base_image is None:
        image_id = _image_id(client, BASE_TAG)
        if image_id is None:
            image_id = build_base_image(client, BASE_TAG, log)
        return BASE_TAG, image_id
    image_id = _image_id(client, base_image)
    if image_id is None:
        if is_own_base(base_image):
            raise ClusterError(f"base image {base_image} does not exist; omit --base-image "
                               f"to build {BASE_TAG}")
        log(f"pulling base image {base_image} ...")
        try:
            image_id = client.images.pull(base_image).id
        except docker.errors.DockerException as e:
            raise ClusterError(
                f"base image {base_image} is not present and cannot be pulled ({e}); "
                "pull it by hand, or omit --base-image to build the offline Debian base") from e
    return base_image, image_id


def ensure_node_image(client: docker.DockerClient, kraft_dir: Path, base_image: str | None = None,
                      log: Log = print) -> str:
    """Return the tag of a node image holding ``kraft_dir``, building what is missing.

    ``kraft_dir`` is the ``kraft`` package directory (it must contain
    ``__init__.py``). ``base_image`` None means the offline Debian base
    :data:`BASE_TAG` (built with debootstrap if absent); otherwise that image
    is pulled if absent and iptables/iproute2/procps are installed on it.
    The tag is ``kraft-chaos-node:<digest>`` (see :func:`kraft_digest`); an
    existing image with that tag is reused. This checkout's reference tag is put on it
    (:func:`hold_image`), and node images it held before are removed unless another
    checkout holds them too (:func:`prune_node_images`). ``log`` receives progress lines.

    Raises :class:`ClusterError` on a missing ``kraft_dir``, a failed base
    build or pull, or a failed layer build (with the end of the build log).
    """
    kraft_dir = Path(kraft_dir)
    if not (kraft_dir / "__init__.py").is_file():
        raise ClusterError(f"{kraft_dir} is not the kraft package directory (no __init__.py)")
    base, base_id = _ensure_base(client, base_image, log)
    dockerfile = node_dockerfile(base, base_id)
    tag = f"{NODE_REPO}:{kraft_digest(kraft_dir, dockerfile.encode())}"
    if _image_id(client, tag) is None:
        log(f"building node image {tag} on {base} ...")
        build_image(client, build_context(kraft_dir, dockerfile), tag, {"kraft-chaos.image": "node"},
                    f"node image {tag} on {base}")
    hold_image(client, tag)
    prune_node_images(client, tag, log)
    return tag


def build_image(client: docker.DockerClient, context, tag: str, labels: dict[str, str], what: str) -> None:
    """Build ``tag`` from the tar build context ``context`` (a binary file object holding a
    Dockerfile) with ``labels``. Raises :class:`ClusterError` naming ``what``, with the end of
    the build log when the build failed."""
    try:
        client.images.build(fileobj=context, custom_context=True, tag=tag, pull=False, rm=True,
                            forcerm=True, labels=labels)
    except docker.errors.BuildError as e:
        lines = [str(chunk.get("stream") or chunk.get("error") or "").rstrip()
                 for chunk in (e.build_log or [])]
        tail = "\n".join([ln for ln in lines if ln][-15:])
        raise ClusterError(f"building {what} failed: {e.msg}\n{tail}") from e
    except docker.errors.DockerException as e:
        raise ClusterError(f"building {what} failed: {e}") from e


def hold_image(client: docker.DockerClient, tag: str, checkout: str | None = None) -> str | None:
    """Put ``checkout``'s (default this checkout's) reference tag on image ``tag``
    (:func:`clusters.image_prune.ref_tag`), so no other checkout's pruning removes it. Returns
    the reference tag, or None when the engine refused (best effort; never raises)."""
    ref = ref_tag(tag, checkout or checkout_id())
    repo, _, name = ref.rpartition(":")
    try:
        client.images.get(tag).tag(repo, name)
    except docker.errors.DockerException:
        return None
    return ref


def prune_node_images(client: docker.DockerClient, keep: str, log: Log = print) -> list[str]:
    """Remove the node images (labelled ``kraft-chaos.image=node``) this checkout held but no
    longer needs, and ones nobody references past the age limit, by
    :func:`clusters.image_prune.prune_plan`'s rule; returns the tags removed.

    Best effort: an image still used by a container (for example a cluster
    kept with ``--keep-cluster``) is left alone, and no error is raised.
    """
    return prune_images(client, keep, ["kraft-chaos.image=node"], "node images", log)


def prune_images(client: docker.DockerClient, keep: str, labels: list[str], what: str,
                 log: Log = print, *, now: float | None = None, checkout: str | None = None) -> list[str]:
    """Remove the tags :func:`clusters.image_prune.prune_plan` picks among the images carrying
    all of ``labels`` (``key=value``): never ``keep``'s; this checkout's (``checkout``, default
    :func:`~clusters.image_prune.checkout_id`) references to others, with the image when no
    other checkout references it; unreferenced or others' images only past
    ``KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS`` (default 14; ``now``: epoch seconds, default the
    clock). Returns the tags removed (reference tags of images that stay are not logged) and
    logs the rest as "older ``what``". Best effort: images still used by a container stay (the
    engine refuses; this never forces), and no error is raised, a bad age setting included
    (then only this checkout's references go)."""
    import time

    from clusters.image_prune import ref_owner
    removed: list[str] = []
    try:
        images = [image_info(i) for i in client.images.list(filters={"label": labels})]
    except docker.errors.DockerException:
        return removed
    try:
        age = max_age_s()
    except ValueError as e:
        log(f"{e}; removing only this checkout's older {what}")
        age = 0.0
    plan = prune_plan(images, keep, checkout or checkout_id(), time.time() if now is None else now, age)
    for t in plan:
        try:
            client.images.remove(t)
            removed.append(t)
        except docker.errors.DockerException:
            pass
    shown = [t for t in removed if ref_owner(t) is None]
    if shown:
        log(f"removed older {what}: {', '.join(shown)}")
    return removed
