"""Toy served roles for the tests: a feature holder of rows three wide by user, and a role with no application API."""

from __future__ import annotations

import json

import numpy as np

from privbandits.serve.role import FeatureHolder, FeaturePut, Refused, ServedRole

WIDTH = 3


class Rows(FeatureHolder):
    """A toy feature holder: rows of width 3 by user; it records its lifecycle."""

    kind = "toy-rows"

    def __init__(self) -> None:
        self.rows: dict[str, np.ndarray] = {}
        self.version = 0
        self.calls: list[str] = []

    def identity(self) -> str:
        return "toy-rows/1"

    def start(self) -> None:
        self.calls.append(f"start after {self.version} puts")

    def stop(self) -> None:
        self.calls.append("stop")

    def check_put(self, put: FeaturePut, previous: np.ndarray | None) -> None:
        if put.features.shape[1] != WIDTH:
            raise Refused("features", f"rows must have {WIDTH} numbers, got {put.features.shape[1]}")

    def apply_put(self, put: FeaturePut) -> None:
        self.rows[put.key] = put.features
        self.version += 1

    @property
    def model_version(self) -> int:
        return self.version

    def ledger(self) -> dict:
        return {"users": len(self.rows)}

    def checkpoint(self) -> bytes:
        return json.dumps({key: rows.tolist() for key, rows in sorted(self.rows.items())}).encode() + b"|" + str(
            self.version
        ).encode()

    def restore(self, state: bytes) -> None:
        rows, version = state.rsplit(b"|", 1)
        self.rows = {key: np.asarray(value) for key, value in json.loads(rows).items()}
        self.version = int(version)


class Quiet(ServedRole):
    """A role with no application API (it would serve the other parties only)."""

    kind = "toy-quiet"

    def identity(self) -> str:
        return "toy-quiet/1"

    def ledger(self) -> dict:
        return {}
