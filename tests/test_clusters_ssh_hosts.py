"""The SSH backend's hosts file (clusters/ssh_hosts.py): what it accepts, and errors that name
the file, the line, the host entry and the key; through ``kraft-chaos run --hosts`` they exit 3."""
from __future__ import annotations

import pytest

from clusters.ssh_hosts import HostsFileError, HostSpec, load_hosts
from harness import exits
from harness.cli import main as cli


def write(tmp_path, text: str):
    p = tmp_path / "hosts.toml"
    p.write_text(text)
    return p


def test_defaults_and_per_host_values(tmp_path):
    (tmp_path / "k").write_text("key")
    p = write(tmp_path, """
[defaults]
user = "admin"
key_file = "k"
sudo = true

[[hosts]]
host = "10.0.0.1"

[[hosts]]
host = "db2.example"
port = 2222
address = "10.0.0.2"
user = "root"
sudo = false
host_key_policy = "accept-new"
known_hosts = "kh"
run_dir = "/srv/chaos/"
python = "/usr/bin/python3.12"
connect_timeout_s = 3
""")
    a, b = load_hosts(p)
    assert a == HostSpec(host="10.0.0.1", user="admin", key_file=str(tmp_path / "k"), sudo=True, line=7,
                         source=str(p))
    assert a.label == "admin@10.0.0.1:22" and a.known_hosts == "~/.ssh/known_hosts"
    assert a.host_key_policy == "reject" and a.run_dir == "/tmp/kraft-chaos"
    assert (b.port, b.address, b.user, b.sudo, b.host_key_policy) == (2222, "10.0.0.2", "root", False, "accept-new")
    assert (b.known_hosts, b.run_dir, b.python, b.connect_timeout_s) == (str(tmp_path / "kh"), "/srv/chaos",
                                                                        "/usr/bin/python3.12", 3.0)
    assert b.key_file == str(tmp_path / "k") and b.line == 10


@pytest.mark.parametrize("body, where", [
    ('[[hosts]]\nhost = "a"\nport = 70000\n', r"hosts\.toml:3: \[\[hosts\]\] entry 1 'port': must be an integer in 1\.\.65535, got 70000"),
    ('[[hosts]]\nhost = "a"\n[[hosts]]\nhost = "b"\nsudo = "yes"\n',
     r":5: \[\[hosts\]\] entry 2 'sudo': must be true or false, got 'yes'"),
    ('[defaults]\nhost_key_policy = "ask"\n[[hosts]]\nhost = "a"\n',
     r":2: \[defaults\] 'host_key_policy': must be one of reject, accept-new, got 'ask'"),
    ('[[hosts]]\nhost = "a"\nkeyfile = "x"\n', r":3: \[\[hosts\]\] entry 1 'keyfile': unknown key; the keys are host"),
    ('[[hosts]]\nhost = "a"\nkey_file = "nope"\n', r":3: \[\[hosts\]\] entry 1 'key_file': the key file .*/nope does not exist"),
    ('[[hosts]]\nhost = "a"\n[[hosts]]\nport = 22\n', r":3: \[\[hosts\]\] entry 2: has no host"),
    ('[[hosts]]\nhost = "a"\nrun_dir = "/var/tmp/x"\n', r":3: \[\[hosts\]\] entry 1 'run_dir': /var/tmp/x is under /etc, /var, /opt"),
    ('[[hosts]]\nhost = "a"\nrun_dir = "rel"\n', r":3: .*'run_dir': must be an absolute path"),
    ('[[hosts]]\nhost = "a"\naddress = "a.b"\n', r":3: .*'address': must be an IPv4 address"),
    ('[[hosts]]\nhost = "a"\n[[hosts]]\nhost = "a"\n', r":4: \[\[hosts\]\] entry 2 'host': a:22 is also entry 1"),
    ('[defaults]\nuser = "x"\n', r":1: no hosts: add one \[\[hosts\]\] table"),
    ('hosts = 3\n', r":1: no hosts"),
    ('[[hosts]]\nhost = "a"\nconnect_timeout_s = 0\n', r":3: .*'connect_timeout_s': must be a positive number"),
    ('[[hosts]]\nhost = "a b"\n', r":2: .*'host': must be a non-empty string without spaces"),
    ('[defaults]\nhost = "a"\n[[hosts]]\nhost = "b"\n', r":2: \[defaults\] 'host': belongs in a \[\[hosts\]\] entry"),
    ('[server]\nx = 1\n[[hosts]]\nhost = "a"\n', r":1: 'server': unknown top-level key"),
    ('[[hosts]\nhost = "a"\n', r"not valid TOML"),
])
def test_errors_name_file_line_entry_and_key(tmp_path, body, where):
    p = write(tmp_path, body)
    with pytest.raises(HostsFileError, match=where) as e:
        load_hosts(p)
    assert str(e.value).startswith(str(p))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(HostsFileError, match=r"hosts file .*/none\.toml does not exist"):
        load_hosts(tmp_path / "none.toml")


def test_cli_exits_3_for_a_bad_hosts_file_and_misused_options(tmp_path, capsys):
    p = write(tmp_path, '[[hosts]]\nhost = "a"\nport = "22"\n')
    assert cli.main(["run", "--cluster", "ssh", "--hosts", str(p)]) == exits.EXIT_BAD_INPUT
    assert f"{p}:3: [[hosts]] entry 1 'port': must be an integer" in capsys.readouterr().err
    assert cli.main(["run", "--cluster", "ssh"]) == exits.EXIT_BAD_INPUT
    assert "--cluster ssh needs --hosts FILE" in capsys.readouterr().err
    good = write(tmp_path, '[[hosts]]\nhost = "a"\n')
    assert cli.main(["run", "--cluster", "netns", "--hosts", str(good)]) == exits.EXIT_BAD_INPUT
    assert "--hosts applies to --cluster ssh only" in capsys.readouterr().err
    assert cli.main(["teardown", "--cluster", "ssh"]) == exits.EXIT_BAD_INPUT
    assert "--cluster ssh needs --hosts FILE" in capsys.readouterr().err


def test_kafka_on_ssh_needs_a_host_per_node(tmp_path, capsys, monkeypatch):
    from targets.kafka import host_files
    libs = tmp_path / "libs"
    libs.mkdir()
    monkeypatch.setattr(host_files, "resolve_jars", lambda *a, **k: libs)      # no Maven here
    good = write(tmp_path, '[[hosts]]\nhost = "a"\n')
    code = cli.main(["run", "--db", "kafka", "--cluster", "ssh", "--hosts", str(good), "--store",
                     str(tmp_path / "store"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == exits.EXIT_BAD_INPUT, err
    assert "8 nodes need 8 hosts" in err and "lists 1" in err       # 5 controllers + 3 brokers


def test_too_few_hosts_is_a_value_error(tmp_path):
    from clusters.registry import Software, make_cluster
    good = write(tmp_path, '[[hosts]]\nhost = "10.0.0.1"\n[[hosts]]\nhost = "10.0.0.2"\n')
    with pytest.raises(ValueError, match=r"3 nodes need 3 hosts; .*hosts\.toml lists 2 \(pass --nodes 2"):
        make_cluster("ssh", 3, "r1", Software(), subnet="10.77.0.0/24", hosts=good)
    with pytest.raises(ValueError, match="--cluster ssh needs --hosts FILE"):
        make_cluster("ssh", 3, "r1", Software(), subnet="10.77.0.0/24")
    c = make_cluster("ssh", 2, "r1", Software(), subnet="10.77.0.0/24", hosts=good)
    assert (c.nodes, c.ip("n2")) == (["n1", "n2"], "10.0.0.2")
