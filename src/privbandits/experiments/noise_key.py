"""What the run specs of policies that draw DP noise add to their store keys.

Changing :mod:`~privbandits.privacy.noise` changes every draw of a run that adds DP noise
(at the same seed), and nothing else. So a run spec holds ``noise_sampler`` exactly when
its policy adds DP noise (each kind says when: its config's ``noise_key()``); runs without
noise keep the keys they were stored under.
"""

from __future__ import annotations

FCLUB_UPLOADS = {"fclub_uploads": "snapped"}
"""In the key of a private FCLUB run: its uploads are snapped to the noise grid (since issue 31; the numbers
moved slightly at the same seeds, so runs stored before are not reused)."""


def sampler_key() -> dict[str, str]:
    """``{"noise_sampler": name}``: merged into the run spec of a policy that draws DP noise."""
    from privbandits.privacy.noise import NOISE_SAMPLER  # numpy: not on the command line's import path

    return {"noise_sampler": NOISE_SAMPLER}
