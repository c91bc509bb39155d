#!/usr/bin/env bash
# Build (or reuse) the node image and print its tag.
#
# Usage: scripts/build-node-image.sh [--base-image NAME]
# Without --base-image the offline Debian base kraft-chaos-base:bookworm is made
# with debootstrap first (root needed, ~40 s, cached). Set
# KRAFT_CHAOS_DEBIAN_MIRROR to use another Debian mirror.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
base=""
while [ $# -gt 0 ]; do
    case "$1" in
        --base-image) [ $# -ge 2 ] || { echo "--base-image needs a NAME" >&2; exit 3; }; base=$2; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (usage: $0 [--base-image NAME])" >&2; exit 3 ;;
    esac
done
exec "$PY" - "$base" <<'PYEOF'
import sys
from pathlib import Path
from clusters.engine import connect_engine
from clusters.errors import ClusterError
from clusters.image import ensure_node_image
try:
    tag = ensure_node_image(connect_engine(), Path("kraft"), sys.argv[1] or None,
                            log=lambda m: print(m, file=sys.stderr))
except ClusterError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(4)
print(tag)
PYEOF
