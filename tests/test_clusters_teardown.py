"""Unit tests for clusters.teardown with a stand-in engine client (no Docker needed)."""
import docker.errors
import pytest

from clusters.teardown import teardown_all, teardown_run


class FakeObj:
    def __init__(self, name, labels, store, error=None):
        self.name, self.labels, self.store, self.error = name, labels, store, error

    def remove(self, **kw):
        if self.error:
            raise self.error
        self.store.remove(self)


class FakeCollection:
    def __init__(self):
        self.items = []

    def list(self, all=False, filters=None):
        key, _, value = filters["label"].partition("=")
        return [o for o in list(self.items)
                if key in o.labels and (not value or o.labels[key] == value)]


class FakeClient:
    def __init__(self):
        self.containers, self.networks = FakeCollection(), FakeCollection()

    def add(self, coll, name, run, error=None):
        labels = {"kraft-chaos.run": run} if run else {"other": "x"}
        coll.items.append(FakeObj(name, labels, coll.items, error))


def api_error(status):
    resp = type("R", (), {"status_code": status, "reason": "", "url": ""})()
    return docker.errors.APIError("engine says no", response=resp)


def test_teardown_run_removes_only_that_run_containers_first():
    c = FakeClient()
    c.add(c.containers, "a-n1", "a"); c.add(c.containers, "b-n1", "b"); c.add(c.containers, "mine", None)
    c.add(c.networks, "net-a", "a"); c.add(c.networks, "net-b", "b")
    assert teardown_run(c, "a") == ["a-n1", "net-a"]
    assert [o.name for o in c.containers.items] == ["b-n1", "mine"]
    assert [o.name for o in c.networks.items] == ["net-b"]
    assert teardown_run(c, "a") == []


def test_teardown_all_spares_unlabelled_objects():
    c = FakeClient()
    c.add(c.containers, "a-n1", "a"); c.add(c.containers, "b-n1", "b"); c.add(c.containers, "mine", None)
    c.add(c.networks, "net-a", "a")
    assert teardown_all(c) == ["a-n1", "b-n1", "net-a"]
    assert [o.name for o in c.containers.items] == ["mine"]


def test_already_gone_or_being_removed_is_tolerated_other_errors_raise():
    c = FakeClient()
    c.add(c.containers, "gone", "a", docker.errors.NotFound("gone"))
    c.add(c.containers, "busy", "a", api_error(409))
    c.add(c.networks, "net-gone", "a", docker.errors.NotFound("gone"))
    assert teardown_run(c, "a") == []
    c.add(c.containers, "broken", "a", api_error(500))
    with pytest.raises(docker.errors.APIError):
        teardown_run(c, "a")


def test_empty_run_id_rejected():
    with pytest.raises(ValueError, match="run_id"):
        teardown_run(FakeClient(), "")
