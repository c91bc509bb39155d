"""One SSH connection per host for the SSH backend: connect through fabric/paramiko with the
hosts file's known-hosts policy, name every way it can fail, and run commands on channels.

Connection failures raise :class:`SshHostError` (a :class:`~clusters.errors.ClusterError`:
exit 4), whose message names the host (``user@host:port``) and the cause, mapped from
paramiko's and the socket layer's exceptions (:func:`describe_failure`): connection refused,
no route / no answer (unreachable), unknown host name, a host key missing from known_hosts,
a changed host key, authentication refused (a wrong key), a key file that cannot be used, no
sshd on the port. :meth:`SshSession.check_root` adds a missing or refusing ``sudo`` and a
non-root user without ``sudo``.
"""
from __future__ import annotations

import base64
import errno
import hashlib
import logging
import os
import socket
import threading
import time
from typing import IO

import fabric
import paramiko
from paramiko import ssh_exception as sshe

from clusters.errors import ClusterError
from clusters.ssh_hosts import HostSpec, expand_known_hosts

log = logging.getLogger(__name__)
# paramiko logs every connection and authentication at INFO; our messages name the hosts
logging.getLogger("paramiko").setLevel(logging.WARNING)

#: channels open at once per connection (OpenSSH's MaxSessions defaults to 10)
MAX_CHANNELS = 8
#: seconds a command's output may stay open after it exited (a background child holding it)
DRAIN_S = 1.0
#: the PATH of commands run on a host
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_KNOWN_HOSTS_LOCK = threading.Lock()


class SshHostError(ClusterError):
    """A host cannot be used: ``host`` (``user@host:port``) and ``cause`` (text). Exit 4."""

    def __init__(self, host: str, cause: str):
        super().__init__(f"ssh host {host}: {cause}")
        self.host, self.cause = host, cause


class SshCommandTimeout(TimeoutError):
    """A command did not finish within its time; its channel was closed."""


class UnknownHostKey(sshe.SSHException):
    """The server's host key is not in known_hosts (``host_key_policy = "reject"``)."""

    def __init__(self, hostname: str, key: paramiko.PKey):
        super().__init__(f"{hostname} not found in known_hosts")
        self.hostname, self.key = hostname, key


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:<base64>`` fingerprint of ``key``."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_name(host: str, port: int) -> str:
    """The known_hosts entry name: ``host``, or ``[host]:port`` off port 22 (as OpenSSH writes it)."""
    return host if port == 22 else f"[{host}]:{port}"


class _Reject(paramiko.MissingHostKeyPolicy):
    def missing_host_key(self, client, hostname, key):
        raise UnknownHostKey(hostname, key)


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """OpenSSH's ``StrictHostKeyChecking=accept-new``: trust an unknown key and append it to the
    known_hosts file (created, with its folder, when missing). A changed key still fails
    (paramiko raises ``BadHostKeyException`` before asking the policy)."""

    def __init__(self, path: str):
        self.path = path

    def missing_host_key(self, client, hostname, key):
        client.get_host_keys().add(hostname, key.get_name(), key)
        with _KNOWN_HOSTS_LOCK:
            os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        log.warning("added the %s host key of %s (%s) to %s", key.get_name(), hostname, fingerprint(key), self.path)


def describe_failure(e: BaseException, spec: HostSpec) -> str:
    """The cause of a failed connection to ``spec``'s host, in words, from paramiko's or the
    socket layer's exception ``e``."""
    kh = expand_known_hosts(spec)
    if isinstance(e, UnknownHostKey):
        return (f"its {e.key.get_name()} host key ({fingerprint(e.key)}) is not in known_hosts {kh} "
                f"(host_key_policy = \"reject\"): add it (ssh-keyscan -p {spec.port} {spec.host} >> {kh}, "
                "after checking the fingerprint) or set host_key_policy = \"accept-new\"")
    if isinstance(e, sshe.BadHostKeyException):
        return (f"its {e.key.get_name()} host key ({fingerprint(e.key)}) differs from the one in known_hosts {kh} "
                f"({fingerprint(e.expected_key)}): the host was reinstalled, or someone is in between; "
                "remove the old entry if the change is expected")
    if isinstance(e, sshe.BadAuthenticationType):
        return f"sshd does not take public keys for {spec.user} (it allows {', '.join(e.allowed_types) or 'nothing'})"
    if isinstance(e, sshe.PasswordRequiredException):
        return f"the key file {spec.key_file} is encrypted; decrypt it or load it in an ssh agent and drop key_file"
    if isinstance(e, sshe.AuthenticationException):
        with_what = f"key {spec.key_file}" if spec.key_file else "the ssh agent's and ~/.ssh's keys"
        return (f"authentication as {spec.user} failed with {with_what}: a wrong key, or its public key "
                f"is not in {spec.user}'s authorized_keys")
    if isinstance(e, sshe.NoValidConnectionsError):
        codes = {getattr(x, "errno", None) for x in e.errors.values()}
        if codes == {errno.ECONNREFUSED}:
            return f"connection refused on port {spec.port} (no sshd listening there)"
        first = next(iter(e.errors.values()))
        return describe_failure(first, spec)
    if isinstance(e, socket.gaierror):
        return f"unknown host name {spec.host!r} ({e.strerror or e})"
    if isinstance(e, (socket.timeout, TimeoutError)):
        return f"unreachable: no answer on port {spec.port} within {spec.connect_timeout_s:g} s"
    if isinstance(e, OSError) and e.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN):
        return f"unreachable: {os.strerror(e.errno).lower()}"
    if isinstance(e, OSError) and e.errno == errno.ECONNREFUSED:
        return f"connection refused on port {spec.port} (no sshd listening there)"
    if isinstance(e, sshe.SSHException) and "banner" in str(e).lower():
        return f"no SSH server answered on port {spec.port} ({e})"
    if isinstance(e, EOFError):
        return "the server closed the connection during the SSH handshake"
    if isinstance(e, sshe.SSHException):
        return f"SSH error: {e}"
    return f"cannot connect: {type(e).__name__}: {e}"


def load_key(spec: HostSpec) -> paramiko.PKey | None:
    """The private key of ``spec.key_file`` (None without one). Raises :class:`SshHostError`
    when it cannot be read or is not a private key paramiko knows."""
    if spec.key_file is None:
        return None
    try:
        return paramiko.PKey.from_path(spec.key_file)
    except sshe.PasswordRequiredException as e:
        raise SshHostError(spec.label, describe_failure(e, spec)) from None
    except (OSError, sshe.SSHException, ValueError) as e:
        raise SshHostError(spec.label, f"the key file {spec.key_file} cannot be used: {e}") from None


class SshSession:
    """The connection to one host (``spec``): opened by :meth:`connect`, reopened once when it
    dropped; at most :data:`MAX_CHANNELS` commands at once. Thread-safe."""

    def __init__(self, spec: HostSpec):
        self.spec = spec
        self.label = spec.label
        self._conn: fabric.Connection | None = None
        self._lock = threading.Lock()
        self._channels = threading.BoundedSemaphore(MAX_CHANNELS)
        #: whether a connection was ever opened (so there may be something to tear down)
        self.connected_once = False

    def connect(self) -> None:
        """Open the connection. Raises :class:`SshHostError` naming the cause."""
        with self._lock:
            self._open()

    def _open(self) -> None:
        spec = self.spec
        pkey = load_key(spec)
        kwargs = {"banner_timeout": spec.connect_timeout_s, "auth_timeout": spec.connect_timeout_s}
        kwargs.update({"pkey": pkey, "look_for_keys": False, "allow_agent": False} if pkey else {})
        conn = fabric.Connection(spec.host, user=spec.user, port=spec.port, connect_timeout=spec.connect_timeout_s,
                                 config=fabric.Config(ssh_config=paramiko.SSHConfig()), connect_kwargs=kwargs)
        kh = expand_known_hosts(spec)
        if os.path.isfile(kh):
            try:
                conn.client.get_host_keys().load(kh)
            except (OSError, sshe.SSHException, ValueError) as e:
                raise SshHostError(self.label, f"known_hosts {kh} cannot be read: {e}") from None
        conn.client.set_missing_host_key_policy(_AcceptNew(kh) if spec.host_key_policy == "accept-new" else _Reject())
        try:
            conn.open()
        except Exception as e:  # noqa: BLE001 - every cause is named
            conn.close()
            raise SshHostError(self.label, describe_failure(e, spec)) from e
        conn.transport.set_keepalive(5)
        self._conn = conn
        self.connected_once = True

    def _transport(self) -> paramiko.Transport:
        with self._lock:
            if self._conn is None or not self._conn.is_connected:
                if self._conn is not None:
                    log.warning("ssh host %s: connection lost; reconnecting", self.label)
                self._open()
            return self._conn.transport

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def run(self, command: str, *, stdin: bytes | None = None, timeout_s: float | None = 60.0,
            stdout: IO[bytes] | None = None) -> tuple[int, bytes, bytes]:
        """Run ``command`` (a shell command line, run by the user's login shell) and wait for it.

        ``stdin``: bytes sent, then EOF. ``stdout``: a binary file its output is written to
        (then ``b""`` is returned for it). Returns ``(exit status, stdout, stderr)``; the status is
        -1 when the command died of a signal. Raises :class:`SshCommandTimeout` after
        ``timeout_s`` s (None: no bound), :class:`SshHostError` when the host cannot be reached,
        ``paramiko.SSHException`` when the connection breaks meanwhile.
        """
        with self._channels:
            chan = self._open_channel()
            try:
                return self._exchange(chan, command, stdin, timeout_s, stdout)
            finally:
                chan.close()

    def _open_channel(self) -> paramiko.Channel:
        deadline = time.monotonic() + 10.0
        while True:
            try:
                return self._transport().open_session(timeout=self.spec.connect_timeout_s)
            except sshe.ChannelException as e:      # sshd's MaxSessions / MaxStartups
                if time.monotonic() > deadline:
                    raise SshHostError(self.label, f"sshd refuses new sessions: {e}") from None
                time.sleep(0.1)
            except (sshe.SSHException, EOFError, OSError) as e:
                self.close()
                if time.monotonic() > deadline:
                    raise SshHostError(self.label, f"cannot open a session: {describe_failure(e, self.spec)}") from e
                time.sleep(0.2)

    @staticmethod
    def _exchange(chan: paramiko.Channel, command: str, stdin: bytes | None, timeout_s: float | None,
                  stdout: IO[bytes] | None) -> tuple[int, bytes, bytes]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        chan.exec_command(command)
        if stdin:
            chan.sendall(stdin)
        chan.shutdown_write()
        chan.settimeout(0.05)
        out, err = bytearray(), bytearray()
        eof, exited_at = False, None
        while True:
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(65536)
            got = False
            if not eof:
                try:
                    data = chan.recv(65536)
                except socket.timeout:
                    data = None
                if data == b"":
                    eof = True
                elif data:
                    got = True
                    stdout.write(data) if stdout is not None else out.extend(data)
            now = time.monotonic()
            if chan.exit_status_ready():
                exited_at = exited_at or now
                if (eof and not chan.recv_stderr_ready()) or now - exited_at > DRAIN_S:
                    break
            if deadline is not None and now > deadline:
                raise SshCommandTimeout(f"no exit within {timeout_s:g} s")
            if eof and not got:
                time.sleep(0.01)
        while chan.recv_stderr_ready():
            err += chan.recv_stderr(65536)
        return chan.recv_exit_status(), bytes(out), bytes(err)

    # -- checks -----------------------------------------------------------------

    def check_root(self) -> None:
        """Make sure commands can run as root: ``sudo -n true`` with ``sudo = true``, else the
        user must be root. Raises :class:`SshHostError` naming the cause (sudo missing, a
        password asked, the user not allowed; a non-root user without ``sudo``)."""
        spec = self.spec
        if spec.sudo:
            code, out, err = self.run("sudo -n true", timeout_s=30.0)
            text = err.decode(errors="replace").strip()
            if code == 127 or "not found" in text:
                raise SshHostError(self.label, "sudo = true, but sudo is not installed on the host")
            if code != 0:
                why = ("sudo asks for a password (allow NOPASSWD for this user)" if "password" in text
                       else f"sudo refuses: {text[-300:] or f'exit {code}'}")
                raise SshHostError(self.label, f"{spec.user} cannot run commands as root without a password: {why}")
            return
        code, out, _ = self.run("id -u", timeout_s=30.0)
        if out.strip() != b"0":
            raise SshHostError(self.label, f"{spec.user} is not root and sudo = false: the ssh backend needs "
                                           "root on the hosts (iptables, namespaces); set sudo = true or "
                                           "log in as root")
