"""``python3 -m kraft format --cluster-id X --node-id N --data-dir D`` (and ``dump``)."""
from __future__ import annotations

import argparse
import json
import sys

from .logreader import read_data_dir
from .meta import MetaError, format_dir


def main(argv: list[str] | None = None) -> int:
    """Formats a data dir, or dumps one as JSON lines. Exit 0 ok, 2 on error."""
    ap = argparse.ArgumentParser(prog="python3 -m kraft")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("format", help="write meta.properties with a fresh directory id")
    f.add_argument("--cluster-id", required=True)
    f.add_argument("--node-id", required=True, type=int)
    f.add_argument("--data-dir", required=True)
    d = sub.add_parser("dump", help="print a data dir's records as JSON lines")
    d.add_argument("data_dir")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "format":
            meta = format_dir(args.data_dir, args.cluster_id, args.node_id)
            print(f"formatted {args.data_dir}: node.id={meta.node_id} cluster.id={meta.cluster_id} "
                  f"directory.id={meta.directory_id}")
        else:
            dd = read_data_dir(args.data_dir)
            for r in dd.records:
                print(json.dumps(r.to_wire()))
            print(json.dumps({"meta": dd.meta.__dict__ if dd.meta else None,
                              "high_watermark": dd.high_watermark, "torn_bytes": dd.torn_bytes}),
                  file=sys.stderr)
    except (MetaError, OSError) as e:
        print(f"python3 -m kraft: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
