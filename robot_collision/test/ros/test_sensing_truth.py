"""Small version of ``benchmarks/run.py sensing_truth`` (issue 19): one box known only from a
simulated depth camera, the arm pushed at it through the velocity filter, judged against the
real box primitive (``CollisionChecker`` on the true ``Box``), not the package's picture of it.

The node-process versions are ``test_demo.py`` (step 5a/5b: mock_camera, filter and planner as
a bring-up process, the client judging the real box against the safety distance) and
``test_point_clouds.py::test_filter_stops_on_a_blinded_camera`` (real topics).
"""

from __future__ import annotations

import pytest

pytest.importorskip("sensor_msgs.msg")

import bench_sensing_truth as bench

SAFETY = bench.SAFETY


@pytest.mark.parametrize("scene", ["head_on", "grazing"])
def test_seen_faces_keep_the_safety_distance_from_the_real_box(scene: str) -> None:
    r = bench.run_scene(scene, 2.5)
    assert r["true_min_clearance_mm"] >= (SAFETY - 0.003) * 1e3, r


def test_hidden_face_is_not_entered() -> None:
    r = bench.run_scene("hidden", 2.5)
    assert r["true_min_clearance_mm"] >= 0.0, r


def test_hidden_face_with_unseen_is_occupied_keeps_the_safety_distance() -> None:
    r = bench.run_scene("hidden_unseen", 2.5)
    assert r["true_min_clearance_mm"] >= (SAFETY - 0.003) * 1e3, r
    assert r["true_min_clearance_mm"] < 110.0, r  # the arm did move towards the box


def test_occluded_box_persists() -> None:
    r = bench.run_scene("occluded", 2.5)
    assert r["true_min_clearance_mm"] >= (SAFETY - 0.003) * 1e3, r


def test_blinded_camera_stops_the_arm() -> None:
    r = bench.run_scene("blinded", 2.0)
    assert r["true_min_clearance_mm"] >= (SAFETY - 0.003) * 1e3, r
    assert r["stopped_after_s"] is not None and r["stopped_after_s"] <= 0.2, r


def test_future_stamped_then_dead_camera_stops_within_max_age() -> None:
    r = bench.run_scene("future_dead", 3.0)
    assert r["stopped_after_s"] is not None
    assert r["stopped_after_s"] <= bench.CLOUD_MAX_AGE + 0.2, r


def test_box_that_returns_nothing_is_an_obstacle_when_dropouts_are_occupied() -> None:
    # a black box (its pixels are dropouts): with cloud_unseen_min_range the dropouts' cone is
    # an obstacle; the arm, inside that cone, is held (it may not move towards the box)
    r = bench.run_scene("no_return", 1.0)
    assert r["true_min_clearance_mm"] >= (SAFETY - 0.003) * 1e3, r
    assert r["sensed_min_mm"] < 0.0, r  # the filter sees the arm inside the dropouts' cone
