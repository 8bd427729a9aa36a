"""GJK's simplex sub-solvers (:mod:`robot_collision.geometry.gjk`) against Johnson's brute
force: the point of a simplex closest to the origin is the projection of the origin onto the
affine hull of one of its faces (any dimension) whose barycentric weights are all positive;
the closest such candidate over all 2^k - 1 vertex subsets is the answer."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from robot_collision.geometry.gjk import _tetra_lambdas, _tri_lambdas


def _closest_brute(P: np.ndarray) -> np.ndarray:
    """Point of conv(P) (k, 3) closest to the origin, by enumerating vertex subsets."""
    best = P[int(np.argmin((P * P).sum(axis=1)))]
    for m in range(2, len(P) + 1):
        for sub in itertools.combinations(range(len(P)), m):
            Q = P[list(sub)]
            # min |Q^T lam|^2 with sum(lam) = 1: the KKT system of the affine projection
            G = Q @ Q.T
            A = np.block([[G, np.ones((m, 1))], [np.ones((1, m)), np.zeros((1, 1))]])
            rhs = np.zeros(m + 1)
            rhs[m] = 1.0
            lam = np.linalg.lstsq(A, rhs, rcond=None)[0][:m]
            if (lam > 0.0).all():
                x = lam @ Q
                if x @ x < best @ best:
                    best = x
    return best


def _random_simplex(rng: np.random.Generator, k: int) -> np.ndarray:
    # points around an offset centre, some slivers (curved shapes make GJK build them)
    c = rng.normal(size=3) * rng.uniform(0.0, 2.0)
    P = c + rng.normal(size=(k, 3)) * rng.uniform(0.01, 1.0)
    if rng.random() < 0.3:
        P[-1] = P[0] + rng.normal(size=3) * 1e-4
    return np.asarray(P)


def test_triangle_weights_give_the_closest_point() -> None:
    rng = np.random.default_rng(3)
    for _ in range(2000):
        P = _random_simplex(rng, 3)
        lam = np.array(_tri_lambdas(*P.ravel()))
        assert lam.min() >= 0.0 and lam.sum() == pytest.approx(1.0, abs=1e-12)
        x = lam @ P
        assert np.linalg.norm(x) <= np.linalg.norm(_closest_brute(P)) + 1e-12
        np.testing.assert_allclose(x, _closest_brute(P), atol=1e-9)


def test_tetrahedron_weights_give_the_closest_point_or_report_inside() -> None:
    rng = np.random.default_rng(4)
    inside_seen = 0
    for _ in range(2000):
        P = _random_simplex(rng, 4)
        S = np.zeros((9, 10))
        S[:4, :3] = P
        expected = _closest_brute(P)
        if _tetra_lambdas(S):
            # inside: the origin is in the tetrahedron (distance 0)
            assert np.linalg.norm(expected) <= 1e-9
            inside_seen += 1
            continue
        lam = S[:4, 9]
        assert lam.min() >= 0.0 and lam.sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(lam @ P, expected, atol=1e-9)
    assert inside_seen > 0
