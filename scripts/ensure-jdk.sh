#!/usr/bin/env bash
# Make sure a Java compiler >= 17 is there: the Java client of --db kafka (--client java) is
# compiled at set-up against the release's kafka-clients (targets/kafka/java_build.py).
#
# Quiet and exit 0 when `javac` ($JAVA_HOME/bin/javac when JAVA_HOME is set, else the one
# on PATH) reports major version >= 17. Otherwise, as root on Debian: install
# openjdk-17-jdk-headless with apt-get (running `apt-get update` first only when apt does
# not know the package yet). Exits non-zero with a message naming what is missing when
# that is not possible.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # apt_get: waits for the package manager's lock

MIN_MAJOR=17
PKG=openjdk-17-jdk-headless

die() { echo "ensure-jdk: $*" >&2; exit 1; }

# "javac 17.0.15" -> 17, "javac 1.8.0_402" -> 8; empty when it does not run
javac_major() {
    local v
    v=$("$1" -version 2>&1 | awk '/^javac/ { print $2; exit }') || return 0
    case "$v" in
        1.*) v=${v#1.} ;;
    esac
    echo "${v%%[!0-9]*}"
}

javac_ok() {
    local major
    major=$(javac_major "$1")
    [ -n "$major" ] && [ "$major" -ge "$MIN_MAJOR" ]
}

if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    javac_ok "$JAVA_HOME/bin/javac" && exit 0
    die "JAVA_HOME is $JAVA_HOME and its javac is Java $(javac_major "$JAVA_HOME/bin/javac"); the Java client needs javac >= $MIN_MAJOR. Point JAVA_HOME at a JDK >= $MIN_MAJOR or unset it."
fi
command -v javac >/dev/null 2>&1 && javac_ok javac && exit 0

[ "$(id -u)" = 0 ] || die "no javac >= $MIN_MAJOR and installing one needs root: apt-get install -y $PKG"
command -v apt-get >/dev/null 2>&1 || die "no javac >= $MIN_MAJOR and there is no apt-get: install a JDK >= $MIN_MAJOR by hand"
if ! apt-cache show "$PKG" >/dev/null 2>&1; then
    apt_get update -qq || die "apt-get update failed"
fi
echo "ensure-jdk: installing $PKG (javac, for the Java client) ..." >&2
NEEDRESTART_SUSPEND=1 apt_get install -y -qq --no-install-recommends "$PKG" >/dev/null \
    || die "apt-get install $PKG failed"
hash -r
command -v javac >/dev/null 2>&1 && javac_ok javac && exit 0
jdk=$(ls -d /usr/lib/jvm/java-17-openjdk-*/bin/javac 2>/dev/null | head -n 1)
die "$PKG is installed${jdk:+ ($jdk)} but javac on PATH is not Java >= $MIN_MAJOR: put its bin/ first on PATH or select it with update-alternatives --set javac ${jdk:-/usr/lib/jvm/java-17-openjdk-<arch>/bin/javac}"
