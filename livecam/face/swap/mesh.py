"""The face mesh of the classic swapper: 68 landmarks extended over the forehead and just
outside the jaw, its Delaunay triangles, and a fast piecewise-affine remap."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from livecam.errors import LivecamError

Points = npt.NDArray[np.float32]
Triangles = npt.NDArray[np.int32]

JAW = slice(0, 17)
NOSE = slice(27, 36)
LEFT_EYE = slice(36, 42)  # eye on the image's left
RIGHT_EYE = slice(42, 48)
INNER_MOUTH = slice(60, 68)

# How much of the source's face shape each of the 68 points takes (times the swapper's
# shape weight). Only the jaw line and the nose carry identity without expression; brows,
# eyelids and lips (17-26, 36-67) follow the camera exactly so its expression shows. Points
# next to them (jaw ends at the temples, the nose bridge between the eyes, the nostrils
# over the upper lip) take less, so the displacement fades instead of stepping.
SHAPE_WEIGHTS = np.zeros(68, np.float32)
SHAPE_WEIGHTS[JAW] = (0.5, 0.8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.8, 0.5)
SHAPE_WEIGHTS[NOSE] = (0.3, 0.5, 0.7, 0.8, 0.6, 0.6, 0.6, 0.6, 0.6)
# the lower jaw (chin and its sides) follows the mouth's opening: weights of the drop
_JAW_DROP = {5: 0.4, 6: 0.7, 7: 0.9, 8: 1.0, 9: 0.9, 10: 0.7, 11: 0.4}

# Forehead points: brow landmark, and how far above it (in units of the eye-to-chin
# distance). The centre rises most so the top of the mesh follows the forehead's curve.
_FOREHEAD = ((17, 0.24), (19, 0.34), (21, 0.40), (22, 0.40), (24, 0.34), (26, 0.24))
_TEMPLE_RISE = 0.06  # temples: brow ends pushed outwards and a little up
# how far the temples lie beyond the brow ends: a feather's width, so the mask is whole over
# the brow tails (the camera's brows never show beside the source's)
_TEMPLE_OUT = 0.17
_JAW_OUT = (0, 2, 4, 6, 8, 10, 12, 14, 16)  # jaw points pushed outwards
_JAW_PUSH = 0.06  # outward push, fraction of the eye-to-chin distance
N_EXTENDED = 68 + len(_FOREHEAD) + 2 + len(_JAW_OUT)
_FOREHEAD_IDX = [i for i, _ in _FOREHEAD]
_FOREHEAD_RISE = np.array([k for _, k in _FOREHEAD], np.float32)
_SIDE_IDX = [17, 26, *_JAW_OUT]  # temples, then the outer jaw: pushed away from the nose
_SIDE_PUSH = np.array([_TEMPLE_OUT] * 2 + [_JAW_PUSH] * len(_JAW_OUT), np.float32)


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


def extend_landmarks(lm: Points, frame_of: Points | None = None) -> Points:
    """68 landmarks + forehead, temple and outer-jaw points (N_EXTENDED, 2).

    The same rule runs on source and target, so the extra points correspond. The face's
    up direction, size and centre come from ``frame_of`` when given (the camera's own
    landmarks, when ``lm`` is their blend with the source's shape: the forehead then rides
    on the camera's brows at the camera's scale)."""
    ref = lm if frame_of is None else frame_of
    up, _, size = face_frame(ref)
    centre = ref[27:36].mean(axis=0)  # nose
    forehead = lm[_FOREHEAD_IDX] + _FOREHEAD_RISE[:, None] * (up * size)
    sides = lm[_SIDE_IDX]
    out = sides - centre
    norm = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.where(norm > 0, norm, 1.0)
    push = _SIDE_PUSH[:, None] * (out * size)
    push[:2] += up * (_TEMPLE_RISE * size)  # the temples also rise a little
    return np.vstack([lm, forehead, sides + push]).astype(np.float32)


# Points that keep their place relative to the skull whatever the expression: the upper
# jaw line, the nose and the eye corners (the similarity that aligns two faces' shapes).
_STABLE = (0, 1, 2, 14, 15, 16, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 39, 42, 45)


def align_shape(source: Points, target: Points) -> Points:
    """``source``'s 68 landmarks moved onto ``target``'s by the least-squares similarity of
    their expression-free points (``_STABLE``); ``source`` itself when none fits."""
    idx = list(_STABLE)
    src, dst = source[idx].astype(np.float64), target[idx].astype(np.float64)
    ms, md = src.mean(axis=0), dst.mean(axis=0)
    zs = (src[:, 0] - ms[0]) + 1j * (src[:, 1] - ms[1])
    zd = (dst[:, 0] - md[0]) + 1j * (dst[:, 1] - md[1])
    den = float(np.vdot(zs, zs).real)
    if den < 1e-9:
        return source
    a = complex(np.vdot(zs, zd)) / den  # scale and rotation, least squares
    z = (source[:, 0] - ms[0]) + 1j * (source[:, 1] - ms[1])
    out = a * z
    return np.stack([out.real + md[0], out.imag + md[1]], axis=1).astype(np.float32)


def _signed_areas(pts: Points, tris: Triangles) -> npt.NDArray[np.float32]:
    a, b, c = pts[tris[:, 0]], pts[tris[:, 1]], pts[tris[:, 2]]
    cross = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    return np.asarray(cross, np.float32)


def blend_shape(
    target: Points,
    aligned: Points,
    weight: float,
    tris: Triangles,
    weights: npt.NDArray[np.float32] | None = None,
) -> Points:
    """The extended mesh of the camera face ``target`` (68 landmarks) with its jaw line and
    nose moved toward the source's shape ``aligned`` (the source's landmarks aligned onto it,
    ``align_shape``), point ``i`` by ``weight * weights[i]`` of the way (``weights``: by
    default ``SHAPE_WEIGHTS``): brows, lids and lips stay exactly the camera's (its
    expression), the forehead rides on its brows.

    The source's chin first drops by how much wider the camera's mouth is open than the
    source's (a mouth opens by dropping the jaw), so the chin follows speech. A blend that
    would fold a triangle of the mesh (``tris``) is halved until none folds."""
    base = extend_landmarks(target)
    if weight <= 0:
        return base
    up, _, size = face_frame(target)
    src = aligned.copy()
    # inner-lip gap (downwards, px): how much more the camera's mouth is open
    drop = float(np.dot(src[66] - src[62], up) - np.dot(target[66] - target[62], up))
    for i, k in _JAW_DROP.items():
        src[i] -= up * (k * drop)
    per_point = SHAPE_WEIGHTS if weights is None else weights
    delta = (src - target) * (per_point[:, None] * np.float32(weight))
    before = _signed_areas(base, tris)
    solid = np.abs(before) > 1e-4 * size * size
    for scale in (1.0, 0.5, 0.25):
        ext = extend_landmarks((target + scale * delta).astype(np.float32), frame_of=target)
        after = _signed_areas(ext, tris)
        if not np.any(solid & (np.sign(after) != np.sign(before))):
            return ext
    return base


def outline(tris: Triangles) -> npt.NDArray[np.int32]:
    """The vertex indices of a triangulation's outer boundary, in order around it (the
    edges that belong to one triangle only, chained)."""
    count: dict[tuple[int, int], int] = {}
    for t in tris:
        for a, b in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0])):
            key = (int(min(a, b)), int(max(a, b)))
            count[key] = count.get(key, 0) + 1
    nxt: dict[int, list[int]] = {}
    for (a, b), n in count.items():
        if n == 1:
            nxt.setdefault(a, []).append(b)
            nxt.setdefault(b, []).append(a)
    if not nxt:
        return np.zeros(0, np.int32)
    start = min(nxt)
    loop, prev, cur = [start], -1, start
    while True:
        step = [v for v in nxt[cur] if v != prev]
        if not step or step[0] == start or len(loop) > len(nxt):
            break
        prev, cur = cur, step[0]
        loop.append(cur)
    return np.asarray(loop, np.int32)


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


def _per_label(
    table: npt.NDArray[np.float32], labels: npt.NDArray[np.uint8 | np.uint16]
) -> list[npt.NDArray[np.float32]]:
    """Each column of ``table`` (a row per label) at each of ``labels``: a lookup table
    per column where the labels fit one (a quarter of numpy's indexing's cost)."""
    if labels.dtype != np.uint8:
        return [column[labels] for column in table.T]
    lut = np.zeros((256, table.shape[1]), np.float32)
    lut[: len(table)] = table
    return [
        np.asarray(cv2.LUT(labels, np.ascontiguousarray(column)), np.float32) for column in lut.T
    ]


def piecewise_affine_maps(
    src_pts: Points,
    dst_pts: Points,
    tris: Triangles,
    roi_shape: tuple[int, int],
    step: int = 2,
    boundary: npt.NDArray[np.int32] | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.uint8]]:
    """Remap tables (map_x, map_y) of size ``roi_shape`` sending each ROI pixel inside the
    destination mesh to its source position, plus the mesh coverage mask (uint8 0/255):
    the polygon of ``dst_pts[boundary]`` (the triangulation's ``outline``: exactly the
    pixels the triangles cover), else the points' convex hull.

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
    polys = np.round(small[tris] * 16).astype(np.int32)  # (T, 3, 2), 4 fractional bits
    fill, lines, line8 = cv2.fillConvexPoly, cv2.polylines, cv2.LINE_8  # ~150 calls each
    for label, poly in enumerate(list(polys), 1):
        fill(labels, poly, label, line8, 4)  # shift=4, positional: 0.32 -> 0.24 ms a face
        lines(labels, (poly,), True, label, 1, line8, 4)
    c = _per_label(table, labels)  # each coefficient per grid sample (sh, sw)
    xs = (np.arange(sw, dtype=np.float32) * step + off)[None, :]
    ys = (np.arange(sh, dtype=np.float32) * step + off)[:, None]
    mx = c[0] * xs + c[1] * ys + c[2]
    my = c[3] * xs + c[4] * ys + c[5]
    if step > 1:
        big_w, big_h = sw * step, sh * step
        mx = np.asarray(cv2.resize(mx, (big_w, big_h), interpolation=cv2.INTER_LINEAR), np.float32)[
            :h, :w
        ]
        my = np.asarray(cv2.resize(my, (big_w, big_h), interpolation=cv2.INTER_LINEAR), np.float32)[
            :h, :w
        ]
    coverage = np.zeros((h, w), np.uint8)
    if boundary is not None and len(boundary) >= 3:
        poly = np.round(dst_pts[boundary] * 16).astype(np.int32)
        cv2.fillPoly(coverage, [poly], 255, cv2.LINE_8, shift=4)
    else:
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
