"""DockerCluster's per-node bind mounts (the lazyfs mountpoints as data dirs); a stand-in client."""
from __future__ import annotations

import pytest

from clusters.docker_cluster import DockerCluster


class FakeClient:
    def __init__(self):
        self.runs = {}
        client = self

        class Networks:
            def create(self, *a, **kw):
                return None

        class Containers:
            def run(self, image, **kw):
                client.runs[kw["name"]] = kw

        class Api:
            def create_endpoint_config(self, **kw):
                return kw

        self.networks, self.containers, self.api = Networks(), Containers(), Api()


def test_binds_reach_containers_run():
    client = FakeClient()
    c = DockerCluster(2, "r1", "img", client=client, binds={"n1": {"/h/n1/mnt": "/data"}})
    c._create()
    assert client.runs["kraft-chaos-r1-n1"]["volumes"] == {"/h/n1/mnt": {"bind": "/data", "mode": "rw"}}
    assert client.runs["kraft-chaos-r1-n2"]["volumes"] is None


def test_bad_binds():
    with pytest.raises(ValueError, match="unknown node 'n9'"):
        DockerCluster(2, "r1", "img", client=object(), binds={"n9": {"/a": "/b"}})
    with pytest.raises(ValueError, match="absolute"):
        DockerCluster(2, "r1", "img", client=object(), binds={"n1": {"rel": "/b"}})
