"""Node and Kafka image pruning (clusters/image_prune.py, clusters/image.py's prune_images and
hold_image): a build removes only what this checkout held and no longer needs, never an image
another checkout references, and unreferenced images only past the age limit. The decision is
a pure function; prune_images is driven with a stand-in for the docker SDK (no engine)."""
from __future__ import annotations

import docker.errors
import pytest

from clusters.image import hold_image, prune_images, prune_node_images
from clusters.image_prune import (DEFAULT_MAX_AGE_S, ImageInfo, checkout_id, max_age_s,
                                  parse_created, prune_plan, ref_owner, ref_tag)

ME, OTHER = "a" * 16, "b" * 16
NOW = 1_800_000_000.0
DAY = 86400.0
NEW, OLD, SHARED = "kraft-chaos-node:new0", "kraft-chaos-node:old0", "kraft-chaos-node:shared0"


def img(*tags, age_days=1.0):
    return ImageInfo(tuple(tags), NOW - age_days * DAY)


def test_ref_tags_name_their_checkout():
    assert ref_tag(NEW, ME) == f"kraft-chaos-node:new0-ref-{ME}"
    assert ref_owner(ref_tag(NEW, ME)) == ME
    assert ref_owner(NEW) is None and ref_owner("localhost:5000/x:y") is None
    assert ref_owner(ref_tag("localhost:5000/kraft-chaos-node:d", OTHER)) == OTHER


def test_checkout_id_differs_per_path_and_host(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert checkout_id(tmp_path / "a", "h") != checkout_id(tmp_path / "b", "h")
    assert checkout_id(tmp_path / "a", "h") != checkout_id(tmp_path / "a", "h2")
    assert checkout_id(tmp_path / "a", "h") == checkout_id(tmp_path / "a" / "..." / ".." , "h")
    assert len(checkout_id()) == 16


def test_the_image_needed_now_is_never_removed():
    images = [img(NEW, ref_tag(NEW, ME), ref_tag(NEW, OTHER), age_days=400)]
    assert prune_plan(images, NEW, ME, NOW) == []


def test_an_image_only_this_checkout_held_goes_whole():
    images = [img(NEW, ref_tag(NEW, ME)), img(OLD, ref_tag(OLD, ME), age_days=0.01)]
    assert prune_plan(images, NEW, ME, NOW) == [OLD, ref_tag(OLD, ME)]


def test_an_image_another_checkout_holds_loses_only_our_reference():
    """The bug of issue 15: a build here removed the image a parallel job was about to use."""
    images = [img(NEW, ref_tag(NEW, ME)), img(SHARED, ref_tag(SHARED, ME), ref_tag(SHARED, OTHER))]
    assert prune_plan(images, NEW, ME, NOW) == [ref_tag(SHARED, ME)]


def test_other_checkouts_images_stay_until_they_are_old():
    young = img(SHARED, ref_tag(SHARED, OTHER), age_days=13)
    old = img(OLD, ref_tag(OLD, OTHER), age_days=15)
    assert prune_plan([young, old], NEW, ME, NOW) == [OLD, ref_tag(OLD, OTHER)]
    assert prune_plan([young, old], NEW, ME, NOW, max_age=0) == []          # 0: never


def test_unreferenced_images_go_only_by_age():
    legacy_young, legacy_old = img("kraft-chaos-node:l1", age_days=2), img("kraft-chaos-node:l2", age_days=30)
    unknown_age = ImageInfo(("kraft-chaos-node:l3",), 0.0)
    assert prune_plan([legacy_young, legacy_old, unknown_age], NEW, ME, NOW) == ["kraft-chaos-node:l2"]
    assert prune_plan([legacy_young], NEW, ME, NOW, max_age=1 * DAY) == ["kraft-chaos-node:l1"]


def test_max_age_from_the_environment():
    assert max_age_s({}) == DEFAULT_MAX_AGE_S == 14 * DAY
    assert max_age_s({"KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS": "0.5"}) == 0.5 * DAY
    assert max_age_s({"KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS": "0"}) == 0
    for bad in ("-1", "soon", "inf", "nan"):
        with pytest.raises(ValueError, match="KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS"):
            max_age_s({"KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS": bad})


def test_parse_created():
    assert parse_created("1970-01-01T00:00:10.123456789Z") == pytest.approx(10.123456)
    assert parse_created("2025-01-02T03:04:05Z") == 1735787045.0
    assert parse_created("2025-01-02T03:04:05.5+01:00") == 1735783445.5
    assert parse_created(42) == 42.0
    assert parse_created(None) == parse_created("") == parse_created("yesterday") == parse_created(True) == 0.0


class _Image:
    def __init__(self, images, tags, created):
        self._images, self.tags = images, list(tags)
        self.attrs = {"Created": created}

    def tag(self, repo, name):
        self._images.tagged.append(f"{repo}:{name}")
        self.tags.append(f"{repo}:{name}")
        return True


class _Images:
    """Stand-in for client.images: ``in_use`` images refuse removal of their last tag (409,
    like the engine); removing one of several tags only untags."""

    def __init__(self, images, in_use=()):
        self.images = [_Image(self, tags, created) for tags, created in images]
        self.in_use = set(in_use)
        self.removed, self.tagged, self.filters = [], [], []

    def list(self, filters=None):
        self.filters.append(filters)
        return [i for i in self.images if i.tags]

    def get(self, tag):
        for i in self.images:
            if tag in i.tags:
                return i
        raise docker.errors.ImageNotFound(tag)

    def remove(self, tag):
        i = self.get(tag)
        if len(i.tags) == 1 and tag in self.in_use:
            raise docker.errors.APIError("conflict: image is being used by a container")
        i.tags.remove(tag)
        self.removed.append(tag)


class _Client:
    def __init__(self, images, in_use=()):
        self.images = _Images(images, in_use)


def test_prune_images_through_the_sdk(monkeypatch):
    monkeypatch.delenv("KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS", raising=False)
    recent, ancient = "2026-01-10T00:00:00.000000001Z", "2020-01-01T00:00:00Z"
    client = _Client([([NEW, ref_tag(NEW, ME)], recent),
                      ([OLD, ref_tag(OLD, ME)], recent),
                      ([SHARED, ref_tag(SHARED, ME), ref_tag(SHARED, OTHER)], recent),
                      (["kraft-chaos-node:kept", ref_tag("kraft-chaos-node:kept", ME)], recent),
                      (["kraft-chaos-node:legacy"], ancient)],
                     in_use={ref_tag("kraft-chaos-node:kept", ME)})
    lines = []
    now = parse_created("2026-01-11T00:00:00Z")
    removed = prune_images(client, NEW, ["kraft-chaos.image=node"], "node images", lines.append,
                           now=now, checkout=ME)
    assert client.images.filters == [{"label": ["kraft-chaos.image=node"]}]
    assert removed == [OLD, ref_tag(OLD, ME), ref_tag(SHARED, ME), "kraft-chaos-node:kept",
                       "kraft-chaos-node:legacy"]
    remaining = {t for i in client.images.images for t in i.tags}
    assert remaining == {NEW, ref_tag(NEW, ME), SHARED, ref_tag(SHARED, OTHER),
                         ref_tag("kraft-chaos-node:kept", ME)}          # in use: the engine refused
    assert lines == [f"removed older node images: {OLD}, kraft-chaos-node:kept, kraft-chaos-node:legacy"]


def test_a_bad_age_setting_removes_only_this_checkouts_references(monkeypatch):
    monkeypatch.setenv("KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS", "soon")
    client = _Client([([NEW], "2026-01-01T00:00:00Z"), (["kraft-chaos-node:legacy"], "2000-01-01T00:00:00Z"),
                      ([OLD, ref_tag(OLD, checkout_id())], "2026-01-01T00:00:00Z")])
    lines = []
    assert prune_node_images(client, NEW, lines.append) == [OLD, ref_tag(OLD, checkout_id())]
    assert "KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS must be a number" in lines[0]


def test_hold_image_tags_the_reference_and_never_raises():
    client = _Client([([NEW], "2026-01-01T00:00:00Z")])
    assert hold_image(client, NEW, ME) == ref_tag(NEW, ME)
    assert client.images.tagged == [ref_tag(NEW, ME)]
    assert hold_image(client, "kraft-chaos-node:absent", ME) is None


def test_an_engine_that_cannot_list_prunes_nothing():
    class Broken:
        class images:
            @staticmethod
            def list(filters=None):
                raise docker.errors.APIError("engine gone")
    assert prune_node_images(Broken, NEW, print) == []
