"""Where a deployed party's randomness comes from (``privbandits.deploy.entropy``) and the file's ``reproducible``."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import numpy as np
import pytest
from deploy_files import reproducible
from project_paths import SHIPPED_DEPLOYMENTS

from privbandits.deploy import entropy
from privbandits.deploy.deployment import DeploymentError, load_deployment, parse_deployment

EXAMPLE = SHIPPED_DEPLOYMENTS / "fclub.toml"


def spec_in(folder: Path, seeded: bool = False):
    path = folder / "fclub.toml"
    path.write_text(reproducible(EXAMPLE.read_text()) if seeded else EXAMPLE.read_text())
    return load_deployment(path)


def draws(seed: np.random.SeedSequence) -> list[float]:
    return np.random.default_rng(seed).random(4).tolist()


def test_reproducible_is_off_by_default_covered_by_the_digest_and_written_back(tmp_path):
    default, seeded = spec_in(tmp_path), spec_in(tmp_path, seeded=True)
    assert not default.reproducible and seeded.reproducible
    assert entropy.mode(default) == "os" and entropy.mode(seeded) == "reproducible"
    assert default.digest() != seeded.digest()
    again = parse_deployment(tomllib.loads(seeded.to_toml()))
    assert again.reproducible and again.digest() == seeded.digest()


def test_reproducible_mode_derives_from_the_seed_and_the_default_draws_fresh_os_entropy(tmp_path):
    root = np.random.SeedSequence(0)
    seeded, default = spec_in(tmp_path, seeded=True), spec_in(tmp_path)
    assert draws(entropy.seed_sequence(seeded, "local0", root)) == draws(np.random.SeedSequence(0))
    first, second = entropy.seed_sequence(default, "local0", root), entropy.seed_sequence(default, "local0", root)
    assert draws(first) != draws(second) and draws(first) != draws(root)
    assert first.entropy.bit_length() > 200  # 256 bits of entropy (the top bits are 0 with probability 2^-56)
    assert not (tmp_path / "out").exists()  # nothing kept unless asked


def test_a_kept_os_seed_is_the_party_s_own_0600_file_and_a_resume_replays_it(tmp_path):
    spec = spec_in(tmp_path)
    root = np.random.SeedSequence(0)
    kept = entropy.seed_sequence(spec, "local0", root, keep=True)
    path = entropy.entropy_path(spec, "local0")
    assert path == tmp_path / "out" / "checkpoints" / "local0.entropy.npz"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert draws(entropy.seed_sequence(spec, "local0", root, keep=True, resume=True)) == draws(kept)
    assert draws(entropy.seed_sequence(spec, "local0", root, keep=True)) != draws(kept)  # a fresh session: fresh


def test_a_resume_without_the_party_s_entropy_file_or_with_another_deployment_s_is_refused(tmp_path):
    spec = spec_in(tmp_path)
    root = np.random.SeedSequence(0)
    path = entropy.entropy_path(spec, "local1")
    with pytest.raises(DeploymentError, match=f"no entropy file at {path} to resume from"):
        entropy.seed_sequence(spec, "local1", root, keep=True, resume=True)
    entropy.seed_sequence(spec, "local1", root, keep=True)
    other = spec.model_copy(update={"protocol": spec.protocol.model_copy(update={"seed": 1})})
    with pytest.raises(DeploymentError, match="was written for another deployment"):
        entropy.seed_sequence(other, "local1", root, keep=True, resume=True)


def test_a_recorded_party_warns_only_in_reproducible_mode_and_records_the_mode(tmp_path, capsys):
    @entropy.recorded
    def run_party(deployment, name, network, **options):
        return {"party": name}

    assert run_party(spec_in(tmp_path), "global", None) == {"party": "global", "randomness": "os"}
    assert capsys.readouterr().err == ""
    assert run_party(spec_in(tmp_path, seeded=True), "global", None)["randomness"] == "reproducible"
    assert capsys.readouterr().err == entropy.WARNING + "\n"
    assert "for tests and demos only: no privacy" in entropy.WARNING


def test_a_checkpoint_of_one_mode_is_not_resumed_in_the_other(tmp_path):
    """The checkpoints' digest covers the mode: a session stopped with OS coins is not resumed with seeded ones."""
    from privbandits.deploy import checkpoint

    default, seeded = spec_in(tmp_path), spec_in(tmp_path, seeded=True)
    assert default.protocol_digest() != seeded.protocol_digest()
    checkpoint.save(default.checkpoint_path("global"), {}, {"digest": default.protocol_digest()})
    with pytest.raises(DeploymentError, match="was written for another deployment"):
        checkpoint.resume(seeded, "global")
