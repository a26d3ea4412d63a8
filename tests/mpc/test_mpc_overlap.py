"""Steps riding on another computation's openings (mpc/overlap.py): the same values, fewer rounds."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.mpc import Engine
from privbandits.mpc.approximations import reciprocal_steps

DENOMINATORS = [1.0, 1.3, 1.75, 1.99]
SIGNED = [-3.5, -0.25, 0.0, 0.5, 7.0]


def _inputs(engine: Engine, phase: str):
    with engine.phase(phase):
        return engine.input_many([(DENOMINATORS, "p0"), (SIGNED, "p1")])


@pytest.mark.parametrize(("start", "iterations", "steps"), [("linear", 3, 6), ("exp", 7, 22)])
def test_a_reciprocal_rides_on_a_comparison_and_gives_the_same_values(start, iterations, steps):
    """A comparison opens words 7 times (the adder's XOR openings) and packed bits once, then its result
    is opened: up to 8 of the reciprocal's requests ride on those word openings, the rest run after the
    block. Both results equal the sequential run's: the comparison exactly, the reciprocal within
    fixed-point error of 1/d."""
    engine = Engine(2, seed=3)
    d, x = _inputs(engine, "input")
    with engine.phase("sequential"):
        alone = engine.open(engine.reciprocal(d, iterations, start))
        signs = engine.open(engine.ltz(x))
    with engine.phase("overlap"):
        with engine.alongside(reciprocal_steps(engine, d, iterations, start)) as rider:
            riding_signs = engine.open(engine.ltz(x))
        riding = engine.open(rider.result)
    np.testing.assert_array_equal(riding_signs, signs)
    assert signs.tolist() == [1, 1, 0, 0, 0]
    np.testing.assert_allclose(riding, alone, atol=64 * 2.0**-20)
    np.testing.assert_allclose(riding, 1 / np.array(DENOMINATORS), atol=1e-3 if start == "exp" else 1e-4)
    assert rider.rides == min(steps, 8)
    rounds = engine.traffic.rounds
    assert rounds["sequential"] == steps + 8 + 2  # the reciprocal, the comparison, two openings
    assert rounds["overlap"] == 8 + max(steps - 8, 0) + 2
    assert engine.traffic.total("overlap").bytes == engine.traffic.total("sequential").bytes


def test_requests_left_at_the_end_of_the_block_run_on_their_own_rounds():
    """Alongside one multiplication (one opening) a 6-request reciprocal rides once; the other 5 run
    when the block ends, before the next statement."""
    engine = Engine(2, seed=4)
    d, x = _inputs(engine, "input")
    with engine.phase("overlap"):
        with engine.alongside(reciprocal_steps(engine, d, 3, "linear")) as rider:
            square = engine.mul(x, x)
        assert rider.done and rider.rides == 1
    assert engine.traffic.rounds["overlap"] == 6
    with engine.phase("open"):
        np.testing.assert_allclose(engine.open(square), np.square(SIGNED), atol=4 * 2.0**-20)
        np.testing.assert_allclose(engine.open(rider.result), 1 / np.array(DENOMINATORS), atol=1e-4)


def test_riding_needs_local_truncation_and_does_not_nest():
    engine = Engine(3, seed=0)
    with engine.phase("input"):
        d = engine.input(DENOMINATORS, "p0")
    with (
        engine.phase("overlap"),
        pytest.raises(
            ValueError,
            match=r"^steps can ride on other openings only with local truncation \(2 parties\), not 'wraps': "
            r"each request must finish in the opening it rides$",
        ),
        engine.alongside(reciprocal_steps(engine, d, 3, "linear")),
    ):
        pass
    engine = Engine(2, seed=0)
    d, _ = _inputs(engine, "input")
    with engine.phase("overlap"), engine.alongside(reciprocal_steps(engine, d, 3, "linear")):
        with (
            pytest.raises(RuntimeError, match=r"^steps already ride alongside this engine's computation"),
            engine.alongside(reciprocal_steps(engine, d, 3, "linear")),
        ):
            pass


def test_steps_check_their_arguments_when_made():
    engine = Engine(2, seed=0)
    d, _ = _inputs(engine, "input")
    with pytest.raises(ValueError, match=r"^reciprocal start must be one of \('exp', 'linear'\), got 'newton'$"):
        reciprocal_steps(engine, d, 3, "newton")
    with pytest.raises(ValueError, match=r"^Newton-Raphson iterations must be >= 0, got -1$"):
        reciprocal_steps(engine, d, -1, "linear")
