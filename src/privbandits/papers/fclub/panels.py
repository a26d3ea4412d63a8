"""The settings (panels) of Figs. 2, 4 and Table 3, their titles, and the notes every report shares."""

from __future__ import annotations

from pathlib import Path

from privbandits.datasets.cache import cached, is_cached
from privbandits.papers.fclub.options import FAITHFUL, FULL_HORIZON
from privbandits.papers.fclub.runs import Setting, with_data

_MOVIELENS_NOTE = (
    "MovieLens panels: REAL data. 'MovieLens-100K, spec A19': the A19 recipe from raw ratings (MovieLens-100K's "
    "100,000 ratings by 943 users, from the data cache: `privbandits data fetch movielens-100k`; binary user × "
    "movie matrix, the most active users × 1,000 movies as the reference code selects them, SVD, d − 1 left "
    "singular vectors, k-means with k = m = 4), 40 of the 943 users drawn per seed. Without the cached file the "
    "A19 panel falls back to ../shared/data/fclub/ml_500user_500item.npy (the most active 500 users × 500 movies "
    "of MovieLens as the reference code saved them), labelled so. 'reference users': the first 40 rows of "
    "../shared/data/fclub/ml_1000user_d10.npy, the reference code's own vectors (10 k-means centres), as its "
    "experiments took them: 6 distinct θ's, one shared by 31 users. Items and Bernoulli rewards synthetic (the "
    "paper's 'item vectors generated randomly'). The synthetic panel is generated."
)


def a19_setting(data_dir: Path | None, ratings: Path | None = None) -> tuple[Setting | None, str | None]:
    """The A19 MovieLens panel: raw ratings (``ratings``, else the data cache's MovieLens-100K), else the shipped
    500 × 500 matrix in ``data_dir``; and a note when it falls back."""
    if ratings is not None:
        return Setting(kind="movielens-100k", data=Path(ratings)), None
    if is_cached("movielens-100k"):
        return Setting(kind="movielens-100k", data=cached("movielens-100k")), None
    return with_data(Setting(kind="movielens"), data_dir), (
        "MovieLens-100K is not in the data cache (`privbandits data fetch movielens-100k`): the A19 panel FALLS "
        "BACK to the shipped 500 × 500 matrix (ml_500user_500item.npy)."
    )


def settings(
    include_movielens: bool,
    horizon: int,
    movielens_horizon: int | None,
    data_dir: Path | None,
    ratings: Path | None = None,
) -> tuple[dict[Setting, int], list[str]]:
    """{setting: horizon} of Figs. 2 and 4 (the MovieLens panels only if their files are there), and notes."""
    found = {Setting(): horizon}
    notes: list[str] = []
    if not include_movielens:
        return found, notes
    a19, fallback = a19_setting(data_dir, ratings)
    if fallback:
        notes.append(fallback)
    for kind, setting in (("movielens", a19), ("movielens-reference", with_data(Setting(kind="movielens-reference"),
                                                                                   data_dir))):  # fmt: skip
        if setting is not None:
            found[setting] = movielens_horizon or horizon
        else:
            notes.append(f"{title(Setting(kind=kind), horizon).split(' (')[0]} panel SKIPPED: its data file is absent.")
    notes.append(_MOVIELENS_NOTE)
    return found, notes


def title(setting: Setting, horizon: int) -> str:
    if setting.kind == "movielens-100k":
        return f"MovieLens-100K, spec A19 from raw ratings (REAL data, SVD + k-means, k = 4), T = {horizon:,}"
    if setting.kind == "movielens":
        return f"MovieLens, spec A19 on the shipped 500×500 matrix (REAL data, fallback), T = {horizon:,}"
    if setting.kind == "movielens-reference":
        return f"MovieLens, reference users (REAL data, first 40 of 1000), T = {horizon:,}"
    return f"synthetic ({setting.construction} construction), T = {horizon:,}"


def mode_notes(horizon: int, seeds: int) -> list[str]:
    """Sizes and the two option sets of the FCLUB family (spec §7, §8)."""
    return [
        f"Horizon T = {horizon:,}, {seeds} seeds (the paper's: T = 2^17 − 2 = {FULL_HORIZON:,}, 10 seeds). "
        "Bands: ±1 std across seeds of the cumulative value (A21).",
        "'CDP-FCLUB-DC' and FCLUB-DC, FCLUB, Homo-DC, Homo use the reference-compatible options "
        "(FCLUBConfig.reference_compatible: ridge 2, the reference β forms with β_CDP × 0.005, own-buffer "
        "recommendation, RC merge; for CDP the noise only in the upload trigger, ν = ⌊ln(t+1)⌋+1, the variance "
        "formula as a std, a fresh tree every phase; since issue 15 also the reference code's merge rule (merge only "
        "when some pair fails Eq. 4 and the layout changed: per-server learners until the first split; Homo-DC never "
        "merges; FCLUB merges greedily, never the last local cluster), its DOUBLE-COUNTING DEFECT in the DC variants "
        "(shared_statistics_defect) and FCLUB's per-round detection; since issue 29 Homo-DC's ridge-free copies "
        "and Eq. 5 and its carried copies (ridge_in_recommendation_only, carry_synchronized_copies); "
        "fclub-reference-gap compares it with the "
        "reference code). Its uploads are RAW: the run has NO DP guarantee.",
        f"'{FAITHFUL}' is Algorithm 1 with the spec's recommended options (FCLUBConfig.for_variant, m_bound = m): "
        "Eq. 7 ρ, σ² = 64ν ln²(2/δ)/ε², 2ρI/3ρI shifts, Lemma 1 β: (ε, δ) = (1, 0.1) per privatizer holds, at the "
        "cost of noise (ρ ≈ 10^4) that swamps the data at these horizons.",
        "SCLUB, CLUB, LinUCB: one instance per local server (LinUCB per user) with the reference code's constants "
        "(spec §6.3). Synthetic θ/items/rewards: the reference code's construction (Bernoulli rewards, "
        "θᵀx ∈ [0, 1]); users in contiguous blocks of clusters and servers (spec §6.2).",
    ]


def compute_note(runs: list[dict], horizons: list[int]) -> str:
    """The simulation time behind a report, from the stored runs' own timing."""
    seconds = sum(run["ms_per_round"] * horizon for run, horizon in zip(runs, horizons, strict=True)) / 1000
    return (
        f"Simulation time {seconds:,.0f} s over {len(runs)} runs (ms per round × T, summed; each unit is computed "
        "once and kept in the results store, shared between reproductions that need it)."
    )
