#!/usr/bin/env bash
# Make sure the SSH backend's tests can make real SSH hosts here (tests/sshd_hosts.py):
# Debian's sshd (openssh-server) and ssh-keygen (openssh-client), and sudo (the tests check a
# user that may not use it).
#
# Quiet and exit 0 when /usr/sbin/sshd, ssh-keygen and sudo are present. Otherwise, as root on
# Debian: install openssh-server and sudo with apt-get (running `apt-get update` first only
# when apt does not know them yet) and check again. Installing openssh-server does not start
# a system sshd here (no systemd in containers; the tests start their own, in namespaces).
# Idempotent. Without root or apt-get it only warns: the ssh tests skip with the reason.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # apt_get: waits for the package manager's lock

PKGS=(openssh-server sudo)

warn() { echo "ensure-sshd: warning: $*" >&2; exit 0; }

have() { [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null 2>&1 && command -v sudo >/dev/null 2>&1; }

have && exit 0
[ "$(id -u)" -eq 0 ] || warn "sshd, ssh-keygen or sudo is missing and this script is not root; the ssh backend's tests will skip (sudo apt-get install ${PKGS[*]})"
command -v apt-get >/dev/null 2>&1 || warn "sshd, ssh-keygen or sudo is missing and apt-get is not available; the ssh backend's tests will skip"
if ! apt-cache show openssh-server >/dev/null 2>&1; then
    apt_get update -qq >/dev/null || warn "apt-get update failed; install ${PKGS[*]} by hand"
fi
echo "ensure-sshd: installing ${PKGS[*]} ..." >&2
apt_get install -y -qq "${PKGS[@]}" >/dev/null || warn "apt-get install ${PKGS[*]} failed; install them by hand"
have || warn "installed ${PKGS[*]} but sshd, ssh-keygen or sudo is still missing"
exit 0
