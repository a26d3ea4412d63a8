"""The types a checker sees on the message layer and the MPC engine: `make test`'s mypy checks this file too
(pyproject.toml's [tool.mypy] ``files``), so an ``assert_type`` here that no longer holds fails it; at run time
the same values are checked."""

from typing import assert_type

import numpy as np
import pytest

from privbandits.comm import InMemoryNetwork, Message, Party
from privbandits.mpc import Engine
from privbandits.mpc.approximations import reciprocal_steps
from privbandits.mpc.sharing import ArithmeticShares
from privbandits.protocols.fclub.messages import PhaseEnd, Upload


def test_a_message_received_by_its_class_is_typed_as_it_with_its_fields() -> None:
    network = InMemoryNetwork()
    local, glob = Party("local", network), Party("global", network)
    with network.phase("test"):
        local.send("global", Upload(3, np.eye(2), np.ones(2), 4))
        local.send("global", PhaseEnd(True))
        upload = glob.receive(Upload, "local")
        by_name = glob.receive(PhaseEnd.kind, "local")  # by its kind's name: only a Message to the checker
    assert_type(upload, Upload)
    assert_type(upload.cluster, int)
    assert_type(upload.gram, np.ndarray)
    assert (upload.cluster, upload.count) == (3, 4)
    np.testing.assert_array_equal(upload.gram, np.eye(2))
    assert_type(by_name, Message)
    assert isinstance(by_name, PhaseEnd) and by_name.renewal is True


def test_a_riding_reciprocal_is_shares_once_done_and_an_error_before() -> None:
    engine = Engine(2, seed=4)
    with engine.phase("input"):
        d, x = engine.input_many([([1.0, 1.25], "p0"), ([-0.5, 2.0], "p1")])
    assert_type(d, ArithmeticShares)
    with engine.phase("overlap"):
        with engine.alongside(reciprocal_steps(engine, d, 3, "linear")) as rider:
            square = engine.mul(x, x)  # one opening: the first of the reciprocal's 6 requests rides on it
            with pytest.raises(RuntimeError, match="the steps are not done"):
                rider.result  # noqa: B018  (the property's check is what is tested)
    assert rider.done
    with engine.phase("open"):
        reciprocal = engine.open(rider.result)
        assert_type(reciprocal, np.ndarray)
        np.testing.assert_allclose(reciprocal, [1.0, 0.8], atol=1e-4)
        np.testing.assert_allclose(engine.open(square), [0.25, 4.0], atol=1e-4)
