"""The scratch intrinsics of runtime/jit/scratch_arrays.py and the small path's scratch sizes."""

from __future__ import annotations

import numpy as np
from numba import njit

from mixjit.runtime.jit.scratch_arrays import any_layout, carve, stack_array
from mixjit.runtime.mixpert.paths.small import STACK_WORDS, _operand_views, scratch_words


@njit
def _carved(buf, offset, rows, cols):
    return carve(buf, offset, rows, cols).copy()


def test_carve_is_the_reshaped_slice():
    buf = np.arange(40, dtype=np.int64)
    for offset, rows, cols in ((0, 1, 1), (3, 4, 5), (7, 3, 11), (0, 5, 8)):
        assert np.array_equal(_carved(buf, offset, rows, cols), buf[offset: offset + rows * cols].reshape(rows, cols))


@njit
def _carve_writes(buf):
    v = carve(buf, 2, 2, 3)
    v[1, 2] = -1.0
    return v.strides


def test_carve_writes_through_to_the_buffer():
    buf = np.zeros(10)
    assert _carve_writes(buf) == (24, 8)
    assert buf[2 + 1 * 3 + 2] == -1.0 and np.count_nonzero(buf) == 1


@njit
def _stack_sum(calls):
    total = 0
    for c in range(calls):
        s = stack_array(64, np.int64)  # one slot in the frame, reused by every iteration
        for i in range(64):
            s[i] = i + c
        total += carve(s, 8, 4, 8).sum() - s.shape[0]
    return total


def test_stack_array_in_a_loop():
    calls = 200_000  # a stack that grew per iteration would overflow long before this
    expected = sum(sum(range(8, 40)) + 32 * c - 64 for c in range(calls))
    assert _stack_sum(calls) == expected


@njit
def _via_any_layout(x):
    y = any_layout(x)
    y[0, 1] = 5.0
    return y.shape, y.strides


def test_any_layout_is_the_same_array():
    x = np.zeros((3, 4))
    assert _via_any_layout(x) == ((3, 4), (32, 8))
    assert x[0, 1] == 5.0


@njit
def _tag_views(m, n, K, nkt):
    """Fill every view of both operands with its own tag; the sizes per tag."""
    n_ints, n_floats = scratch_words(m, n, K, nkt)
    ints = np.full(n_ints, -1, np.int64)
    floats = np.full(n_floats, -1.0)
    views_a = _operand_views(ints, floats, 0, 0, m, K, nkt)
    views_b = _operand_views(ints, floats, m * (2 * K + nkt + 3), m * (2 * K + nkt), n, K, nkt)
    sizes = np.zeros(18, np.int64)
    tag = 0
    for v2 in views_a[:3] + views_b[:3]:
        v2[:] = tag
        sizes[tag] = v2.size
        tag += 1
    for v1 in views_a[3:6] + views_b[3:6]:
        v1[:] = tag
        sizes[tag] = v1.size
        tag += 1
    for f2 in views_a[6:] + views_b[6:]:
        f2[:] = tag
        sizes[tag] = f2.size
        tag += 1
    return ints, floats, sizes


def test_operand_views_tile_the_scratch_without_overlap():
    """Every int64 word lies in exactly one view (a view overlapping another loses
    words to it); the float64 views end where the three m x n results begin."""
    for m, n, K, nkt in ((1, 1, 1, 1), (4, 4, 4, 1), (3, 5, 7, 3), (8, 2, 9, 2)):
        ints, floats, sizes = _tag_views(m, n, K, nkt)
        assert np.array_equal(np.bincount(ints, minlength=12)[:12], sizes[:12]), (m, n, K, nkt)
        used = floats[floats >= 0].astype(np.int64)
        assert np.array_equal(np.bincount(used, minlength=18)[12:], sizes[12:]), (m, n, K, nkt)
        assert np.count_nonzero(floats < 0) == 3 * m * n and np.all(floats[-3 * m * n:] < 0)


def test_tiny_calls_fit_the_stack_buffers():
    assert max(scratch_words(8, 8, 8, 1)) <= STACK_WORDS
    assert max(scratch_words(16, 16, 16, 1)) > STACK_WORDS  # larger calls take the heap


def test_c_layout_views_only_c_ordered_arrays():
    """is_c_contiguous accepts C-ordered arrays (any stride across a single row) and
    rejects strided views; c_layout's view of a C-ordered strided-typed array reads
    the same elements."""
    from numba import njit

    from mixjit.runtime.jit.scratch_arrays import any_layout, c_layout, is_c_contiguous

    @njit
    def through_views(x):
        y = any_layout(x)  # typed as a strided view, like a site's operand
        if not is_c_contiguous(y):
            return -1.0
        z = c_layout(y)
        s = 0.0
        for i in range(z.shape[0]):
            for j in range(z.shape[1]):
                s = s * 3.0 + z[i, j]
        return s

    x = np.arange(12.0).reshape(3, 4)
    want = 0.0
    for v in x.ravel():
        want = want * 3.0 + v
    assert through_views(x) == want
    assert through_views(np.arange(3.0).reshape(3, 1)) == (0.0 * 3.0 + 1.0) * 3.0 + 2.0  # one column, adjacent rows
    assert through_views(x[1:2]) != -1.0  # one row: any row stride
    assert through_views(x[:, :1]) == -1.0  # one column, rows 4 elements apart
    assert through_views(np.asfortranarray(x)) == -1.0
    assert through_views(x[:, ::2]) == -1.0
    assert through_views(x[:, :3]) == -1.0  # rows not adjacent
