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
    """The tetrahedron step is GJK's: ``S[0:3]`` is the previous simplex and ``S[3]`` the new
    support point, so it minimises over the faces containing ``S[3]`` only (the previous
    simplex's own point is GJK's current ``v``, compared by GJK itself). The answer is the
    brute-force closest point of those three faces; where the whole tetrahedron's closest point
    lies inside face 012, it is never closer than that point (GJK then stops on no progress)."""
    rng = np.random.default_rng(4)
    inside_seen = 0
    old_face_best = 0
    for _ in range(3000):
        P = _random_simplex(rng, 4)
        S = np.zeros((9, 10))
        S[:4, :3] = P
        expected_all = _closest_brute(P)
        faces3 = [_closest_brute(P[list(f)]) for f in ((0, 1, 3), (0, 2, 3), (1, 2, 3))]
        expected = min(faces3, key=lambda x: float(x @ x))
        old = _closest_brute(P[:3])
        if _tetra_lambdas(S):
            # inside: the origin is in the tetrahedron (distance 0)
            assert np.linalg.norm(expected_all) <= 1e-9
            inside_seen += 1
            continue
        lam = S[:4, 9]
        assert lam.min() >= 0.0 and lam.sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(lam @ P, expected, atol=1e-9)
        x = lam @ P
        if np.linalg.norm(old) < np.linalg.norm(expected) - 1e-9:
            old_face_best += 1
            assert x @ x >= old @ old - 1e-12
        else:
            np.testing.assert_allclose(x, expected_all, atol=1e-9)
    assert inside_seen > 0 and old_face_best > 0


# --------------------------------------------------------------------------------------------
# GJK's closed-form shortcuts against a cylinder (a box face against the rim, a box vertex
# against the rim or the side): configurations built so that the distance is known exactly.
# A box lies in the half-space {x : u.x <= u.p} for any u in the normal cone of its point p
# (the face normal for a face point, a direction with the vertex's signs for a vertex); a
# cylinder touching the plane u.x = u.p + d at q, with -u in its normal cone at q, lies in
# {x : u.x >= u.p + d}: the distance is exactly d, with witnesses p and q. The shortcuts make
# these contacts exact to round-off; GJK without them stopped at its duality-gap tolerance
# (measured on these cases: distances off by up to 6e-11 m, witnesses 9e-6 m, normals 1.5e-5).
# --------------------------------------------------------------------------------------------


def _rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0.0:
        q[:, 0] = -q[:, 0]
    return np.asarray(q)


def _unit(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / np.linalg.norm(x))


def _cylinder_touching(
    rng: np.random.Generator, q: np.ndarray, u: np.ndarray, radius: float, half: float, where: str
) -> np.ndarray:
    """Pose of a cylinder that has ``q`` on its rim ("rim") or on its side ("side") with the
    outward normal ``-u`` there (so it lies in {x : u.x >= u.q})."""
    t = _unit(np.cross(u, rng.normal(size=3)))  # a unit vector normal to u
    if where == "side":
        axis = t
        centre = q + radius * u + rng.uniform(-0.9, 0.9) * half * axis
    else:
        # -u = cos(th) * (s a) + sin(th) * r: a mix of the cap normal and the radial direction
        th = rng.uniform(0.1, 1.45)
        s = rng.choice([-1.0, 1.0])
        axis = -s * (np.cos(th) * u + np.sin(th) * t)
        radial = -np.sin(th) * u + np.cos(th) * t  # unit, normal to the axis
        radial = -radial if radial @ (-u) < 0.0 else radial
        centre = q - s * half * axis - radius * radial
    z = _unit(axis)
    x = _unit(np.cross(z, rng.normal(size=3)))
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, np.cross(z, x), z])
    T[:3, 3] = centre
    return T


@pytest.mark.parametrize("contact", ["face-rim", "vertex-rim", "vertex-side"])
def test_box_cylinder_contacts_the_shortcuts_target(contact: str) -> None:
    from robot_collision.geometry.distance import distance
    from robot_collision.geometry.shapes import Box, Cylinder

    rng = np.random.default_rng({"face-rim": 11, "vertex-rim": 12, "vertex-side": 13}[contact])
    worst = 0.0
    for _ in range(300):
        half_box = rng.uniform(0.03, 0.4, 3)
        TA = np.eye(4)
        TA[:3, :3] = _rotation(rng)
        TA[:3, 3] = rng.normal(size=3)
        signs = rng.choice([-1.0, 1.0], size=3)
        if contact == "face-rim":
            k = int(rng.integers(3))
            local = rng.uniform(-0.9, 0.9, 3) * half_box
            local[k] = signs[k] * half_box[k]
            normal_local = np.zeros(3)
            normal_local[k] = signs[k]
        else:
            local = signs * half_box
            normal_local = signs * rng.uniform(0.2, 1.0, 3)
        p = TA[:3, :3] @ local + TA[:3, 3]
        u = _unit(TA[:3, :3] @ normal_local)
        d = float(rng.choice([1e-4, 1e-3, 1e-2, 0.1, 0.5]) * rng.uniform(0.5, 2.0))
        radius = float(rng.uniform(0.02, 0.3))
        half = float(rng.uniform(0.02, 0.3))
        TB = _cylinder_touching(rng, p + d * u, u, radius, half, contact.split("-")[1])
        box = Box(*(2.0 * half_box))
        cyl = Cylinder(radius, 2.0 * half)
        for swap in (False, True):
            if swap:
                got, wa, wb, n = distance(cyl, TB, box, TA)
                wa, wb, n = wb, wa, -n
            else:
                got, wa, wb, n = distance(box, TA, cyl, TB)
            worst = max(worst, abs(got - d))
            assert got == pytest.approx(d, abs=1e-12), (contact, swap, got, d)
            np.testing.assert_allclose(wa, p, atol=1e-12)
            np.testing.assert_allclose(n, u, atol=1e-9)
    assert worst < 1e-12
