#!/usr/bin/env bash
# Make sure Maven is there to resolve Apache Kafka's jars (--db kafka; targets/kafka/jars.py).
#
# Quiet and exit 0 when `mvn` is on PATH. Otherwise, as root on Debian: install
# Debian's maven package with apt-get (running `apt-get update` first only when apt
# does not know the package yet). Exits non-zero with a message naming what is
# missing when that is not possible.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # apt_get: waits for the package manager's lock

die() { echo "ensure-maven: $*" >&2; exit 1; }

command -v mvn >/dev/null 2>&1 && exit 0
[ "$(id -u)" = 0 ] || die "mvn is not installed and installing it needs root: apt-get install -y maven"
command -v apt-get >/dev/null 2>&1 || die "mvn is not installed and there is no apt-get: install Maven 3 by hand"
if ! apt-cache show maven >/dev/null 2>&1; then
    apt_get update -qq || die "apt-get update failed"
fi
echo "ensure-maven: installing Debian's maven ..." >&2
apt_get install -y -qq maven >/dev/null || die "apt-get install maven failed"
command -v mvn >/dev/null 2>&1 || die "maven installed but mvn is not on PATH"
