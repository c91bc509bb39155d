"""``python3 -m kraft format --cluster-id X --node-id N --data-dir D`` (and ``dump``).

``format`` takes KIP-853's options as Kafka's StorageTool does: with
``--initial-controllers id@host:port:directory-id,...`` or ``--standalone``
(with ``--listener host:port``) the data dir is at kraft.version 1 with that
bootstrap voter set; ``--no-initial-controllers`` makes a kraft.version 1
replica with no voters (an observer, e.g. a replacement for a lost disk).
Without them: kraft.version 0, static ``controller.quorum.voters``.
"""
from __future__ import annotations

import argparse
import json
import sys

from .storage.bootstrap import format_node
from .storage.logreader import read_data_dir
from .storage.meta import MetaError


def main(argv: list[str] | None = None) -> int:
    """Formats a data dir, or dumps one as JSON lines. Exit 0 ok, 2 on error."""
    ap = argparse.ArgumentParser(prog="python3 -m kraft")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("format", help="write meta.properties with a fresh directory id")
    f.add_argument("--cluster-id", required=True)
    f.add_argument("--node-id", required=True, type=int)
    f.add_argument("--data-dir", required=True)
    f.add_argument("--initial-controllers", help="KIP-853: id@host:port:directory-id,... (kraft.version 1)")
    f.add_argument("--standalone", action="store_true", help="KIP-853: this node alone is the voter set")
    f.add_argument("--listener", help="host:port of this node (for --standalone)")
    f.add_argument("--no-initial-controllers", action="store_true",
                   help="KIP-853: kraft.version 1 without voters (starts as an observer)")
    d = sub.add_parser("dump", help="print a data dir's records as JSON lines")
    d.add_argument("data_dir")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "format":
            if args.standalone and not args.listener:
                raise MetaError("--standalone needs --listener host:port")
            meta = format_node(args.data_dir, args.cluster_id, args.node_id,
                               initial_controllers=args.initial_controllers,
                               standalone_listener=args.listener if args.standalone else None,
                               no_initial_controllers=args.no_initial_controllers)
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
