"""P2B's Criteo experiment (spec ``p2b.md`` §5.4 [R], §9.14) and the Open Bandit Dataset run the same way.

Criteo (:func:`criteo_interactions`). The log is read by
:func:`privbandits.datasets.criteo.load_criteo` with ``clicked_only=True`` and
no scaling, which does the reference's steps 1–9: drop columns with more than
40 % missing values, fill forward then backward, add 3 to I2, md5-hash the
categoricals into 3 components, Cantor-pair them into one label, keep the
clicked rows whose label is among the 40 most frequent (plain "top 40 by
frequency", labels 0…39 by rank, spec §9.14). Then (steps 10–13):

* context = the retained numerical features (I2 … I9, I11, I13 on the Kaggle
  file, d = 10), each row normalised to sum 1 and rounded to q = 1;
* rewards = one-hot of the logged label: action a earns 1 iff it is the label
  of the clicked ad, so "CTR" is a label-match rate among clicks;
* users = 3,000 consecutive chunks of the file order (no shuffle).

Open Bandit Dataset (:func:`obd_interactions`), the offline real-data run. The
``random`` campaign's rows (:func:`privbandits.datasets.obd.load_obd`) are
taken in file order; the context is the user's one-hot categorical features
(d = 23 on the 10,000-row sample) normalised to sum 1 and rounded to q = 1;
the actions are the 80 items, or the ``n_items`` most frequently logged ones;
users are consecutive chunks.

The reward table of OBD is NOT a full table. Each row logs one item and its
click; what any other item would have got is unknown. ``rewards[u, s, a]`` is
the click for the logged item and 0 elsewhere, and ``observed`` marks the
logged entry only. A simulation must choose how to read it:

* replay (Li et al. 2011), the unbiased reading: a round counts only when the
  agent's action is the logged item (``observed`` is True there), and is
  skipped otherwise, so about 1/K of a user's t rows are used;
* reading unobserved entries as 0 turns the task into "pick the item that was
  shown and clicked". The campaign logs items uniformly at random, independently
  of the user, so every policy then earns CTR/K in expectation: the problem has
  no learnable signal.

The Criteo log cannot be downloaded here, so :func:`criteo_stand_in` makes an
offline stand-in with the log's shape and P2B's label mechanism (see there).

The 10,000-row sample has 38 clicks (CTR ≈ 0.4 %), so neither reading makes it
a meaningful P2B benchmark; it serves as a real-data run of the pipeline, not
as a reproduction of any figure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privbandits.datasets.criteo import item_labels, load_criteo, rank_item_labels
from privbandits.datasets.interactions import REAL, STAND_IN, UserInteractions, interactions_from_rows
from privbandits.datasets.obd import load_obd


def criteo_interactions(
    path: str | Path,
    *,
    n_users: int = 3000,
    n_actions: int = 40,
    nrows: int | None = None,
    decimals: int | None = 1,
    missing_threshold: float = 0.4,
) -> UserInteractions:
    """The Criteo Kaggle log as P2B users (module docstring).

    Parameters
    ----------
    path : str or Path
        Kaggle ``train.txt`` or a CSV with a header (see :func:`load_criteo`).
    n_users : int
        U, consecutive chunks of the kept rows (3,000); each user keeps
        ⌊rows / U⌋ rows.
    n_actions : int
        |A|, the number of most frequent labels kept (40).
    nrows : int or None
        Read only the first ``nrows`` rows of the file (before keeping clicks).
    decimals : int or None
        q, the context precision (1).
    missing_threshold : float
        Columns with a larger share of missing values are dropped (0.4).
    """
    log = load_criteo(
        path, nrows=nrows, n_items=n_actions, clicked_only=True, missing_threshold=missing_threshold, scale=False
    )
    data = log.data
    rewards = np.zeros((data.n_events, n_actions), dtype=np.int8)
    rewards[np.arange(data.n_events), data.actions] = 1
    features = ", ".join(data.user_feature_names)
    return interactions_from_rows(
        data.user_features,
        rewards,
        n_users,
        name="criteo",
        source=f"{REAL}: Criteo Kaggle log {path}, clicked rows only, contexts {features}",
        decimals=decimals,
    )


def obd_interactions(
    folder: str | Path,
    *,
    n_users: int = 100,
    n_items: int | None = None,
    position: int | None = None,
    decimals: int | None = 1,
    min_category_share: float = 0.01,
) -> UserInteractions:
    """An Open Bandit Dataset campaign as P2B users, with a partially observed reward table (module docstring).

    Parameters
    ----------
    folder : str or Path
        A campaign folder, e.g. ``.../obd/random/all``.
    n_users : int
        U, consecutive chunks of the kept rows; each user keeps ⌊rows / U⌋ rows.
    n_items : int or None
        None: all items, action a = ``item_id`` a. Otherwise only the rows that
        logged one of the ``n_items`` most frequently logged items (ties to the
        smaller id) are kept, and action a is the item of frequency rank a.
    position : int or None
        Keep only one display slot (see :func:`load_obd`); None keeps every row.
    decimals : int or None
        q, the context precision (1).
    min_category_share : float
        Rare user-feature categories are grouped (see :func:`load_obd`).

    Returns
    -------
    UserInteractions
        ``rewards`` holds the click at the logged item and 0 elsewhere;
        ``observed`` is True at the logged item only.
    """
    data = load_obd(folder, position=position, min_category_share=min_category_share)
    items = data.actions
    if n_items is None:
        n_actions, actions, rows = data.n_items, items, np.arange(data.n_events)
    else:
        if not 1 <= n_items <= data.n_items:
            raise ValueError(f"n_items must be in [1, {data.n_items}] or None, got {n_items}")
        counts = np.bincount(items, minlength=data.n_items)
        top = np.lexsort((np.arange(data.n_items), -counts))[:n_items]
        rank = np.full(data.n_items, -1)
        rank[top] = np.arange(n_items)
        rows = np.flatnonzero(rank[items] >= 0)
        n_actions, actions = n_items, rank[items[rows]]
    observed = np.zeros((rows.size, n_actions), dtype=bool)
    observed[np.arange(rows.size), actions] = True
    rewards = np.where(observed, data.rewards[rows, None], 0.0).astype(np.int8)
    kept = "all items" if n_items is None else f"the {n_items} most logged items"
    return interactions_from_rows(
        data.user_features[rows],
        rewards,
        n_users,
        name="obd",
        source=(
            f"{REAL}: Open Bandit Dataset {folder}, {kept}; rewards observed only for the logged item "
            "(use replay semantics)"
        ),
        decimals=decimals,
        observed=observed,
    )


def criteo_stand_in(
    seed: int = 0,
    *,
    n_users: int = 3000,
    n_interactions: int = 300,
    n_actions: int = 40,
    dim: int = 10,
    n_categorical: int = 20,
    dependence: float = 0.15,
    decimals: int | None = 1,
) -> UserInteractions:
    """An offline stand-in for P2B's Criteo users: Criteo's shape and label mechanism, made-up statistics.

    Each clicked row has a latent z ~ N(0, I_3). Its ``dim`` numerical features
    are heavy-tailed counts ``⌊exp(μ_j + (zM)_j + 0.7 ε_j)⌋`` (Criteo's integer
    features are counts). Its label is built as P2B builds Criteo's: the
    ``n_categorical`` categorical cells fall into the 3 hash components,
    here a Multinomial(``n_categorical``, softmax(zB)) draw with B of scale
    ``dependence`` (so the label depends weakly on the context through z), the
    components are Cantor-paired (:func:`~privbandits.datasets.criteo.item_labels`)
    and the ``n_actions`` most frequent labels are kept
    (:func:`~privbandits.datasets.criteo.rank_item_labels`). As on the real log
    the labels are skewed but flat at the top (the most frequent of 40 has
    ≈ 4 % of the rows), which is what a context-free agent can exploit.

    Rows are generated until ``n_users · n_interactions`` carry a kept label;
    users are consecutive chunks; contexts are normalised and rounded to q.
    """
    if dependence < 0:
        raise ValueError(f"dependence must be >= 0, got {dependence}")
    if n_users < 1 or n_interactions < 1:
        raise ValueError(f"n_users and n_interactions must be >= 1, got {n_users} and {n_interactions}")
    rng = np.random.default_rng(seed)
    mixing, location = 0.8 * rng.standard_normal((3, dim)), rng.uniform(0.0, 3.0, dim)
    bucket_weights = dependence * rng.standard_normal((3, 3))
    needed = n_users * n_interactions
    n_rows = needed
    while True:
        latent = rng.standard_normal((n_rows, 3))
        counts = np.floor(np.exp(location + latent @ mixing + 0.7 * rng.standard_normal((n_rows, dim))))
        logits = latent @ bucket_weights
        shares = np.exp(logits - logits.max(axis=1, keepdims=True))
        components = rng.multinomial(n_categorical, shares / shares.sum(axis=1, keepdims=True))
        ranked = rank_item_labels(item_labels(components), n_actions)
        if ranked.rows.size >= needed:
            break
        n_rows = 2 * n_rows
    rows, actions = ranked.rows[:needed], ranked.actions[:needed]
    rewards = np.zeros((needed, n_actions), dtype=np.int8)
    rewards[np.arange(needed), actions] = 1
    return interactions_from_rows(
        counts[rows],
        rewards,
        n_users,
        name="criteo-stand-in",
        source=(
            f"{STAND_IN} (Criteo-like generator, seed {seed}: {dim} count features, labels from "
            f"{n_categorical} categorical cells hashed into 3 components, top {n_actions}); NOT the Criteo log"
        ),
        decimals=decimals,
    )
