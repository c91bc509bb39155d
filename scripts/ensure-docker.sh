#!/usr/bin/env bash
# Make sure a Docker engine answers, installing and starting one if needed.
#
# Quiet and exit 0 when `docker info` already answers. Otherwise, as root on
# Debian: install docker.io (dockerd, containerd, runc, docker-init) and the
# tools the base image build and the nemeses use (debootstrap, iptables,
# iproute2), start dockerd in the background (log: /var/log/kraft-chaos-dockerd.log;
# it inherits no descriptor of the caller's but that log)
# and wait up to 60 s for it. Exits non-zero with a message naming what is
# missing when that is not possible.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # apt_get: waits for the package manager's lock

LOG=/var/log/kraft-chaos-dockerd.log
WAIT_S=${KRAFT_CHAOS_DOCKERD_WAIT_S:-60}

die() { echo "ensure-docker: $*" >&2; exit 1; }

engine_up() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_up; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    die "no Docker engine answers and this script is not running as root, so it cannot install or start one. Start dockerd yourself (or run: sudo $0), or set DOCKER_HOST to a running engine."
fi

missing_pkgs=()
command -v dockerd >/dev/null 2>&1 || missing_pkgs+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing_pkgs+=(debootstrap)
command -v iptables >/dev/null 2>&1 || missing_pkgs+=(iptables)
command -v ip >/dev/null 2>&1 || missing_pkgs+=(iproute2)
if [ ${#missing_pkgs[@]} -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing_pkgs[*]} and apt-get is not available (this script supports Debian/Ubuntu). Install them by hand."
    echo "ensure-docker: installing ${missing_pkgs[*]} ..." >&2
    apt_get update -qq >/dev/null || die "apt-get update failed; check the network / apt sources, then install ${missing_pkgs[*]} by hand."
    apt_get install -y -qq "${missing_pkgs[@]}" >/dev/null || die "apt-get install ${missing_pkgs[*]} failed; install them by hand."
fi

command -v docker >/dev/null 2>&1 || die "dockerd is installed but no docker client is on PATH; install docker.io or docker-ce-cli."

if ! pgrep -x dockerd >/dev/null 2>&1; then
    echo "ensure-docker: starting dockerd (log: $LOG) ..." >&2
    # dockerd outlives this script: it must inherit no descriptor but its log, or it holds
    # whatever the caller had open for as long as it runs (a `flock FILE make run` would keep
    # FILE locked until the engine stops, and every later flock on it would wait for ever)
    (
        for fd in /proc/self/fd/*; do
            n=${fd##*/}
            [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-" 2>/dev/null
        done
        exec setsid dockerd >>"$LOG" 2>&1 </dev/null
    ) &
    disown || true
fi

for _ in $(seq 1 "$WAIT_S"); do
    engine_up && exit 0
    sleep 1
done

die "dockerd did not answer within ${WAIT_S} s. See the end of $LOG:
$(tail -n 20 "$LOG" 2>/dev/null)"
