"""The Off-policy evaluation page's figure, drawn at build time from the numbers of the generated results book.

``<!-- evaluation-error-plot -->`` becomes an inline SVG of the DP estimators' RMSE over ε, one panel per policy,
read from the table of the book's ``privbandits evaluate`` section (docs/results.md): the figure is never stored in
the repository, and it shows exactly the numbers the book holds (rerun the section's commands, then
``privbandits report --book``, to change them). Without such a table the marker becomes a note saying so.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "results.md"
HEADING = "## `privbandits evaluate`"
TABLE_HEADER = "| policy | estimator | ε | bias | std | RMSE | non-private half-width |"


def error_rows(book: str) -> list[dict[str, object]]:
    """The rows of the book's error-over-ε table: policy, estimator, ε, RMSE and the non-private half-width."""
    if HEADING not in book:
        return []
    section = book.split(HEADING, 1)[1].split("\n## ", 1)[0]
    if TABLE_HEADER not in section:
        return []
    rows = []
    for line in section.split(TABLE_HEADER, 1)[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        policy, estimator, epsilon, _, _, rmse, half = (cell.strip() for cell in line.strip("|").split("|"))
        rows.append({"policy": policy, "estimator": estimator, "epsilon": float(epsilon), "rmse": float(rmse),
                     "half": float(half)})  # fmt: skip
    return rows


def error_svg(rows: list[dict[str, object]]) -> str:
    """The figure as an SVG element (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = list(dict.fromkeys(str(row["policy"]) for row in rows))
    fig, axes = plt.subplots(1, len(policies), figsize=(3.4 * len(policies), 3.2), squeeze=False, sharey=True)
    for axis, policy in zip(axes[0], policies, strict=True):
        mine = [row for row in rows if row["policy"] == policy]
        for index, estimator in enumerate(dict.fromkeys(str(row["estimator"]) for row in mine)):
            points = [row for row in mine if row["estimator"] == estimator]
            axis.loglog([p["epsilon"] for p in points], [p["rmse"] for p in points], "o-", color=f"C{index}",
                        label=estimator)  # fmt: skip
            if float(points[0]["half"]) > 0:  # type: ignore[arg-type]
                axis.axhline(float(points[0]["half"]), color=f"C{index}", ls="--", lw=0.8)  # type: ignore[arg-type]
        axis.set(title=policy, xlabel="ε")
    axes[0][0].set_ylabel("RMSE against the non-private estimate")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    return re.sub(r"^.*?(<svg)", r"\1", buffer.getvalue(), flags=re.DOTALL)


def evaluation_plot_markdown(book_path: Path = BOOK) -> str:
    """The marker's replacement: the figure, or a note when the book has no error table yet."""
    rows = error_rows(book_path.read_text(encoding="utf-8")) if book_path.is_file() else []
    if not rows:
        return "*(The results book has no error-over-ε table yet: run the commands above, then `privbandits report " \
               "--book docs/results.md`.)*"
    return f'<figure markdown="0">\n{error_svg(rows)}\n</figure>'
