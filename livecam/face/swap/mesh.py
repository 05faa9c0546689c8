"""The face mesh of the classic swapper: 68 landmarks extended over the forehead and just
outside the jaw, its Delaunay triangles, and a fast piecewise-affine remap."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from livecam.errors import LivecamError

Points = npt.NDArray[np.float32]
Triangles = npt.NDArray[np.int32]

LEFT_EYE = slice(36, 42)  # eye on the image's left
RIGHT_EYE = slice(42, 48)
INNER_MOUTH = slice(60, 68)

# Forehead points: brow landmark, and how far above it (in units of the eye-to-chin
# distance). The centre rises most so the top of the mesh follows the forehead's curve.
_FOREHEAD = ((17, 0.20), (19, 0.34), (21, 0.40), (22, 0.40), (24, 0.34), (26, 0.20))
_TEMPLE_RISE = 0.05  # temples: brow ends pushed outwards and a little up
_JAW_OUT = (0, 2, 4, 6, 8, 10, 12, 14, 16)  # jaw points pushed outwards
_JAW_PUSH = 0.06  # outward push, fraction of the eye-to-chin distance
N_EXTENDED = 68 + len(_FOREHEAD) + 2 + len(_JAW_OUT)


def check_landmarks(landmarks: object, what: str) -> Points:
    """Return ``landmarks`` as a (68, 2) float32 array or raise LivecamError."""
    arr = np.asarray(landmarks, dtype=np.float32)
    if arr.shape != (68, 2) or not np.isfinite(arr).all():
        raise LivecamError(
            f"{what}: expected 68 finite (x, y) landmarks of shape (68, 2), got {arr.shape}",
            "use the 68-point landmarker of the offline preset (Face.landmarks)",
        )
    return arr


def face_frame(lm: Points) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], float]:
    """(up unit vector, eye-midpoint, eye-to-chin distance) of a face."""
    le = lm[LEFT_EYE].mean(axis=0)
    re = lm[RIGHT_EYE].mean(axis=0)
    mid = (le + re) / 2
    across = re - le
    n = float(np.linalg.norm(across)) or 1.0
    up = np.array([across[1], -across[0]], np.float32) / n  # perpendicular, pointing up
    if np.dot(up, lm[8] - mid) > 0:  # chin must be "down"
        up = -up
    size = float(np.linalg.norm(lm[8] - mid)) or n
    return up, mid.astype(np.float32), size


def extend_landmarks(lm: Points) -> Points:
    """68 landmarks + forehead, temple and outer-jaw points (N_EXTENDED, 2).

    The same rule runs on source and target, so the extra points correspond."""
    up, _, size = face_frame(lm)
    centre = lm[27:36].mean(axis=0)  # nose
    extra: list[npt.NDArray[np.float32]] = []
    for idx, k in _FOREHEAD:
        extra.append(lm[idx] + up * (k * size))
    for idx in (17, 26):
        out = lm[idx] - centre
        out /= float(np.linalg.norm(out)) or 1.0
        extra.append(lm[idx] + out * (0.08 * size) + up * (_TEMPLE_RISE * size))
    for idx in _JAW_OUT:
        out = lm[idx] - centre
        out /= float(np.linalg.norm(out)) or 1.0
        extra.append(lm[idx] + out * (_JAW_PUSH * size))
    return np.vstack([lm, np.asarray(extra, np.float32)]).astype(np.float32)


def delaunay(points: Points) -> Triangles:
    """Delaunay triangles over ``points`` as (T, 3) vertex indices."""
    lo = points.min(axis=0) - 10
    hi = points.max(axis=0) + 10
    rect = (int(lo[0]), int(lo[1]), int(hi[0] - lo[0]) + 1, int(hi[1] - lo[1]) + 1)
    sub = cv2.Subdiv2D(rect)
    for p in points:
        sub.insert((float(p[0]), float(p[1])))
    tris: list[tuple[int, int, int]] = []
    for t in sub.getTriangleList():
        verts = np.asarray(t, np.float32).reshape(3, 2)
        idx = []
        for v in verts:
            d = np.abs(points - v).sum(axis=1)
            j = int(np.argmin(d))
            if d[j] > 1e-3:
                break
            idx.append(j)
        if len(idx) == 3 and len(set(idx)) == 3:
            tris.append((idx[0], idx[1], idx[2]))
    if not tris:
        raise LivecamError("could not triangulate the source face landmarks (degenerate face)")
    return np.asarray(tris, np.int32)


def affine_table(src_pts: Points, dst_pts: Points, tris: Triangles) -> npt.NDArray[np.float32]:
    """Per triangle, the 2x3 affine mapping destination coords to source coords, as (T, 6).

    Degenerate destination triangles get a tiny determinant instead of failing."""
    d = dst_pts[tris].astype(np.float64)  # (T, 3, 2)
    s = src_pts[tris].astype(np.float64)
    x0, y0 = d[:, 0, 0], d[:, 0, 1]
    ux, uy = d[:, 1, 0] - x0, d[:, 1, 1] - y0
    vx, vy = d[:, 2, 0] - x0, d[:, 2, 1] - y0
    det = ux * vy - uy * vx
    det = np.where(np.abs(det) < 1e-6, 1e-6, det)
    # inverse of [[ux, vx], [uy, vy]]
    i00, i01, i10, i11 = vy / det, -vx / det, -uy / det, ux / det
    su = s[:, 1] - s[:, 0]  # (T, 2)
    sv = s[:, 2] - s[:, 0]
    # M = [su sv] @ inv(D)  (2x2), t = s0 - M @ d0
    m00 = su[:, 0] * i00 + sv[:, 0] * i10
    m01 = su[:, 0] * i01 + sv[:, 0] * i11
    m10 = su[:, 1] * i00 + sv[:, 1] * i10
    m11 = su[:, 1] * i01 + sv[:, 1] * i11
    t0 = s[:, 0, 0] - m00 * x0 - m01 * y0
    t1 = s[:, 0, 1] - m10 * x0 - m11 * y0
    return np.stack([m00, m01, t0, m10, m11, t1], axis=1).astype(np.float32)


def piecewise_affine_maps(
    src_pts: Points,
    dst_pts: Points,
    tris: Triangles,
    roi_shape: tuple[int, int],
    step: int = 2,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.uint8]]:
    """Remap tables (map_x, map_y) of size ``roi_shape`` sending each ROI pixel inside the
    destination mesh to its source position, plus the mesh coverage mask (uint8 0/255).

    ``dst_pts`` are in ROI coordinates. The map is evaluated on a grid of every ``step``-th
    pixel and upsampled bilinearly: a piecewise-affine map is continuous across triangle
    edges, so this is exact up to interpolation inside each triangle's border pixels.
    """
    h, w = roi_shape
    sh, sw = (h + step - 1) // step, (w + step - 1) // step
    table = np.vstack([np.zeros((1, 6), np.float32), affine_table(src_pts, dst_pts, tris)])
    labels = np.zeros((sh, sw), np.uint8 if len(tris) < 255 else np.uint16)
    off = (step - 1) / 2.0  # grid sample i sits at pixel i*step + off (cv2.resize's convention)
    small = (dst_pts - off) / step
    # Fill each triangle slightly grown so the grid samples at triangle edges get a label.
    for i, t in enumerate(tris):
        poly = np.round(small[t] * 16).astype(np.int32)
        cv2.fillConvexPoly(labels, poly, i + 1, cv2.LINE_8, shift=4)
        cv2.polylines(labels, [poly], True, i + 1, 1, cv2.LINE_8, shift=4)
    coeff = table[labels]  # (sh, sw, 6)
    xs = (np.arange(sw, dtype=np.float32) * step + off)[None, :]
    ys = (np.arange(sh, dtype=np.float32) * step + off)[:, None]
    mx = coeff[..., 0] * xs + coeff[..., 1] * ys + coeff[..., 2]
    my = coeff[..., 3] * xs + coeff[..., 4] * ys + coeff[..., 5]
    if step > 1:
        big_w, big_h = sw * step, sh * step
        mx = cv2.resize(mx, (big_w, big_h), interpolation=cv2.INTER_LINEAR)[:h, :w]
        my = cv2.resize(my, (big_w, big_h), interpolation=cv2.INTER_LINEAR)[:h, :w]
    coverage = np.zeros((h, w), np.uint8)
    hull = cv2.convexHull(np.round(dst_pts * 16).astype(np.int32))
    cv2.fillConvexPoly(coverage, hull, 255, cv2.LINE_8, shift=4)
    return mx, my, coverage


# Cheek and nose polygons where plain skin is sampled (shrunk toward their centre so the
# face outline, eyes and mouth stay out).
_SKIN_POLYS = (
    (36, 41, 40, 39, 31, 48, 4, 3, 2, 1),
    (45, 46, 47, 42, 35, 54, 12, 13, 14, 15),
    (27, 39, 31, 33, 35, 42),
)


def skin_sample_polygons(lm: Points, shrink: float = 0.65) -> list[Points]:
    """Polygons over the cheeks and nose of a 68-landmark face, for skin-colour sampling."""
    polys = []
    for idx in _SKIN_POLYS:
        p = lm[list(idx)]
        c = p.mean(axis=0)
        polys.append((c + (p - c) * shrink).astype(np.float32))
    return polys
