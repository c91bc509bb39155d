"""Real SSH hosts for the SSH backend's tests: Debian's sshd, one per network namespace that
the test makes on this machine (root), with keys and a known_hosts the test generates.

Host ``i`` (1-based) is the namespace ``kcssh-<tag>-h<i>``, whose ``eth0`` is one end of a veth
pair on the bridge ``kshb<tag>`` (address ``10.89.<x>.1`` on this machine), at
``10.89.<x>.<10+i>``; its sshd listens on port 22 there. sshd runs in a mount namespace of its
own whose ``/etc/passwd`` also names the user :data:`NOSUDO` (not root, not in sudoers), so
nothing is added to this machine's users. Keys: ``key`` (authorized for root and
:data:`NOSUDO`), ``wrong_key`` (authorized for no one), one host key per host, in
``known_hosts``. :meth:`SshdHosts.close` removes everything (processes in the namespaces, the
namespaces, links, the FORWARD rule, the folder). Two sets of hosts on one subnet would answer
for each other's addresses, so a set holds the subnet's lock file
(``/tmp/kcssh-<net>.<x>.lock``) from set-up to close: another test run on this machine that
wants the same subnet waits for it, rather than meeting the other run's host keys. A subnet
that an address of this machine is already on, with no lock held (hosts a killed run left
behind: not ours to remove), is passed over for the next free ``<x>``.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

SSHD = "/usr/sbin/sshd"
NOSUDO = "kcnosudo"
NOSUDO_UID = 64123


def sshd_skip_reason() -> str | None:
    """Why real sshd hosts cannot be made here (not root, no sshd, ssh-keygen or ip), or None."""
    if os.geteuid() != 0:
        return "the sshd test hosts need root (network namespaces)"
    for tool in (SSHD, "ssh-keygen", "ip", "iptables", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (apt-get install openssh-server; scripts/ensure-sshd.sh)"
    return None


def _sh(*argv: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, input=input)


class SshdHosts:
    """``n`` sshd hosts on ``<net>.<third>.0/24`` (``net``: the first two octets, default
    ``10.89``; see the module's docstring); ``dir`` holds the keys, configs and logs. Use as a
    context manager."""

    def __init__(self, n: int, third: int, net: str = "10.89"):
        self.tag = uuid.uuid4().hex[:6]
        self.n, self.net = n, net
        self._place(third)
        self.namespaces = [f"kcssh-{self.tag}-h{i}" for i in range(1, n + 1)]
        self.bridge = f"kshb{self.tag}"
        self.comment = f"kcssh-test:{self.tag}"
        self.dir = Path(tempfile.mkdtemp(prefix="kc-sshd-"))
        self.dir.chmod(0o755)     # NOSUDO's sshd reads its authorized_keys as that user
        self.key, self.wrong_key = self.dir / "key", self.dir / "wrong_key"
        self.known_hosts = self.dir / "known_hosts"
        self.procs: list[subprocess.Popen] = []
        self._subnet_lock = None

    def _place(self, third: int) -> None:
        self.third = third
        self.gateway = f"{self.net}.{third}.1"
        self.ips = [f"{self.net}.{third}.{10 + i}" for i in range(1, self.n + 1)]

    def _take_subnet(self) -> None:
        """Hold the lock of the first subnet from ``third`` on that no address of this machine
        is on (waiting while another run holds it); :meth:`_place` the hosts there."""
        third = self.third
        for _ in range(250):
            lock = open(f"/tmp/kcssh-{self.net}.{third}.lock", "w")
            fcntl.flock(lock, fcntl.LOCK_EX)     # waits while another run has the subnet
            taken = _sh("ip", "-o", "-4", "addr", "show", "to", f"{self.net}.{third}.0/24", check=False).stdout
            for iface in {line.split()[1] for line in taken.splitlines() if line.strip()}:
                if iface.startswith("kshb"):     # we hold the lock: its owner died (SIGKILL)
                    remove_hosts(iface[len("kshb"):])
            taken = _sh("ip", "-o", "-4", "addr", "show", "to", f"{self.net}.{third}.0/24", check=False).stdout
            if not taken.strip():
                self._subnet_lock = lock
                self._place(third)
                return
            lock.close()                         # another user of these addresses: the next subnet
            third = third % 250 + 1
        raise RuntimeError(f"no free {self.net}.x.0/24 subnet for the sshd test hosts")

    def __enter__(self) -> "SshdHosts":
        try:
            self._take_subnet()
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _keygen(self, path: Path) -> str:
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path))
        return Path(f"{path}.pub").read_text().strip()

    def _start(self) -> None:
        d = self.dir
        pub = self._keygen(self.key)
        self._keygen(self.wrong_key)
        auth = d / "auth"
        auth.mkdir(mode=0o755)
        for user in ("root", NOSUDO):
            (auth / user).write_text(pub + "\n")
            (auth / user).chmod(0o644)
        # root's login shell is sh there: this machine's ~/.bashrc (pyenv) costs 0.3 s a command
        users = [":".join([*u.split(":")[:6], "/bin/sh"]) if u.startswith("root:") else u
                 for u in Path("/etc/passwd").read_text().splitlines()]
        (d / "passwd").write_text("\n".join(users) + f"\n{NOSUDO}:x:{NOSUDO_UID}:{NOSUDO_UID}:kraft-chaos test:/tmp:/bin/sh\n")
        (d / "group").write_text(Path("/etc/group").read_text() + f"{NOSUDO}:x:{NOSUDO_UID}:\n")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)    # sshd's privilege separation folder
        lines = [f"link add {self.bridge} type bridge", f"addr add {self.gateway}/24 dev {self.bridge}",
                 f"link set {self.bridge} up"]
        for i, ns in enumerate(self.namespaces, start=1):
            veth = f"kshv{self.tag}{i}"
            lines += [f"netns add {ns}", f"link add {veth} type veth peer name eth0 netns {ns}",
                      f"link set {veth} master {self.bridge} up"]
        _sh("ip", "-batch", "-", input="\n".join(lines) + "\n")
        _sh("iptables", "-w", "-I", "FORWARD", "1", *self._forward_rule())
        known = []
        for i, (ns, ip) in enumerate(zip(self.namespaces, self.ips), start=1):
            for cmd in ("ip link set lo up", f"ip addr add {ip}/24 dev eth0", "ip link set eth0 up",
                        f"ip route add default via {self.gateway}"):
                _sh("ip", "netns", "exec", ns, *cmd.split())
            host_key = d / f"host{i}"
            host_pub = self._keygen(host_key)
            known.append(f"{ip} {' '.join(host_pub.split()[:2])}")
            cfg = d / f"sshd{i}.conf"
            cfg.write_text("\n".join([
                "Port 22", f"ListenAddress {ip}", f"HostKey {host_key}", "PidFile none",
                f"AuthorizedKeysFile {auth}/%u", "StrictModes no", "UsePAM no", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password", "PubkeyAuthentication yes",
                "MaxSessions 30", "MaxStartups 100", "LogLevel ERROR", "Subsystem sftp internal-sftp", ""]))
            log = open(d / f"sshd{i}.log", "wb")
            script = (f"mount --bind {d}/passwd /etc/passwd && mount --bind {d}/group /etc/group && "
                      f"exec {SSHD} -D -e -f {cfg}")
            self.procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c", script], stdin=subprocess.DEVNULL,
                                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            log.close()
        self.known_hosts.write_text("\n".join(known) + "\n")
        for i, ip in enumerate(self.ips, start=1):
            self._wait_port(ip, 22, i)

    def _wait_port(self, ip: str, port: int, i: int) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection((ip, port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd {i} did not listen on {ip}:{port}: {(self.dir / f'sshd{i}.log').read_text()}")

    def _forward_rule(self) -> list[str]:
        return ["-i", self.bridge, "-o", self.bridge, "-m", "comment", "--comment", self.comment, "-j", "ACCEPT"]

    def hosts_toml(self, name: str = "hosts.toml", hosts: list[dict] | None = None, **defaults) -> Path:
        """Write a hosts file: ``[defaults]`` (``key_file`` and ``known_hosts`` of this set,
        then ``defaults``) and one ``[[hosts]]`` per host (or ``hosts``' tables). Its path."""
        import tomli_w
        base = {"user": "root", "key_file": str(self.key), "known_hosts": str(self.known_hosts),
                "connect_timeout_s": 5, **defaults}
        doc = {"defaults": base, "hosts": hosts if hosts is not None else [{"host": ip} for ip in self.ips]}
        path = self.dir / name
        path.write_text(tomli_w.dumps(doc))
        return path

    def bind_in_host(self, i: int, src: str | Path, dest: str) -> None:
        """Bind ``src`` over ``dest`` in host ``i``'s (1-based) mount namespace, for the commands
        its sshd runs from now on (e.g. a folder with a fake ``java`` over ``/usr/local/bin``)."""
        _sh("nsenter", "-t", str(self.procs[i - 1].pid), "-m", "mount", "--bind", str(src), dest)

    def ns_exec(self, i: int, *argv: str) -> str:
        """stdout of ``argv`` run in host ``i``'s (1-based) network namespace."""
        return _sh("ip", "netns", "exec", self.namespaces[i - 1], *argv).stdout

    def leftovers(self, run_dir: str, settle_s: float = 10.0) -> list[str]:
        """What a kraft-chaos run left on these hosts: the run dir, ``KC-*`` iptables chains in
        each host, processes in the namespaces other than sshd (a node's init or process).

        A killed process leaves the namespace a moment after the kill returns (its command line
        empty while it exits; a zombie until reaped, which is no leftover): while only such
        processes remain, look again, for up to ``settle_s`` seconds."""
        deadline = time.monotonic() + settle_s
        while True:
            found, exiting = self._leftovers(run_dir)
            if not exiting or time.monotonic() >= deadline:
                return found + exiting
            time.sleep(0.2)

    def _leftovers(self, run_dir: str) -> tuple[list[str], list[str]]:
        """``(leftovers, processes exiting)``: see :meth:`leftovers`."""
        found = [f"folder {run_dir}"] if os.path.exists(run_dir) else []
        exiting = []
        for i, ns in enumerate(self.namespaces, start=1):
            found += [f"h{i} iptables {line}" for line in self.ns_exec(i, "iptables", "-S").splitlines() if "KC-" in line]
            for pid in _sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except (OSError, IndexError):
                    continue
                if state in ("Z", "X"):
                    continue                    # dead, awaiting its parent's wait()
                if not cmd.strip():
                    exiting.append(f"h{i} process {pid}: (exiting)")
                elif "sshd" not in cmd:
                    found.append(f"h{i} process {pid}: {cmd.strip()}")
        return found, exiting

    def close(self) -> None:
        """Kill every process in the namespaces; remove the namespaces, bridge, FORWARD rule
        and folder. Idempotent."""
        for p in self.procs:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:  # noqa: BLE001
                pass
        self.procs.clear()
        remove_hosts(self.tag)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._subnet_lock is not None:
            self._subnet_lock.close()         # releases the subnet for another run
            self._subnet_lock = None


def remove_hosts(tag: str) -> None:
    """Kill every process in the namespaces ``kcssh-<tag>-h*`` and remove them, the bridge
    ``kshb<tag>`` and the FORWARD rules commented ``kcssh-test:<tag>``: those of this run's
    :class:`SshdHosts`, or the leftovers of one whose process was killed. Idempotent."""
    namespaces = [ns.split()[0] for ns in _sh("ip", "netns", "list", check=False).stdout.splitlines()
                  if ns.startswith(f"kcssh-{tag}-h")]
    for ns in namespaces:
        for pid in _sh("ip", "netns", "pids", ns, check=False).stdout.split():
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
    for ns in namespaces:
        _sh("ip", "netns", "del", ns, check=False)
    _sh("ip", "link", "del", f"kshb{tag}", check=False)
    for rule in _sh("iptables", "-w", "-S", "FORWARD", check=False).stdout.splitlines():
        if f"kcssh-test:{tag}" in rule:
            _sh("iptables", "-w", *shlex.split(rule.replace("-A", "-D", 1)), check=False)


def fingerprint_of(pub_line: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key line (``type base64 [comment]``)."""
    import base64
    raw = base64.b64decode(pub_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
