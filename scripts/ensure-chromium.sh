#!/usr/bin/env bash
# Make sure the results browser's tests (tests/test_serve_browser.py) can drive a headless
# Chromium here: Debian's chromium and chromium-driver (the chromedriver of the same
# version; Selenium, from pyproject's dependencies, talks to it).
#
# Quiet and exit 0 when chromium and chromedriver are both on PATH (or in /usr/bin).
# Otherwise, as root on Debian: install chromium, chromium-driver and a font
# (fonts-dejavu-core, so pages are not drawn in boxes) with apt-get (running `apt-get update`
# first only when apt does not know them yet) and check again. Idempotent. Without root or
# apt-get it only warns: the browser tests skip with the reason.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"   # apt_get: waits for the package manager's lock

PKGS=(chromium chromium-driver fonts-dejavu-core)

warn() { echo "ensure-chromium: warning: $*" >&2; exit 0; }

have() {
    { command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; } \
        && { command -v chromedriver >/dev/null 2>&1 || [ -x /usr/bin/chromedriver ]; }
}

have && exit 0
[ "$(id -u)" -eq 0 ] || warn "chromium or chromedriver is missing and this script is not root; the browser tests will skip (sudo apt-get install ${PKGS[*]})"
command -v apt-get >/dev/null 2>&1 || warn "chromium or chromedriver is missing and apt-get is not available; the browser tests will skip"
if ! apt-cache show chromium-driver >/dev/null 2>&1; then
    apt_get update -qq >/dev/null || warn "apt-get update failed; install ${PKGS[*]} by hand"
fi
echo "ensure-chromium: installing ${PKGS[*]} ..." >&2
apt_get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null \
    || warn "apt-get install ${PKGS[*]} failed; install them by hand"
have || warn "installed ${PKGS[*]} but chromium or chromedriver is still missing"
exit 0
