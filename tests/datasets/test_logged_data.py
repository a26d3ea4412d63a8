"""Logged bandit data: the validated container, the OBD and Criteo loaders, their contexts."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from obd_fixture import hashed, write_obd
from project_paths import OBD_SAMPLE as REAL_OBD

from privbandits.datasets import (
    EventContexts,
    LoggedBanditData,
    criteo_contexts,
    default_obd_path,
    load_criteo,
    load_obd,
    vertical_obd_contexts,
)
from privbandits.datasets.criteo import (
    CATEGORICAL_COLUMNS,
    KAGGLE_COLUMNS,
    NUMERIC_COLUMNS,
    cantor_pair,
    fill_forward_backward,
    hash_encode,
    item_labels,
    md5_bucket,
)
from privbandits.datasets.obd import one_hot

# -- LoggedBanditData and EventContexts ---------------------------------------------


def small_log(**overrides) -> LoggedBanditData:
    fields = {
        "user_features": np.zeros((4, 2)),
        "item_features": np.eye(3),
        "actions": np.array([0, 1, 2, 1]),
        "rewards": np.array([1.0, 0.0, 0.0, 1.0]),
        "propensities": np.full(4, 1 / 3),
        "positions": None,
        "user_feature_names": ("u0", "u1"),
        "item_feature_names": ("i0", "i1", "i2"),
    }
    return LoggedBanditData(**{**fields, **overrides})


def test_logged_data_converts_copies_and_freezes_arrays():
    actions = [0, 1, 2, 1]
    data = small_log(actions=actions, user_features=[[1, 2]] * 4, positions=np.array([1, 2, 1, 2], dtype=np.int32))
    assert data.user_features.dtype == np.float64 and data.actions.dtype == np.int64
    assert data.positions.dtype == np.int64
    assert (data.n_events, data.n_items) == (4, 3)
    with pytest.raises(ValueError, match="read-only"):
        data.rewards[0] = 5.0
    actions[0] = 2
    assert data.actions[0] == 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"user_features": np.zeros(4)}, "user_features must be a non-empty 2-D array, got shape (4,)"),
        ({"item_features": np.zeros((0, 3))}, "item_features must be a non-empty 2-D array, got shape (0, 3)"),
        ({"user_features": np.full((4, 2), np.nan)}, "user_features must be finite (no NaN or inf)"),
        ({"actions": np.array([0, 1, 2])}, "actions must have shape (4,), got (3,)"),
        ({"actions": np.array([0.0, 1, 2, 1])}, "actions must be integers, got dtype float64"),
        ({"actions": np.array([0, 1, 3, -1])}, "actions must be in [0, 3) (one per item), got values from -1 to 3"),
        ({"rewards": np.zeros(5)}, "rewards must have shape (4,), got (5,)"),
        ({"rewards": np.array([0, np.inf, 0, 0])}, "rewards must be finite (no NaN or inf)"),
        ({"propensities": np.zeros(4)}, "propensities must be in (0, 1]"),
        ({"propensities": np.ones(3)}, "propensities must have shape (4,), got (3,)"),
        ({"positions": np.ones(4)}, "positions must be integers, got dtype float64"),
        ({"user_feature_names": ("u0",)}, "user_feature_names has 1 names but user_features has 2 columns"),
        (
            {"item_feature_names": ("a", "b", "c", "d")},
            "item_feature_names has 4 names but item_features has 3 columns",
        ),
    ],
)
def test_logged_data_rejects_bad_fields(overrides, message):
    with pytest.raises(ValueError) as error:
        small_log(**overrides)
    assert str(error.value) == message


def test_event_contexts_checks_partition_names_and_events_and_keeps_leading_blocks():
    table = np.arange(2 * 3 * 5, dtype=float).reshape(2, 3, 5)
    contexts = EventContexts(table.__getitem__, 2, 3, (2, 3), ("a", "b", "c", "d", "e"))
    assert contexts.dim == 5
    np.testing.assert_array_equal(contexts(1), table[1])
    active = contexts.leading_blocks(1)
    assert (active.partition, active.dim, active.feature_names) == ((2,), 2, ("a", "b"))
    np.testing.assert_array_equal(active(1), table[1, :, :2])
    with pytest.raises(IndexError, match=r"event must be in \[0, 2\), got 2"):
        contexts(2)
    with pytest.raises(ValueError, match=r"n_blocks must be in \[1, 2\], got 3"):
        contexts.leading_blocks(3)
    with pytest.raises(ValueError, match=r"partition must be a non-empty list of block sizes >= 1, got \(2, 0\)"):
        EventContexts(table.__getitem__, 2, 3, (2, 0), ("a", "b"))
    with pytest.raises(ValueError, match=r"feature_names has 1 names but the partition \(2,\) has 2"):
        EventContexts(table.__getitem__, 2, 3, (2,), ("a",))


# -- Open Bandit Dataset -----------------------------------------------------------------


@pytest.fixture
def obd_folder(tmp_path) -> tuple[Path, dict]:
    folder = tmp_path / "obd" / "random" / "all"
    return folder, write_obd(folder, np.random.default_rng(0))


def test_one_hot_orders_by_frequency_and_groups_rare_values_last():
    matrix, names = one_hot(["b", "a", "b", "c", "d", "a", "b"], "f", min_count=2)
    assert names == ["f=b", "f=a", "f=other"]
    np.testing.assert_array_equal(matrix.argmax(axis=1), [0, 1, 0, 2, 2, 1, 0])
    np.testing.assert_array_equal(matrix.sum(axis=1), 1.0)
    assert one_hot(["x", "y"], "g")[1] == ["g=x", "g=y"]  # nothing rare: no "other" column


def test_load_obd_reads_the_fixture_exactly(obd_folder):
    folder, written = obd_folder
    data = load_obd(folder)
    np.testing.assert_array_equal(data.actions, written["item_id"])
    np.testing.assert_array_equal(data.rewards, written["click"])
    np.testing.assert_array_equal(data.positions, written["position"])
    np.testing.assert_allclose(data.propensities, 1 / 6)
    # four one-hot groups: every row has exactly one 1 per user feature
    assert data.user_features.shape == (300, 2 + 2 + 4 + 4)
    np.testing.assert_array_equal(data.user_features.sum(axis=1), 4.0)
    assert data.user_feature_names[2] == f"user_feature_1={hashed('young')}"  # the more frequent value first
    # user_feature_2: g0, g1, g2 about 100 times each, "rare" once (< 1% of 300) → "other"
    assert data.user_feature_names[4:8][-1] == "user_feature_2=other"
    assert data.user_features[0, 7] == 1.0 and data.user_features[1:, 7].sum() == 0
    # items in item_id order: standardised item_feature_0, then one-hots (3 brands, 2 shops, 4 types)
    assert data.item_features.shape == (6, 1 + 3 + 2 + 4)
    x0 = written["items"]["item_feature_0"]
    np.testing.assert_allclose(data.item_features[:, 0], (x0 - x0.mean()) / x0.std())
    assert data.item_feature_names[0] == "item_feature_0"
    assert data.item_feature_names[6] == f"item_feature_3={hashed('type3')}"  # 3 items share type3: first of 4
    np.testing.assert_array_equal(data.item_features[:, 1:].sum(axis=1), 3.0)


def test_load_obd_position_filter_and_share_option(obd_folder):
    folder, written = obd_folder
    top = load_obd(folder, position=1)
    keep = written["position"] == 1
    assert top.n_events == keep.sum()
    np.testing.assert_array_equal(top.actions, written["item_id"][keep])
    assert set(top.positions.tolist()) == {1}
    assert "user_feature_2=other" not in load_obd(folder, min_category_share=0.0).user_feature_names


def test_load_obd_errors(obd_folder, tmp_path):
    folder, _ = obd_folder
    with pytest.raises(FileNotFoundError, match="OBD folder .*nowhere does not exist"):
        load_obd(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="position must be one of 1, 2, 3 \\(the slots in all.csv\\) or None, got 4"):
        load_obd(folder, position=4)
    with pytest.raises(ValueError, match=r"min_category_share must be in \[0, 1\), got 1.0"):
        load_obd(folder, min_category_share=1.0)

    def rewrite(name: str, edit) -> Path:
        copy = tmp_path / f"edited_{name}_{edit.__name__}"
        copy.mkdir()
        for file in ("all.csv", "item_context.csv"):
            rows = list(csv.reader((folder / file).open(newline="")))
            if file == name:
                edit(rows)
            with (copy / file).open("w", newline="") as handle:
                csv.writer(handle).writerows(rows)
        return copy

    def drop_click(rows):
        column = rows[0].index("click")
        for row in rows:
            del row[column]

    def bad_click(rows):
        rows[3][rows[0].index("click")] = "2"

    def unknown_item(rows):
        rows[5][rows[0].index("item_id")] = "6"

    def text_position(rows):
        rows[2][rows[0].index("position")] = "top"

    def duplicate_item(rows):
        rows[2][rows[0].index("item_id")] = rows[1][rows[0].index("item_id")]

    cases = [
        ("all.csv", drop_click, "has no column 'click'; required columns: item_id, position, click, propensity_score"),
        ("all.csv", bad_click, "all.csv line 4: click must be 0 or 1, got 2"),
        ("all.csv", unknown_item, "all.csv line 6: item_id 6 is not in item_context.csv (items 0..5)"),
        ("all.csv", text_position, "all.csv line 3: position must be an integer, got 'top'"),
        ("item_context.csv", duplicate_item, "item_id must number the 6 items 0..5, each once"),
    ]
    for name, edit, message in cases:
        with pytest.raises(ValueError) as error:
            load_obd(rewrite(name, edit))
        assert message in str(error.value)
    (tmp_path / "no_items").mkdir()
    with pytest.raises(FileNotFoundError, match="OBD file .*item_context.csv does not exist"):
        load_obd(tmp_path / "no_items")


def test_vertical_obd_contexts_blocks_and_names(obd_folder):
    data = load_obd(obd_folder[0])
    contexts = vertical_obd_contexts(data)
    d_i, d_u, n_types = 10, 12, 4
    assert contexts.partition == (d_i, n_types * d_u) and contexts.n_arms == 6 and contexts.n_events == 300
    x = contexts(7)
    assert x.shape == (6, d_i + n_types * d_u)
    np.testing.assert_array_equal(x[:, :d_i], data.item_features)  # the active party's block
    descriptor = data.item_features[:, -n_types:]
    np.testing.assert_array_equal(x[:, d_i:], np.einsum("aq,p->aqp", descriptor, data.user_features[7]).reshape(6, -1))
    assert contexts.feature_names[d_i] == f"{data.item_feature_names[-n_types]}*{data.user_feature_names[0]}"
    both = vertical_obd_contexts(data, descriptor=("item_feature_0", "item_feature_2"))
    assert both.partition == (d_i, 3 * d_u)
    np.testing.assert_array_equal(
        both(0)[:, d_i : d_i + d_u], np.outer(data.item_features[:, 0], data.user_features[0])
    )
    with pytest.raises(ValueError) as error:
        vertical_obd_contexts(data, descriptor="colour")
    allowed = "item_feature_0, item_feature_1, item_feature_2, item_feature_3"
    assert str(error.value) == f"descriptor must name item features among {allowed}, got 'colour'"
    with pytest.raises(ValueError, match="descriptor must name at least one item feature"):
        vertical_obd_contexts(data, descriptor=())


def test_user_block_only_changes_rankings_through_the_interaction(obd_folder):
    """Documented reasoning: an arm-constant user block cannot move the argmax; the interaction can."""
    data = load_obd(obd_folder[0])
    contexts = vertical_obd_contexts(data)
    rng = np.random.default_rng(3)
    users = data.user_features
    changed = 0
    for _ in range(20):
        theta_items, theta_users = rng.normal(size=contexts.partition[0]), rng.normal(size=users.shape[1])
        constant_block = [
            np.argmax(data.item_features @ theta_items + users[t] @ theta_users) for t in range(0, 300, 10)
        ]
        assert len(set(constant_block)) == 1
        theta = rng.normal(size=contexts.dim)
        changed += len({int(np.argmax(contexts(t) @ theta)) for t in range(0, 300, 10)}) > 1
    assert changed >= 10


@pytest.mark.skipif(not REAL_OBD.is_dir(), reason=f"the OBD sample is not at {REAL_OBD}")
def test_real_obd_sample_dimensions():
    assert default_obd_path() == REAL_OBD
    data = load_obd(REAL_OBD)
    assert (data.n_events, data.n_items) == (10_000, 80)
    assert data.user_features.shape[1] == 23 and data.item_features.shape[1] == 41
    np.testing.assert_array_equal(data.propensities, 0.0125)
    assert data.rewards.sum() == 38
    assert vertical_obd_contexts(data).partition == (41, 161)


# -- Criteo ----------------------------------------------------------------------------------


def test_cantor_pairing_and_item_labels_by_hand():
    assert [cantor_pair(0, 0), cantor_pair(1, 0), cantor_pair(0, 1), cantor_pair(2, 1)] == [0, 1, 2, 7]
    assert cantor_pair(47, 32) == 79 * 80 // 2 + 32 == 3192
    grid = cantor_pair(*np.meshgrid(np.arange(30), np.arange(30)))
    assert np.unique(grid).size == 900  # injective
    # p1 = pair(1, 2) = 8, p2 = pair(8, 0) = 36, label = pair(8, 36) = 44·45/2 + 36
    np.testing.assert_array_equal(item_labels([[1, 2, 0], [0, 0, 26]]), [1026, 26 * 27 // 2 + 26 + 377 * 378 // 2])


def test_hash_encode_is_category_encoders_md5_trick():
    # md5("0") = cfcd2084…64da, md5("2") = c81e728d…862c, md5("4") = a87ff679…122c
    assert [md5_bucket(str(code)) for code in range(5)] == [1, 1, 0, 1, 2]
    assert md5_bucket("0") == int("cfcd208495d565ef66e7dff9f98764da", 16) % 3
    counts = hash_encode(np.array([[0, 2, 4], [2, 2, 2], [1, 3, 0]]))
    np.testing.assert_array_equal(counts, [[1, 1, 1], [3, 0, 0], [0, 3, 0]])


def test_fill_forward_then_backward():
    missing = np.array([True, False, True, True, False, True])
    np.testing.assert_array_equal(fill_forward_backward(missing), [1, 1, 1, 1, 4, 4])


def write_criteo(path: Path, rows: list[dict[str, str]], header: bool) -> Path:
    """Kaggle ``train.txt`` (tab, no header) or ``train.csv`` (header with an Id column)."""
    with path.open("w", newline="") as handle:
        if header:
            writer = csv.writer(handle)
            writer.writerow(["Id", *KAGGLE_COLUMNS])
            writer.writerows([10_000_000 + r, *(row[c] for c in KAGGLE_COLUMNS)] for r, row in enumerate(rows))
        else:
            csv.writer(handle, delimiter="\t").writerows([row[c] for c in KAGGLE_COLUMNS] for row in rows)
    return path


def tiny_criteo_rows() -> list[dict[str, str]]:
    """10 rows: I1 60 % missing (dropped), I3 40 % missing (kept, filled), C26 50 % missing (dropped).

    C1..C25 of row r all hold letters[r]; each column's category codes are a..e = 0..4, whose md5
    buckets are 1, 1, 0, 1, 2: rows a, b, d hash to (0, 25, 0), c to (25, 0, 0), e to (0, 0, 25).
    """
    letters = "aabccdeace"
    rows = []
    for r, letter in enumerate(letters):
        row = {"Label": "1" if r in (0, 3, 5) else "0"}
        row.update({c: str(r + j) for j, c in enumerate(NUMERIC_COLUMNS)})
        row.update({c: letter for c in CATEGORICAL_COLUMNS})
        rows.append(row)
    for r in range(6):
        rows[r]["I1"] = ""
    for r in (0, 3, 4, 9):
        rows[r]["I3"] = ""
    for r in range(0, 10, 2):
        rows[r]["C26"] = ""
    rows[2]["I2"] = "-3"
    return rows


@pytest.mark.parametrize("header", [False, True])
def test_load_criteo_tiny_fixture_by_hand(tmp_path, header):
    path = write_criteo(tmp_path / ("train.csv" if header else "train.txt"), tiny_criteo_rows(), header)
    log = load_criteo(path, n_items=2, scale=False)
    assert log.dropped_columns == ("I1", "C26")
    label_b1 = cantor_pair(0, 25)  # (0, 25, 0): p1 = pair(0, 25), p2 = pair(p1, 0), label = pair(p1, p2)
    label_a, label_c = cantor_pair(label_b1, cantor_pair(label_b1, 0)), item_labels([[25, 0, 0]])[0]
    np.testing.assert_array_equal(log.item_labels, [label_a, label_c])  # a/b/d: 5 rows, c: 3 rows, e: 2 (cut)
    data = log.data
    np.testing.assert_array_equal(data.item_features, [[0, 25, 0], [25, 0, 0]])
    assert data.item_feature_names == ("col_0", "col_1", "col_2")
    # kept rows: 0, 1, 2, 3, 4, 5, 7, 8 (the e rows 6 and 9 are not among the top 2 labels)
    np.testing.assert_array_equal(data.actions, [0, 0, 0, 1, 1, 0, 0, 1])
    np.testing.assert_array_equal(data.rewards, [1, 0, 0, 1, 0, 1, 0, 0])
    assert data.user_feature_names == NUMERIC_COLUMNS[1:]
    assert data.propensities is None and data.positions is None
    # I2 = r + 1, plus 3 (row 2 holds -3 → 0); I3 = r + 2 filled: row 0 ← row 1, rows 3, 4 ← row 2 (row 9 is cut)
    np.testing.assert_array_equal(data.user_features[:, 0], [4, 5, 0, 7, 8, 9, 11, 12])
    np.testing.assert_array_equal(data.user_features[:, 1], [3, 3, 4, 4, 4, 7, 9, 10])
    scaled = load_criteo(path, n_items=2).data
    np.testing.assert_allclose(scaled.user_features[:, 1], (np.array([3, 3, 4, 4, 4, 7, 9, 10]) - 3) / 7)
    np.testing.assert_array_equal(scaled.item_features, [[0, 1, 0], [1, 0, 0]])
    clicked = load_criteo(path, n_items=2, clicked_only=True).data
    np.testing.assert_array_equal(clicked.rewards, [1, 1, 1])
    np.testing.assert_array_equal(clicked.actions, [0, 1, 0])  # rows 0 (a), 3 (c), 5 (d): a/d are the top label
    assert load_criteo(path, n_items=1, nrows=3).data.n_events == 3
    assert load_criteo(path, n_items=2, missing_threshold=0.55).dropped_columns == ("I1",)


def random_criteo_rows(rng: np.random.Generator, n_rows: int) -> list[dict[str, str]]:
    rows = []
    for _ in range(n_rows):
        row = {"Label": str(int(rng.random() < 0.25))}
        row.update(
            {
                c: "" if rng.random() < (0.6 if c == "I12" else 0.1) else str(rng.integers(-3, 50))
                for c in NUMERIC_COLUMNS
            }
        )
        row.update(
            {
                c: "" if rng.random() < 0.05 else f"{rng.integers(4 + j % 7):08x}"
                for j, c in enumerate(CATEGORICAL_COLUMNS)
            }
        )
        rows.append(row)
    return rows


def test_load_criteo_both_formats_agree_on_a_generated_log(tmp_path):
    rows = random_criteo_rows(np.random.default_rng(5), 200)
    txt = load_criteo(write_criteo(tmp_path / "train.txt", rows, header=False), n_items=6)
    csv_log = load_criteo(write_criteo(tmp_path / "train.csv", rows, header=True), n_items=6)
    for field in ("user_features", "item_features", "actions", "rewards"):
        np.testing.assert_array_equal(getattr(txt.data, field), getattr(csv_log.data, field))
    np.testing.assert_array_equal(txt.item_labels, csv_log.item_labels)
    data = txt.data
    assert txt.dropped_columns == ("I12",) and data.user_features.shape[1] == 12
    counts = np.bincount(data.actions, minlength=6)
    assert (np.diff(counts) <= 0).all() and counts[-1] > 0  # arms ranked by frequency
    assert data.user_features.min() == 0.0 and data.user_features.max() == 1.0
    # the three hash counts of an item sum to the 26 categorical columns
    np.testing.assert_array_equal(
        load_criteo(tmp_path / "train.txt", n_items=6, scale=False).data.item_features.sum(1), 26
    )


def test_criteo_contexts_outer_addition_and_product(tmp_path):
    rows = random_criteo_rows(np.random.default_rng(6), 200)
    data = load_criteo(write_criteo(tmp_path / "train.txt", rows, header=False), n_items=5).data
    users, items = data.user_features, data.item_features
    addition = criteo_contexts(data)
    assert (addition.dim, addition.n_arms, addition.partition) == (36, 5, (36,))  # I12 is dropped: d_u = 12
    x = addition(11)
    assert x[2, 3 * 3 + 1] == users[11, 3] + items[2, 1]  # column p·d_i + q
    assert addition.feature_names[:4] == ("I1+col_0", "I1+col_1", "I1+col_2", "I2+col_0")
    product = criteo_contexts(data, kind="outer_product", user_partition=(3, 9))
    assert product.partition == (9, 27)
    np.testing.assert_allclose(product(11), np.einsum("p,aq->apq", users[11], items).reshape(5, 36))
    # separability: under outer addition the argmax never depends on the user; under the product it can
    rng = np.random.default_rng(0)
    differs = 0
    for _ in range(20):
        theta = rng.normal(size=36)
        assert len({int(np.argmax(addition(t) @ theta)) for t in range(0, data.n_events, 7)}) == 1
        differs += len({int(np.argmax(product(t) @ theta)) for t in range(0, data.n_events, 7)}) > 1
    assert differs > 0
    with pytest.raises(ValueError, match="kind must be one of 'outer_addition', 'outer_product', got 'sum'"):
        criteo_contexts(data, kind="sum")
    with pytest.raises(ValueError, match=r"user_partition must be counts >= 1 summing to d_u = 12, got \(3, 3\)"):
        criteo_contexts(data, user_partition=(3, 3))


def test_load_criteo_errors(tmp_path):
    rows = tiny_criteo_rows()
    good = write_criteo(tmp_path / "train.txt", rows, header=False)
    with pytest.raises(FileNotFoundError, match="Criteo file .*missing.txt does not exist"):
        load_criteo(tmp_path / "missing.txt")
    for kwargs, message in [
        ({"nrows": 0}, "nrows must be >= 1 or None, got 0"),
        ({"n_items": 0}, "n_items must be >= 1, got 0"),
        ({"missing_threshold": 1.0}, r"missing_threshold must be in \[0, 1\), got 1.0"),
        ({"n_items": 4}, "n_items must be <= 3, the number of distinct item labels, got 4"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_criteo(good, **kwargs)

    def check(name, rows, message, header=False, **kwargs):
        with pytest.raises(ValueError) as error:
            load_criteo(write_criteo(tmp_path / name, rows, header), **kwargs)
        assert message in str(error.value)

    bad = [dict(row) for row in rows]
    bad[4]["Label"] = "yes"
    check("label.txt", bad, "label.txt line 5: Label must be 0 or 1, got 'yes'")
    check("label.csv", bad, "label.csv line 6: Label must be 0 or 1, got 'yes'", header=True)
    bad = [dict(row) for row in rows]
    bad[1]["I5"] = "many"
    check("number.txt", bad, "number.txt line 2: I5 must be a number, got 'many'")
    check(
        "clicks.txt",
        [{**row, "Label": "0"} for row in rows],
        "no clicked rows among the 10 rows read",
        clicked_only=True,
    )
    check(
        "empty_numbers.txt",
        [{**row, **dict.fromkeys(NUMERIC_COLUMNS, "")} for row in rows],
        "every numerical column I1..I13 has more than 40% missing values; no user features remain",
    )
    (tmp_path / "short.txt").write_text("1\t2\t3\n")
    with pytest.raises(ValueError, match="line 1 is neither a header naming Label, I1..I13, C1..C26 nor a Kaggle"):
        load_criteo(tmp_path / "short.txt")
    (tmp_path / "nocol.csv").write_text("Label,I1\n1,2\n")
    with pytest.raises(ValueError, match="has no column 'I2'; required columns: Label, I1..I13, C1..C26"):
        load_criteo(tmp_path / "nocol.csv")
    lines = good.read_text().splitlines()
    (tmp_path / "ragged.txt").write_text("\n".join([*lines[:3], lines[3] + "\textra", *lines[4:]]) + "\n")
    with pytest.raises(ValueError, match="ragged.txt line 4 has 41 fields, expected 40"):
        load_criteo(tmp_path / "ragged.txt")
