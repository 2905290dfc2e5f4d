"""§5.3: the learning-rate schedule, d_model and warmup_steps picked with menus."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from transformer_lib.utils.checks import require_positive_int
from transformer_lib.book.figures._data import _select
from transformer_lib.book.figures.interactive import InteractiveFigure
from transformer_lib.training.objective import TransformerSchedule


def schedule_figure(d_models: Sequence[int] = (128, 256, 512, 1024),
                    warmups: Sequence[int] = (1000, 2000, 4000, 8000),
                    steps: Sequence[int] | None = None) -> InteractiveFigure:
    """Pick d_model and warmup_steps: the learning rate of §5.3,
    lrate = d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5), over the steps; the
    other curves of the grid stay in grey behind it.

    Args:
        d_models, warmups: the grid the menus offer (512 and 4000, the paper's base model, are
            picked first when offered).
        steps: the paper's step numbers (from 1); default 1 and every 200th step up to 40,000.

    Rates come from `transformer_lib.training.objective.TransformerSchedule`, rounded to 4 significant digits.
    """
    steps = np.asarray([1, *range(200, 40_001, 200)] if steps is None else steps)
    for name, values in (("d_models", d_models), ("warmups", warmups), ("steps", steps)):
        if len(values) == 0:
            raise ValueError(f"schedule_figure needs at least one value in {name}.")
        for value in values:
            require_positive_int(f"each of {name}", value)
    d_models, warmups = [int(d) for d in d_models], [int(w) for w in warmups]
    records = []
    for d_model in d_models:
        for warmup in warmups:
            rates = np.asarray(TransformerSchedule(d_model, warmup)(steps - 1))  # Keras counts updates from 0
            records.append({"d_model": d_model, "warmup_steps": warmup, "step": steps.tolist(),
                            "rate": [float(f"{r:.4g}") for r in rates]})
    d_model = _select("d_model", d_models, [str(d) for d in d_models], 512 if 512 in d_models else None)
    warmup = _select("warmup_steps", warmups, [str(w) for w in warmups], 4000 if 4000 in warmups else None)
    curves = alt.Chart(alt.Data(values=records)).transform_flatten(["step", "rate"]).encode(
        x=alt.X("step:Q", title="step_num"),
        y=alt.Y("rate:Q", title="learning rate", axis=alt.Axis(format=".1e")),
    )
    grey = curves.mark_line(color="#cccccc", strokeWidth=1).encode(detail=["d_model:N", "warmup_steps:N"])
    picked = curves.transform_filter((alt.datum.d_model == d_model) & (alt.datum.warmup_steps == warmup))
    hover = alt.selection_point(name="hover", on="pointerover", nearest=True, fields=["step"], empty=False,
                                clear="pointerout")
    line = picked.mark_line(color="#b2182b", strokeWidth=2.5)
    dots = picked.mark_point(color="#b2182b", filled=True, size=60).encode(
        opacity=alt.condition(hover, alt.value(1), alt.value(0)),
        tooltip=["d_model:Q", "warmup_steps:Q", "step:Q", alt.Tooltip("rate:Q", format=".3e")],
    ).add_params(hover).properties(name="schedule_points")  # a fixed name: the same spec on every run
    chart = alt.layer(grey, line, dots).add_params(d_model, warmup).properties(
        width=520, height=280, title="lrate = d_model^-0.5 · min(step_num^-0.5, step_num · warmup_steps^-1.5)")
    return InteractiveFigure(
        chart, "schedule",
        f"Interactive figure: the learning rate of §5.3 over {int(steps.max()):,} steps for d_model in "
        f"{d_models} and warmup_steps in {warmups}; menus pick the curve.")
