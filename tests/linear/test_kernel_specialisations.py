"""Each numba kernel compiles once per genuine input type, whatever flags and literals its callers' values carry.

numba types a read-only array apart from a writable one, a literal ``0`` apart from an int64 and an omitted
default apart from a passed bool: a kernel called both ways compiles twice (seconds for the population
kernels, in every fresh clone's test run). The workload below feeds the public API read-only arrays (as an
environment, ``np.broadcast_to`` or a memory map hand them out) and writable ones; afterwards no kernel may
hold two specialisations that are the same once those distinctions are dropped.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core import types

import privbandits.linear._kernels
import privbandits.linear.population.code_kernels
import privbandits.linear.population.dense_kernels
import privbandits.linear.population.picking
import privbandits.privacy.encoding
import privbandits.protocols.fclub.numerics
from privbandits.linear import LinUCB
from privbandits.linear.population import (
    BatchedCodeLinUCB,
    BatchedLinUCB,
    CodeModel,
    DisjointModel,
    run_population,
)
from privbandits.privacy.encoding import ContextEncoder, grid_size, round_to_grid
from privbandits.protocols.fclub import Repairs, _logdet, _spd_inverse
from privbandits.protocols.fclub.config import PDRepair

KERNEL_MODULES = (
    privbandits.linear._kernels,
    privbandits.linear.population.code_kernels,
    privbandits.linear.population.dense_kernels,
    privbandits.linear.population.picking,
    privbandits.privacy.encoding,
    privbandits.protocols.fclub.numerics,
)
EXERCISED = {  # kernels the workload calls from Python, so that their check is not vacuous
    "sherman_morrison_step", "shared_ucb_scores", "cholesky_inverse", "cholesky_logdet", "_dense_scores_all",
    "_dense_update_all", "_dense_run", "_dense_population", "_code_scores_all", "_code_update_all", "_code_run",
    "_code_population", "_lookup_codes", "_nearest_kernel", "_round_rows",
}  # fmt: skip
"""Kernels called only from compiled code (``inverse_step``, ``_dense_play``, ``_find_slot``, ...) get their
signatures when their callers compile, not when the callers load from numba's on-disk cache: with a cold
cache (a fresh clone, where the compile time counts) they are checked too."""


def kernels() -> dict[str, numba.core.registry.CPUDispatcher]:
    """Every numba dispatcher defined in the kernel modules, by name."""
    return {
        name: value
        for module in KERNEL_MODULES
        for name, value in vars(module).items()
        if isinstance(value, numba.core.registry.CPUDispatcher) and value.py_func.__module__ == module.__name__
    }


def genuine(argument: types.Type) -> types.Type:
    """The type an argument would have without its read-only flag, its literal value or its omission."""
    if isinstance(argument, types.Array):
        return argument.copy(readonly=False)
    if isinstance(argument, types.Omitted):
        return numba.typeof(argument.value)
    return types.unliteral(argument)


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only copy, as an environment or a memory map hands contexts out."""
    array = np.array(array)
    array.setflags(write=False)
    return array


def run_workload(rng: np.random.Generator) -> None:
    """Every kernel reached through the public API, each input once read-only and once writable."""
    n_users, n_rounds, dim, n_arms, n_codes = 3, 4, 3, 2, 5
    for make in (frozen, np.array):
        contexts = make(rng.random((n_users, n_rounds, dim)))
        codes = make(rng.integers(0, n_codes, (n_users, n_rounds)))
        table = make(rng.random((n_users, n_rounds, n_arms)))
        for model in (DisjointModel.cold(n_arms, dim), DisjointModel(3 * np.eye(dim)[None].repeat(n_arms, 0),
                                                                     np.ones((n_arms, dim)))):  # fmt: skip
            run_population(model, contexts, table, refresh_every=0)
            run_population(model, contexts, table, refresh_every=2)
            agents = BatchedLinUCB(model, n_users, refresh_every=1)
            agents.update(contexts[:, 0], agents.select(contexts[:, 0]), table[:, 0, 0])
        run_population(CodeModel.cold(n_arms, n_codes), codes, table)
        run_population(CodeModel.cold(n_arms, n_codes), codes, table, shared_agent=True)
        code_agents = BatchedCodeLinUCB(CodeModel.cold(n_arms, n_codes), n_users)
        code_agents.update(codes[:, 0], code_agents.select(codes[:, 0]), table[:, 0, 0])
        policy = LinUCB(n_arms, dim, layout="disjoint")
        policy.update(contexts[0, 0], policy.select(contexts[0, 0]), 1.0)
        shared = LinUCB(n_arms, dim, layout="shared")
        shared.update(contexts[0, :n_arms], shared.select(contexts[0, :n_arms]), 1.0)
        gram = 4 * np.eye(dim)  # fclub passes its own (writable) sums
        _spd_inverse(gram, PDRepair.CLIP, 1.0, Repairs())
        _logdet(gram)
        on_grid = ContextEncoder(np.eye(dim), 1, [grid_size(dim, 1) - 2, 1, 1], True)
        on_grid.encode(make(rng.random((5, dim))))
        on_grid.encode(make(np.full((2, dim), 1 / dim)))
        off_table = ContextEncoder(np.eye(6), 2, [grid_size(6, 2) - 5, 1, 1, 1, 1, 1], True)
        off_table.encode(make(rng.random((5, 6))))
        round_to_grid(make(rng.random((4, dim))), 1)


def test_kernels_compile_once_per_genuine_input_type() -> None:
    run_workload(np.random.default_rng(0))
    found = kernels()
    assert EXERCISED <= set(found), f"kernels not found: {sorted(EXERCISED - set(found))}"
    not_run = sorted(name for name in EXERCISED if not found[name].signatures)
    assert not not_run, f"the workload did not run {not_run}"
    twice = {
        name: [str(signature) for signature in dispatcher.signatures]
        for name, dispatcher in found.items()
        if len({tuple(map(genuine, signature)) for signature in dispatcher.signatures}) < len(dispatcher.signatures)
    }
    assert not twice, f"kernels compiled twice for one genuine input type: {twice}"


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        (types.Array(types.float64, 2, "C", readonly=True), types.Array(types.float64, 2, "C")),
        (types.literal(0), types.int64),
        (types.Omitted(True), types.boolean),
        (types.float64, types.float64),
    ],
)
def test_genuine_drops_only_the_flag_the_literal_and_the_omission(argument, expected) -> None:
    assert genuine(argument) == expected
