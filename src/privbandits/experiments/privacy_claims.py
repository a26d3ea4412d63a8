"""A check that no README or book claim calls a run private unless its preset has the guarantee.

Some runs carry a private-sounding name without the guarantee: the reference-compatible
CDP-FCLUB-DC uploads its statistics raw (noise only in the upload trigger), so its ledger
records ε = ∞ and its stored ``claimed_epsilon`` is ∞. Every passage of the README or the
results book that names such a run must say so in the same passage (a results block, a
book section, a paragraph or a list item): :func:`unguaranteed_private_claims` lists the
passages that do not (``tests/experiments/test_privacy_claims.py`` asserts none).
"""

from __future__ import annotations

import re

from privbandits.experiments.marked_blocks import block_pattern

NO_GUARANTEE = (
    (
        "reference-compatible CDP-FCLUB-DC (noise only in the upload trigger)",
        re.compile(r"CDP-FCLUB-DC(?! \(faithful\))"),
        re.compile(r"reference[- ]compatible|reference preset", re.IGNORECASE),
    ),
)
"""(run, how a passage names it, how it names the preset) for each run whose name claims privacy it lacks."""
DISCLAIMER = re.compile(r"no\s+(DP\s+)?guarantee|not\s+private|ε = ∞|uploads\s+(are\s+|carry\s+)?raw", re.IGNORECASE)
"""What a passage must say of such a run."""

_BLOCK = block_pattern("results")
_SECTION = re.compile(r"^## ", re.MULTILINE)
_PARAGRAPH = re.compile(r"\n\s*\n|\n(?=[*-] )")


def passages(text: str) -> list[str]:
    """Results blocks whole, then the rest by book section, paragraph and list item."""
    blocks = [match.group(0) for match in _BLOCK.finditer(text)]
    rest = _BLOCK.sub("\n\n", text)
    return blocks + [part for section in _SECTION.split(rest) for part in _PARAGRAPH.split(section) if part.strip()]


def unguaranteed_private_claims(text: str) -> list[str]:
    """The start of every passage that names a run without a guarantee and does not say it has none."""
    found = []
    for passage in passages(text):
        for run, name, preset in NO_GUARANTEE:
            if name.search(passage) and preset.search(passage) and not DISCLAIMER.search(passage):
                found.append(f"{run}: {' '.join(passage.split())[:100]}")
    return found
