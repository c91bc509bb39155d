"""``kraft-chaos teardown``: remove what every backend left, or (``--cluster ssh``) what the
ssh hosts of ``--hosts`` hold."""
from __future__ import annotations

import argparse
import sys

from clusters.errors import ClusterError
from clusters.registry import BACKENDS, teardown_everything, teardown_ssh
from harness.config.values import hosts_file
from harness.exits import EXIT_BAD_INPUT, EXIT_CLUSTER
from harness.run import disks

#: ``--cluster``: every backend, or only the backends whose nodes are on the hosts of ``--hosts``
ALL = "all"
HOSTS_BACKENDS = tuple(name for name, b in BACKENDS.items() if b.needs_hosts)


def add_parser(sub) -> None:
    """Add the ``teardown`` subcommand to ``sub``."""
    t = sub.add_parser("teardown", help="remove every container and network labelled kraft-chaos, "
                                        "every namespace, link and iptables rule of the netns backend, "
                                        "and (--hosts) every node, folder and rule on the ssh hosts")
    t.add_argument("--cluster", choices=[ALL, *HOSTS_BACKENDS], default=ALL,
                   help="all: docker, netns and (with --hosts) the ssh hosts (default); ssh: only the hosts")
    t.add_argument("--hosts", type=hosts_file, default=None, metavar="HOSTS.toml",
                   help="the ssh hosts to sweep (every run's nodes, folders and iptables chains)")


def cmd_teardown(args: argparse.Namespace) -> int:
    """``kraft-chaos teardown``: remove what every backend left (clusters.registry.
    teardown_everything), then the lazyfs disks of power-loss runs that did not clean up.
    Exit 4 when no backend could be swept, or an ssh host could not be. ``--cluster ssh
    --hosts F``: only the hosts of F."""
    ssh_errors: list[str] = []
    hosts_only = args.cluster != ALL
    if hosts_only or args.hosts:
        if not args.hosts:
            print("kraft-chaos teardown: --cluster ssh needs --hosts FILE", file=sys.stderr)
            return EXIT_BAD_INPUT
        removed, ssh_errors = teardown_ssh(args.hosts)
        for name in removed:
            print(f"removed {name.replace(': removed ', ': ', 1)}")
        for err in ssh_errors:
            print(f"kraft-chaos teardown: {err}", file=sys.stderr)
        if hosts_only:
            print(f"removed {sum(': removed ' in n for n in removed)} object(s) from the ssh hosts")
            return EXIT_CLUSTER if ssh_errors else 0
    try:
        removed, notes = teardown_everything()
    except ClusterError as e:
        print(f"kraft-chaos teardown: {e}", file=sys.stderr)
        return EXIT_CLUSTER
    for name in removed:
        print(f"removed {name}")
    for note in notes:
        print(note, file=sys.stderr)
    for line in disks.sweep_disks():       # after the nodes, which hold copies of the mounts
        print(line)
    print(f"removed {len(removed)} object(s)")
    return EXIT_CLUSTER if len(notes) == 2 or ssh_errors else 0
