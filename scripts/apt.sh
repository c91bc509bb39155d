# apt-get that waits its turn for the package manager. Sourced by scripts/ensure-*.sh:
#
#     . "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
#     apt_get update -qq
#     apt_get install -y -qq PKG...
#
# apt and dpkg let one process at a time change the system, through fcntl locks on
# /var/lib/dpkg/lock-frontend and /var/lib/dpkg/lock (install, remove), /var/lib/apt/lists/lock
# (update) and /var/cache/apt/archives/lock (downloads). Another apt at the same time (a second
# `make`, or the apt a fresh cloud machine runs at boot: cloud-init, unattended-upgrades) makes
# a plain apt-get fail at once with "Could not get lock ...". apt_get waits instead: apt's own
# DPkg::Lock::Timeout covers the two dpkg locks; the lists and archives locks have no timeout
# in apt (apt 2.6, Debian bookworm: pkgAcquire::GetLock takes them once), so a run that fails
# for a lock held by another process is started again, every second, until the deadline.
#
# apt_get runs `apt-get "$@"` with DEBIAN_FRONTEND=noninteractive and LC_ALL=C (apt's
# messages in English, as the lock check reads them) and returns its exit status. Its
# stdout goes where the caller sends it; its stderr too, once apt-get has finished (the
# last run's only). While it waits it says so once on the stderr the script had when it
# sourced this file, even when the call's output goes to a log: a descriptor kept open for
# that, _APT_NOTE_FD, which apt-get does not inherit and a script closes for any daemon it
# starts afterwards (ensure-docker.sh closes every inherited descriptor for dockerd), so that no
# process outlives the script holding its stderr.
#
# KRAFT_CHAOS_APT_LOCK_WAIT_S: how long to wait in all, s (default 600: a boot-time upgrade
# of a fresh machine can take minutes). 0: fail at once, as plain apt-get does.

APT_LOCK_WAIT_S=${KRAFT_CHAOS_APT_LOCK_WAIT_S:-600}
case "$APT_LOCK_WAIT_S" in
    ''|*[!0-9]*) echo "apt.sh: KRAFT_CHAOS_APT_LOCK_WAIT_S must be a whole number of seconds, got '$APT_LOCK_WAIT_S'" >&2
                 exit 3 ;;
esac

# the stderr of the script that sourced this file: where the waiting note goes
exec {_APT_NOTE_FD}>&2

apt_get() {
    local deadline=$((SECONDS + APT_LOCK_WAIT_S)) err rc wait_s=0 noted=0
    err=$(mktemp) || return 1
    while :; do
        DEBIAN_FRONTEND=noninteractive LC_ALL=C \
            apt-get -o "DPkg::Lock::Timeout=$wait_s" "$@" 2>"$err" {_APT_NOTE_FD}>&-
        rc=$?
        if [ "$rc" -eq 0 ] || ! grep -q "Could not get lock" "$err"; then
            break
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            [ "$noted" = 0 ] || echo "apt: gave up after ${APT_LOCK_WAIT_S} s waiting for the package manager's lock (KRAFT_CHAOS_APT_LOCK_WAIT_S)" >&"$_APT_NOTE_FD"
            break
        fi
        if [ "$noted" = 0 ]; then
            echo "apt: waiting up to ${APT_LOCK_WAIT_S} s for another package manager to finish: $(grep -m 1 -o 'Could not get lock.*' "$err")" >&"$_APT_NOTE_FD"
            noted=1
        fi
        # apt waits for the dpkg locks itself (polling each second), up to what is left;
        # a lists or archives lock fails at once, hence the pause
        sleep 1
        wait_s=$((deadline - SECONDS))
        [ "$wait_s" -gt 0 ] || wait_s=1
    done
    cat "$err" >&2
    rm -f "$err"
    return "$rc"
}
