"""@mixjit on awkward input: site blocks never shared across processes, statements the importer
cannot model, f.dag ids, bad argument types, failed compilations, and site forms. Failures
inside mixjit itself: test_safety_net.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import njit, objmode

from mixjit import entry, mixjit

NATIVE = dict(schemes=["native"])
A = np.arange(6.0).reshape(2, 3) / 5


# -- 1. site blocks of cached code and fresh code never collide ----------------------------

MODULE = textwrap.dedent(
    """
    def body(a, b):
        return a @ b
    """
)

RUN = textwrap.dedent(
    """
    import json, os, sys
    os.getpid = lambda: 4242  # containers and CI often give every fresh Python one process id
    import numpy as np
    from mixjit import mixjit
    import blockmod

    a = np.ones((2, 3))
    cached = mixjit(cache=True, schemes=["native"])(blockmod.body)
    cached(a, a.T)
    out = {"hits": sum(cached.stats.cache_hits.values()), "cached": [s.id for s in cached.sites]}
    if sys.argv[1] == "fresh":
        fresh = mixjit(schemes=["native"])(blockmod.body)
        fresh(a, a.T)
        out["fresh"] = [s.id for s in fresh.sites]
    print(json.dumps(out))
    """
)


def _run(tmp_path, mode):
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", RUN, mode], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fresh_compile_never_reuses_a_cached_functions_site_block(tmp_path):
    (tmp_path / "blockmod.py").write_text(MODULE)
    assert _run(tmp_path, "save")["hits"] == 0
    second = _run(tmp_path, "fresh")  # same process id, same compile order
    assert second["hits"] == 1
    assert len(second["fresh"]) == 1 and not set(second["fresh"]) & set(second["cached"])


# -- 2. a construct the importer cannot model keeps the other sites ------------------------

def _with_objmode(a, b):
    c = a @ b
    d = {1: 2.0}
    with objmode(e="float64[:, :]"):
        e = np.dot(a, b)
    if c.shape[0] > 5:
        raise ValueError("too big", c.shape[0])
    return c + e * d[1]


def test_unknown_statements_keep_sites_and_objmode_products_are_reported():
    f = mixjit(**NATIVE)(_with_objmode)
    np.testing.assert_array_equal(f(A, A.T), njit(_with_objmode)(A, A.T))
    taken = [s for s in f.sites if s.taken]
    (rejected,) = [s for s in f.sites if not s.taken]
    assert [(s.form, s.calls) for s in taken] == [("a @ b", 1)]
    assert rejected.form == "np.dot(a, b)" and rejected.reason.startswith("object-mode:")


# -- 3. f.dag nodes are the ids of f.sites / f.call_counts() -------------------------------

@njit
def _gram(x):
    return x.T @ x


def _with_helper(a, b):
    c = np.matmul(a, np.transpose(b))
    return _gram(c) + b.transpose() @ b


def test_dag_nodes_are_process_site_ids_and_forms_say_what_the_source_said():
    f = mixjit(**NATIVE)(_with_helper)
    b = np.ones((3, 3))
    f(b, b)
    by_id = {s.id: s for s in f.sites}
    dag = f.dag
    assert set(dag.nodes) == set(f.call_counts()) == set(by_id)
    for node, data in dag.nodes(data=True):
        assert (data["function"], data["line"]) == (by_id[node].function.split(".")[-1],
                                                     int(by_id[node].loc.rsplit(":", 1)[1]))
    main = {by_id[n].form: n for n in dag.nodes if by_id[n].function == "_with_helper"}
    (helper,) = [n for n in dag.nodes if by_id[n].function == "_gram"]
    assert set(main) == {"np.matmul(a, np.transpose(b))", "a.transpose() @ b"}
    assert by_id[helper].form == "a.T @ b"
    assert dag.has_edge(main["np.matmul(a, np.transpose(b))"], helper)


def test_ir_does_not_compile_the_original_helpers():
    @njit
    def helper(x):
        return x @ x

    f = mixjit(**NATIVE)(lambda a: helper(a) + 1.0)
    assert "py.call" in f.ir(np.ones((2, 2)))
    assert helper.signatures == []


# -- 4. bad argument types name the argument -------------------------------------------

def test_object_arguments_are_refused_by_name():
    f = mixjit(**NATIVE)(lambda a, b: a @ b)
    with pytest.raises(TypeError, match=r"argument 'b' of \S*<lambda> is an object, which Numba"):
        f(np.eye(2), object())
    with pytest.raises(TypeError, match=r"argument 'b' of \S*<lambda> is a NumPy array of dtype object"):
        f(np.eye(2), np.array([[object()]], dtype=object))
    assert f.signatures == []


# -- 5. a compilation that fails after the typed hook leaves nothing behind ---------------

def test_failed_lowering_uses_no_site_id_and_names_the_argument():
    def fn(a, b, h):
        return a @ b

    f = mixjit(**NATIVE)(fn)
    first = entry.new_sites(0)
    with pytest.raises(NotImplementedError) as info:
        f(A, A.T, np.ones(2, np.float16))  # types, then Numba has no float16 data model
    assert any("argument 'h' (array(float16, 1d, C))" in n for n in info.value.__notes__)
    assert entry.new_sites(0) == first and f.signatures == [] and f.sites == []
    f(A, A.T, np.ones(2))
    (site,) = f.sites
    assert site.id == first and site.calls == 1
