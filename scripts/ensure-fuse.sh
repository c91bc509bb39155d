#!/usr/bin/env bash
# Make sure FUSE 3 works here for the lazyfs power-loss filesystem (clusters/lazyfs/).
#
# Quiet and exit 0 when fusermount3, libfuse3's headers (pyfuse3 builds against
# them through pkg-config) and a usable /dev/fuse are all present. Otherwise, as
# root on Debian: install fuse3, libfuse3-dev and pkg-config with apt-get
# (running `apt-get update` first only when apt does not know them yet), load
# the fuse module if /dev/fuse is missing, create the device node if the module
# is there but the node is not, and check again. Idempotent. Exits non-zero with
# a message naming what is missing when the packages cannot be installed; a
# missing /dev/fuse is only a warning (pyfuse3 still builds; the lazyfs tests
# skip) unless KRAFT_CHAOS_REQUIRE_FUSE=1.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # apt_get: waits for the package manager's lock

PKGS=(fuse3 libfuse3-dev pkg-config)

die() { echo "ensure-fuse: $*" >&2; exit 1; }

have_pkgs() {
    command -v fusermount3 >/dev/null 2>&1 \
        && command -v pkg-config >/dev/null 2>&1 \
        && pkg-config --exists fuse3 2>/dev/null
}

dev_ok() { [ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ]; }

if have_pkgs && dev_ok; then
    exit 0
fi

if ! have_pkgs; then
    [ "$(id -u)" -eq 0 ] || die "fuse3/libfuse3-dev/pkg-config are missing and this script is not root; run: sudo apt-get install ${PKGS[*]}"
    command -v apt-get >/dev/null 2>&1 || die "missing ${PKGS[*]} and apt-get is not available (this script supports Debian/Ubuntu); install them by hand."
    if ! apt-cache show libfuse3-dev >/dev/null 2>&1; then
        apt_get update -qq >/dev/null || die "apt-get update failed; check the apt sources, then install ${PKGS[*]} by hand."
    fi
    echo "ensure-fuse: installing ${PKGS[*]} ..." >&2
    apt_get install -y -qq "${PKGS[@]}" >/dev/null || die "apt-get install ${PKGS[*]} failed; install them by hand."
    have_pkgs || die "installed ${PKGS[*]} but fusermount3 or the fuse3 pkg-config entry is still missing."
fi

if ! dev_ok; then
    grep -qw fuse /proc/filesystems 2>/dev/null || modprobe fuse 2>/dev/null || true
    if [ ! -e /dev/fuse ] && grep -qw fuse /proc/filesystems 2>/dev/null; then
        mknod -m 0666 /dev/fuse c 10 229 2>/dev/null || true
    fi
    if ! dev_ok; then
        msg="/dev/fuse is missing or not read/writable (kernel without FUSE, or a container without --device /dev/fuse): the power-loss fault cannot run and the lazyfs tests are skipped"
        [ "${KRAFT_CHAOS_REQUIRE_FUSE:-0}" = 1 ] && die "$msg"
        echo "ensure-fuse: warning: $msg" >&2
    fi
fi
exit 0
