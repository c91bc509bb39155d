"""Unit tests for clusters.image that need no engine: digest, Dockerfile, build context."""
import tarfile

import pytest

from clusters.image import BASE_TAG, build_context, kraft_digest, node_dockerfile


@pytest.fixture
def kraft_dir(tmp_path):
    d = tmp_path / "kraft"
    (d / "sub").mkdir(parents=True)
    (d / "__init__.py").write_text("")
    (d / "node.py").write_text("X = 1\n")
    (d / "sub" / "log.py").write_text("Y = 2\n")
    return d


def test_digest_is_stable_for_same_tree(kraft_dir, tmp_path):
    first = kraft_digest(kraft_dir)
    assert first == kraft_digest(kraft_dir)
    assert len(first) == 16 and int(first, 16) >= 0


def test_digest_changes_when_a_file_changes(kraft_dir):
    before = kraft_digest(kraft_dir)
    (kraft_dir / "node.py").write_text("X = 2\n")
    assert kraft_digest(kraft_dir) != before


def test_digest_changes_on_added_or_renamed_file(kraft_dir):
    before = kraft_digest(kraft_dir)
    (kraft_dir / "sub" / "log.py").rename(kraft_dir / "sub" / "log2.py")
    renamed = kraft_digest(kraft_dir)
    assert renamed != before
    (kraft_dir / "extra.py").write_text("")
    assert kraft_digest(kraft_dir) not in (before, renamed)


def test_digest_ignores_bytecode_caches(kraft_dir):
    before = kraft_digest(kraft_dir)
    (kraft_dir / "__pycache__").mkdir()
    (kraft_dir / "__pycache__" / "node.cpython-311.pyc").write_bytes(b"\x00junk")
    assert kraft_digest(kraft_dir) == before


def test_digest_depends_on_extra(kraft_dir):
    assert kraft_digest(kraft_dir, b"FROM a") != kraft_digest(kraft_dir, b"FROM b")


def test_digest_missing_dir_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        kraft_digest(tmp_path / "nope")


def test_own_base_dockerfile_has_no_apt():
    df = node_dockerfile(BASE_TAG, "sha256:abc")
    assert df.startswith(f"FROM {BASE_TAG}\n")
    assert "apt-get" not in df
    assert "COPY kraft /opt/kraft/kraft" in df and "ENV PYTHONPATH=/opt/kraft" in df
    assert "sha256:abc" in df


def test_foreign_base_dockerfile_installs_tools():
    df = node_dockerfile("python:3.12-slim")
    assert df.startswith("FROM python:3.12-slim\n")
    run = [ln for ln in df.splitlines() if ln.startswith("RUN ")]
    assert len(run) == 1 and all(p in run[0] for p in ("iptables", "iproute2", "procps"))


def test_build_context_holds_dockerfile_and_package(kraft_dir, tmp_path):
    (kraft_dir / "__pycache__").mkdir()
    (kraft_dir / "__pycache__" / "x.pyc").write_bytes(b"junk")
    ctx = build_context(kraft_dir, "FROM x\n")
    with tarfile.open(fileobj=ctx) as tar:
        names = sorted(tar.getnames())
        assert names == ["Dockerfile", "kraft/__init__.py", "kraft/node.py", "kraft/sub/log.py"]
        assert tar.extractfile("Dockerfile").read() == b"FROM x\n"
        assert tar.extractfile("kraft/sub/log.py").read() == b"Y = 2\n"
        assert all(m.uid == 0 and m.gid == 0 for m in tar.getmembers())


# pruning: tests/test_image_prune.py
