"""tests/sshd_hosts.py leaves nothing behind: not when a test fails, not when the test process
gets SIGTERM (``timeout``, a cancelled CI job: tests/conftest.py turns it into Ctrl-C, so the
fixtures' teardown runs), and not when it is SIGKILLed (the next set-up on that subnet
removes the dead run's namespaces, bridge and FORWARD rule)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.sshd_hosts import SshdHosts, _sh, sshd_skip_reason

REPO = Path(__file__).resolve().parent.parent
THIRD = 217           # a subnet of this test's own (10.89.217.0/24)

pytestmark = pytest.mark.skipif(sshd_skip_reason() is not None, reason=str(sshd_skip_reason()))


def _namespaces(tag: str) -> list[str]:
    return [ln for ln in _sh("ip", "netns", "list", check=False).stdout.splitlines() if f"kcssh-{tag}-" in ln]


def _wait_for_tag(proc: subprocess.Popen, path: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the hosts never came up")


def test_a_failing_test_tears_its_hosts_down():
    with pytest.raises(RuntimeError):
        with SshdHosts(1, THIRD) as h:
            tag = h.tag
            assert _namespaces(tag)
            raise RuntimeError("the test failed")
    assert _namespaces(tag) == []


def test_sigterm_to_pytest_runs_the_fixtures_teardown(tmp_path):
    tag_file = tmp_path / "tag"
    (tmp_path / "test_hold.py").write_text(textwrap.dedent(f"""
        import time
        import pytest
        from tests.sshd_hosts import SshdHosts

        @pytest.fixture
        def hosts():
            with SshdHosts(1, {THIRD}) as h:
                yield h

        def test_hold(hosts):
            open({str(tag_file)!r}, "w").write(hosts.tag)
            time.sleep(120)
    """))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                             str(tmp_path / "test_hold.py")], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tag = _wait_for_tag(proc, tag_file)
    assert _namespaces(tag)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert _namespaces(tag) == []


def test_the_next_set_up_removes_what_a_killed_run_left(tmp_path):
    tag_file = tmp_path / "tag"
    script = (f"import time\nfrom tests.sshd_hosts import SshdHosts\nh = SshdHosts(1, {THIRD}).__enter__()\n"
              f"open({str(tag_file)!r}, 'w').write(h.tag)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dead = _wait_for_tag(proc, tag_file)
    proc.kill()
    proc.wait(timeout=30)
    assert _namespaces(dead)                      # SIGKILL: nothing could clean up
    with SshdHosts(1, THIRD) as h:
        assert _namespaces(dead) == [] and h.third == THIRD
        assert f"kshb{dead}" not in _sh("ip", "-o", "link", "show", check=False).stdout
        assert f"kcssh-test:{dead}" not in _sh("iptables", "-w", "-S", "FORWARD", check=False).stdout
    assert _namespaces(h.tag) == []
