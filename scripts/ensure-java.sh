#!/usr/bin/env bash
# Make sure a Java runtime >= 17 is there for Spark (PySpark 4 needs Java 17+).
#
# Quiet and exit 0 when the java Spark will use already reports major version
# >= 17: $JAVA_HOME/bin/java when JAVA_HOME is set (Spark prefers it), else
# `java` on PATH. Otherwise, as root on Debian: install openjdk-17-jre-headless
# with apt-get (running `apt-get update` first only when apt does not know the
# package yet) and check again. Exports nothing. Exits non-zero with a message
# naming what is missing when that is not possible.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # apt_get: waits for the package manager's lock

MIN_MAJOR=17
PKG=openjdk-17-jre-headless

die() { echo "ensure-java: $*" >&2; exit 1; }

# The major version `$1 -version` reports ("1.8.0_402" -> 8, "17.0.15" -> 17,
# "21-ea" -> 21); empty when it does not run.
java_major() {
    local v
    v=$("$1" -version 2>&1 | awk -F'"' '/version/ { print $2; exit }') || return 0
    case "$v" in
        1.*) v=${v#1.} ;;
    esac
    v=${v%%[!0-9]*}
    echo "$v"
}

# Check JAVA_HOME first: Spark runs $JAVA_HOME/bin/java whenever JAVA_HOME is
# set, whatever PATH says, and this script cannot change the caller's JAVA_HOME.
if [ -n "${JAVA_HOME:-}" ]; then
    major=$(java_major "$JAVA_HOME/bin/java")
    if [ -n "$major" ] && [ "$major" -ge "$MIN_MAJOR" ]; then
        exit 0
    fi
    if [ -n "$major" ]; then what="is Java $major"; else what="does not run"; fi
    die "JAVA_HOME is $JAVA_HOME and Spark runs \$JAVA_HOME/bin/java, which $what; Spark needs Java >= $MIN_MAJOR. Point JAVA_HOME at a Java >= $MIN_MAJOR (e.g. /usr/lib/jvm/java-17-openjdk-amd64 after: apt-get install $PKG) or unset it."
fi

java_ok() {
    local major
    command -v java >/dev/null 2>&1 || return 1
    major=$(java_major java)
    [ -n "$major" ] && [ "$major" -ge "$MIN_MAJOR" ]
}

if java_ok; then
    exit 0
fi

if command -v java >/dev/null 2>&1; then
    found="java on PATH ($(command -v java)) is Java $(java_major java)"
else
    found="no java on PATH"
fi

if [ "$(id -u)" -ne 0 ]; then
    die "$found; Spark needs a Java runtime >= $MIN_MAJOR and this script is not running as root, so it cannot install one. Install $PKG (sudo apt-get install $PKG, or run: sudo $0) or put a Java >= $MIN_MAJOR on PATH."
fi
command -v apt-get >/dev/null 2>&1 || die "$found; Spark needs a Java runtime >= $MIN_MAJOR and apt-get is not available (this script supports Debian/Ubuntu). Install a Java >= $MIN_MAJOR by hand and put it on PATH."

if [ "$(dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null)" != "install ok installed" ]; then
    echo "ensure-java: $found; installing $PKG for Spark ..." >&2
    export NEEDRESTART_SUSPEND=1
    apt_log=$(mktemp)
    trap 'rm -f "$apt_log"' EXIT
    apt_update() {
        apt_get update -qq >"$apt_log" 2>&1 || die "apt-get update failed; check the network / apt sources, then install $PKG by hand (apt-get install $PKG):
$(tail -n 20 "$apt_log")"
    }
    apt_install() { apt_get install -y -qq --no-install-recommends "$PKG" >"$apt_log" 2>&1; }
    # Update the package lists only when apt does not know the package, or
    # when installing from the lists it has fails (stale lists).
    candidate=$(apt-cache policy "$PKG" 2>/dev/null | awk '/Candidate:/ { print $2; exit }')
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
        apt_update
        apt_install
    else
        apt_install || { apt_update; apt_install; }
    fi || die "apt-get install $PKG failed; install it by hand (apt-get install $PKG):
$(tail -n 20 "$apt_log")"
fi
hash -r

java_ok && exit 0

# Installed (now or before), but `java` on PATH is still another one (an
# older Java earlier on PATH, or the java alternative set by hand).
jre=$(ls -d /usr/lib/jvm/java-17-openjdk-*/bin/java 2>/dev/null | head -n 1)
if command -v java >/dev/null 2>&1; then
    found="java on PATH ($(command -v java)) is still Java $(java_major java)"
else
    found="still no java on PATH"
fi
die "$PKG is installed${jre:+ ($jre)} but $found. Select it with: update-alternatives --set java ${jre:-/usr/lib/jvm/java-17-openjdk-<arch>/bin/java}, or put its bin/ first on PATH."
