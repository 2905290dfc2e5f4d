"""Interactive figures for the book: the data is computed here, in Python, and goes into the page;
the interaction (a slider, a menu, a tooltip) runs in the reader's browser, with no kernel behind it.

Each function returns an `InteractiveFigure`, an Altair (Vega-Lite) chart that a notebook cell shows
by ending with it:

    positional_encoding_figure  §3.5   pick a dimension: its curve, and its column of the heatmap
    masks_figure                §3.2.3 pick a sequence of a padded batch: its padding, look-ahead and combined masks
    schedule_figure             §5.3   pick d_model and warmup_steps: the learning rate over the steps
    training_curves_figure             a training history: one panel per metric, the epoch under the pointer
    attention_figure            §3.2   pick a sentence, a kind of attention, a layer and a head: the weights
    attention_examples                 the data of attention_figure, from a translator and some sentences

How a figure reaches the page: in the notebook's stored output, its HTML is a
`<div class="vega-figure">` holding the Vega-Lite spec as JSON (data included, no URL, no script
to run); the site's own JavaScript (book_js/vega-figures.js, served with Vega from the site itself)
finds every such div and draws it. JupyterLab draws the `application/vnd.vegalite.v5+json` copy
natively. In Colab the figure uses Altair's own renderer (Vega from a CDN).

This module needs Altair (`pip install altair`); `import transformer_lib` does not import it.
"""

from __future__ import annotations

import dataclasses
import html
import json
import sys
from collections.abc import Sequence

import altair as alt
import numpy as np

from transformer_lib._checks import require_positive_int
from transformer_lib.masks import decoder_mask, look_ahead_mask, padding_mask
from transformer_lib.objective import TransformerSchedule
from transformer_lib.positional_encoding import positional_encoding
from transformer_lib.tokenizer import START_ID

VEGALITE_MIME_TYPE = "application/vnd.vegalite.v5+json"


@dataclasses.dataclass
class InteractiveFigure:
    """An Altair chart that shows itself on the book's static site, in JupyterLab and in Colab.

    Attributes:
        chart: the Altair chart, with its data inline.
        name: a short identifier (`data-figure` in the HTML), e.g. "positional-encoding".
        description: one line saying what the figure shows (the text/plain output and the
            figure's label for screen readers).
    """

    chart: alt.TopLevelMixin
    name: str
    description: str

    def spec(self) -> dict:
        """The Vega-Lite spec, validated against Altair's schema."""
        return self.chart.to_dict(validate=True)

    def to_html(self) -> str:
        return figure_html(self.spec(), self.name, self.description)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        if "google.colab" in sys.modules:  # Colab renders neither our div nor the Vega-Lite MIME type
            return self.chart._repr_mimebundle_(include, exclude)
        spec = self.spec()
        return {"text/html": figure_html(spec, self.name, self.description),
                VEGALITE_MIME_TYPE: spec,
                "text/plain": self.description}


def figure_html(spec: dict, name: str, description: str) -> str:
    """The HTML of a figure: a `<div class="vega-figure">` holding `spec` as JSON, for the site's
    script to draw, and a line of text shown until it does (or where no script runs).

    The JSON is inert (`type="application/json"`), every "<" in it is escaped so that no string of
    the data can close the script element, and "$schema" (a URL) is left out: the site's Vega-Lite
    is the version of Altair's schema.
    """
    spec = {key: value for key, value in spec.items() if key != "$schema"}
    data = json.dumps(spec, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    label = html.escape(description)
    return (f'<div class="vega-figure" data-figure="{html.escape(name)}" role="figure" aria-label="{label}" '
            f'style="overflow-x: auto">'
            f'<script type="application/json">{data}</script>'
            f'<p class="vega-figure-fallback"><em>Interactive figure (needs JavaScript): {label}</em></p>'
            f"</div>")


# --- Data helpers: one record per curve or per matrix, arrays flattened in the browser -------------

def _rounded(values, decimals: int) -> list:
    return np.round(np.asarray(values, np.float64), decimals).tolist()


def _matrix_record(matrix, decimals: int = 3, **keys) -> dict:
    """One record for a `[queries, keys]` matrix: parallel lists `query`, `key`, `value`, one entry
    per cell (row by row); a chart's `transform_flatten(["query", "key", "value"])` makes them rows."""
    matrix = np.asarray(matrix, np.float64)
    query, key = np.indices(matrix.shape)
    return {**keys, "query": query.ravel().tolist(), "key": key.ravel().tolist(),
            "value": _rounded(matrix.ravel(), decimals)}


def _select(name: str, options: list, labels: list[str], value=None) -> alt.Parameter:
    """A parameter set by a menu under the chart."""
    return alt.param(name=name, value=options[0] if value is None else value,
                     bind=alt.binding_select(options=options, labels=labels, name=f"{name} "))


# --- §3.5: positional encoding ----------------------------------------------------------------------

def positional_encoding_figure(length: int = 64, depth: int = 64) -> InteractiveFigure:
    """Pick a dimension with a slider: its curve PE[:, dimension] over the positions, and the whole
    encoding as a heatmap `[length, depth]` with that dimension's column outlined.

    Values are `transformer_lib.positional_encoding(length, depth)`, rounded to 4 decimals.
    """
    encoding = np.asarray(positional_encoding(length, depth))  # (length, depth)
    positions = list(range(length))
    data = alt.Data(values=[{"dimension": d, "position": positions, "value": _rounded(encoding[:, d], 4)}
                            for d in range(depth)])  # one record per dimension: its curve
    dimension = alt.param(name="dimension", value=0,
                          bind=alt.binding_range(min=0, max=depth - 1, step=1, name="dimension "))
    points = alt.Chart(data).transform_flatten(["position", "value"])  # one row per (position, dimension)
    # Even dimensions are sines, odd ones cosines; dimensions 2i and 2i+1 share the wavelength.
    title = alt.expr(f"'PE[:, ' + dimension + '] = ' + (dimension % 2 ? 'cos' : 'sin') "
                     f"+ '(pos / 10000^(' + 2 * floor(dimension / 2) + '/{depth}))'")
    curve = points.transform_filter(alt.datum.dimension == dimension).mark_line(point=True).encode(
        x=alt.X("position:Q", title="position"),
        y=alt.Y("value:Q", title="PE[position, dimension]", scale=alt.Scale(domain=[-1, 1])),
        tooltip=["position:Q", "dimension:Q", alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=240, height=200, title=alt.Title(title))
    ticks = alt.Axis(values=list(range(0, max(length, depth), 8)), labelAngle=0)
    heatmap = points.mark_rect().encode(
        x=alt.X("dimension:O", axis=ticks),
        y=alt.Y("position:O", axis=ticks),
        color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domain=[-1, 1]), title="PE"),
        tooltip=["position:Q", "dimension:Q", alt.Tooltip("value:Q", format=".4f")],
    )
    column = alt.Chart(data).transform_filter(alt.datum.dimension == dimension).mark_rect(
        filled=False, stroke="black", strokeWidth=2).encode(x="dimension:O")  # one record: the whole column
    whole = alt.layer(heatmap, column).properties(width=240, height=240, title="the whole encoding")
    return InteractiveFigure(
        alt.hconcat(curve, whole).add_params(dimension), "positional-encoding",
        f"Interactive figure: the positional encoding of {length} positions in {depth} dimensions (§3.5); "
        f"a slider picks the dimension whose curve is drawn.")


# --- §3.2.3: masks ----------------------------------------------------------------------------------

MASK_NAMES = ("padding mask", "look-ahead mask", "combined mask")


def masks_figure(lengths: Sequence[int] = (5, 3, 6)) -> InteractiveFigure:
    """Pick a sequence of a padded batch: its padding mask, the look-ahead mask and the decoder's
    combined mask (`decoder_mask`), each as a `[query, key]` grid; 1 = blocked, the library's
    polarity (`transformer_lib.masks`).

    Args:
        lengths: the real tokens of each sequence; the batch is padded with id 0 to the longest.
    """
    if len(lengths) == 0:
        raise ValueError("masks_figure needs at least one sequence length.")
    for n in lengths:
        require_positive_int("each of lengths", n)
    lengths = [int(n) for n in lengths]
    width = max(lengths)
    token_ids = np.array([[7] * n + [0] * (width - n) for n in lengths], np.int32)  # any id but 0 is a token
    padding = np.broadcast_to(np.asarray(padding_mask(token_ids))[:, 0], (len(lengths), width, width))
    ahead = np.asarray(look_ahead_mask(width))  # (width, width), the same for every sequence
    combined = np.asarray(decoder_mask(token_ids))[:, 0]  # (batch, width, width)
    data = alt.Data(values=[
        _matrix_record(matrix, 0, sequence=b, mask=name)
        for b in range(len(lengths))
        for name, matrix in zip(MASK_NAMES, (padding[b], ahead, combined[b]))])
    sequence = _select("sequence", list(range(len(lengths))),
                       [f"{b}: {n} tokens, {width - n} padding" for b, n in enumerate(lengths)])
    cells = alt.Chart().encode(
        x=alt.X("key:O", title="key position"),
        y=alt.Y("query:O", title="query position"),
    )
    grid = cells.mark_rect(stroke="white").encode(
        color=alt.Color("value:N", scale=alt.Scale(domain=[0, 1], range=["#f2f2f2", "#b2182b"]),
                        title="1 = blocked"),
        tooltip=["query:Q", "key:Q", alt.Tooltip("value:Q", title="blocked")],
    )
    text = cells.mark_text().encode(text="value:Q", color=alt.condition(alt.datum.value == 1, alt.value("white"),
                                                                        alt.value("black")))
    chart = alt.layer(grid, text, data=data).transform_filter(alt.datum.sequence == sequence).transform_flatten(
        ["query", "key", "value"]).properties(width=alt.Step(24), height=alt.Step(24)).facet(
        column=alt.Column("mask:N", sort=list(MASK_NAMES), title=None)).add_params(sequence)
    return InteractiveFigure(
        chart, "masks",
        f"Interactive figure: padding, look-ahead and combined masks of a batch of {len(lengths)} sequences "
        f"padded to {width} (§3.2.3; 1 = blocked); a menu picks the sequence.")


# --- §5.3: the learning-rate schedule ---------------------------------------------------------------

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

    Rates come from `transformer_lib.objective.TransformerSchedule`, rounded to 4 significant digits.
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


# --- Training curves --------------------------------------------------------------------------------

def training_curves_figure(history: dict[str, Sequence[float]], metrics: Sequence[str] | None = None
                           ) -> InteractiveFigure:
    """Line charts of a training history, one panel per metric (its training and validation series
    together: "loss" with "val_loss"); the pointer picks the nearest epoch, whose values the tooltip
    lists, and marks it in every panel.

    Args:
        history: per-epoch lists of equal length, like Keras's `History.history` or what
            `transformer_lib.training.train` returns. An "epoch" list numbers the epochs (else
            1, 2, ...); missing or non-finite values are left out of the lines.
        metrics: the series to draw; default every series but "epoch" and "seconds".
    """
    series = [k for k in history if k not in ("epoch", "seconds")] if metrics is None else list(metrics)
    missing = [k for k in series if k not in history]
    if not series or missing:
        raise ValueError(f"training_curves_figure needs series of the history to draw; missing: {missing}, "
                         f"the history has {sorted(history)}.")
    lengths = {k: len(history[k]) for k in series}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"The history's lists must have one entry per epoch, but their lengths differ: {lengths}.")
    n = next(iter(lengths.values()))
    if n == 0:
        raise ValueError("The history has no epoch yet: train for at least one epoch first.")
    epochs = [int(e) for e in history["epoch"]] if "epoch" in history else list(range(1, n + 1))

    def value(v):
        return float(v) if v is not None and np.isfinite(v) else None

    data = alt.Data(values=[{"epoch": epochs[i], **{k: value(history[k][i]) for k in series}} for i in range(n)])
    hover = alt.selection_point(name="epoch_under_pointer", on="pointerover", nearest=True, fields=["epoch"],
                                empty=False, clear="pointerout")
    # Label whole epochs only, at most ten: every 1, 2, 5, 10, 20, 50, ... epochs, the first that fits.
    every = next(s * 10**k for k in range(12) for s in (1, 2, 5) if len(epochs) <= 10 * s * 10**k)
    ticks = [e for e in range(min(epochs), max(epochs) + 1) if e % every == 0 or every == 1]
    epoch = alt.X("epoch:Q", title="epoch", axis=alt.Axis(values=ticks, format="d"))
    tooltip = ["epoch:Q", *[alt.Tooltip(f"{k}:Q", format=".4g") for k in series]]
    panels = []
    for metric in dict.fromkeys(k.removeprefix("val_") for k in series):  # "loss" and "val_loss": one panel
        own = [k for k in series if k.removeprefix("val_") == metric]
        lines = alt.Chart(data).transform_fold(own, as_=["series", "value"]).transform_filter(
            "isValid(datum.value)").transform_calculate(
            split="indexof(datum.series, 'val_') === 0 ? 'validation' : 'training'").encode(
            x=epoch,
            y=alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False)),
            color=alt.Color("split:N", scale=alt.Scale(domain=["training", "validation"]), title=None),
        )
        marked = lines.mark_point(filled=True, size=50).encode(opacity=alt.condition(hover, alt.value(1), alt.value(0)))
        rule = alt.Chart(data).mark_rule(color="#888888").encode(
            x=epoch, opacity=alt.condition(hover, alt.value(0.7), alt.value(0)), tooltip=tooltip)
        pointer = alt.Chart(data).mark_point(opacity=0).encode(x=epoch, tooltip=tooltip).add_params(
            hover).properties(name=f"pointer_{len(panels)}")  # a fixed name: the same spec on every run
        panel = alt.layer(lines.mark_line(), marked, rule, pointer)
        panels.append(panel.properties(width=250, height=180, title=metric))
    return InteractiveFigure(
        alt.concat(*panels, columns=2), "training-curves",
        f"Interactive figure: {', '.join(series)} over {n} epochs; the tooltip gives the values of the epoch "
        f"under the pointer.")


# --- §3.2: attention weights ------------------------------------------------------------------------

ATTENTION_KINDS = {  # kind: (label, query side, key side); side 0 = source tokens, 1 = target tokens
    "encoder": ("encoder self-attention", 0, 0),
    "decoder": ("decoder self-attention (masked)", 1, 1),
    "cross": ("cross-attention: target queries, source keys", 1, 0),
}


def attention_figure(examples: Sequence[dict]) -> InteractiveFigure:
    """Pick a sentence, a kind of attention, a layer and a head: the attention weights as a heatmap,
    queries down, keys across, the tokens on the axes.

    Args:
        examples: one dict per sentence (`attention_examples` makes them):
            "sentence": the source text ("translation", optional, is added to its menu entry);
            "source_tokens", "target_tokens": the pieces along each side (the target side is the
                decoder's input: <s> then the translation);
            "weights": {"encoder": `[layers, heads, src, src]`, "decoder": `[layers, heads, tgt, tgt]`,
                "cross": `[layers, heads, tgt, src]`}, rows summing to 1.

    To keep the page small, each matrix is one record holding its weights row by row in thousandths
    (3 decimals, about 3 bytes a weight: one sentence of 12 tokens through the `small` preset's 4 layers
    of 8 heads takes about 50 KB); the browser looks up the matrix the menus pick and lays its cells out.
    """
    if not examples:
        raise ValueError("attention_figure needs at least one example.")
    matrices, shape = [], None
    for s, example in enumerate(examples):
        sides = (len(example["source_tokens"]), len(example["target_tokens"]))
        for kind, (_, query_side, key_side) in ATTENTION_KINDS.items():
            weights = np.asarray(example["weights"][kind], np.float64)  # (layers, heads, queries, keys)
            expected = (sides[query_side], sides[key_side])
            if weights.ndim != 4 or weights.shape[2:] != expected or (shape and weights.shape[:2] != shape):
                raise ValueError(
                    f"Example {s} ({example['sentence']!r}): {kind} weights have shape {weights.shape}; expected "
                    f"[layers, heads, {expected[0]}, {expected[1]}] from its {sides[0]} source and {sides[1]} "
                    f"target tokens" + (f", with {shape[0]} layers and {shape[1]} heads like the first."
                                        if shape else "."))
            shape = weights.shape[:2]
            matrices += [{"matrix": f"{s}/{kind}/{layer}/{head}", "queries": expected[0], "keys": expected[1],
                          "thousandths": np.rint(1000 * weights[layer, head].ravel()).astype(int).tolist()}
                         for layer in range(shape[0]) for head in range(shape[1])]
    layers, heads = shape
    sentence = _select("sentence", list(range(len(examples))),
                       [" → ".join(filter(None, (e["sentence"], e.get("translation")))) for e in examples])
    kind = _select("kind", list(ATTENTION_KINDS), [label for label, _, _ in ATTENTION_KINDS.values()])
    layer = _select("layer", list(range(layers)), [str(i + 1) for i in range(layers)])
    head = _select("head", list(range(heads)), [str(i + 1) for i in range(heads)])
    # The tokens live in a parameter: tokens[sentence][side][position], side 0 = source, 1 = target.
    tokens = alt.param(name="tokens", value=[[list(e["source_tokens"]), list(e["target_tokens"])] for e in examples])
    query_side = "(kind === 'encoder' ? 0 : 1)"
    key_side = "(kind === 'decoder' ? 1 : 0)"
    cells = max(m["queries"] * m["keys"] for m in matrices)
    chart = alt.Chart(alt.sequence(0, cells, as_="cell")).transform_calculate(  # cell = query * keys + key
        matrix="sentence + '/' + kind + '/' + layer + '/' + head",  # the matrix the menus pick ...
    ).transform_lookup(
        lookup="matrix", from_=alt.LookupData(alt.Data(values=matrices), key="matrix",
                                              fields=["queries", "keys", "thousandths"]),  # ... fetched
    ).transform_filter("datum.cell < datum.queries * datum.keys").transform_calculate(
        query="floor(datum.cell / datum.keys)",
        key="datum.cell % datum.keys",
        weight="datum.thousandths[datum.cell] / 1000",
        query_token=f"tokens[sentence][{query_side}][datum.query]",
        key_token=f"tokens[sentence][{key_side}][datum.key]",
    ).mark_rect().encode(
        x=alt.X("key:O", title="key (attended to)",
                axis=alt.Axis(labelExpr=f"tokens[sentence][{key_side}][datum.value]", labelAngle=-60)),
        y=alt.Y("query:O", title="query (attending)",
                axis=alt.Axis(labelExpr=f"tokens[sentence][{query_side}][datum.value]")),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="magma", domain=[0, 1]), title="weight"),
        tooltip=[alt.Tooltip("query_token:N", title="query"), alt.Tooltip("key_token:N", title="key"),
                 alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=alt.Step(22), height=alt.Step(22),
                 title=alt.Title(alt.expr("'layer ' + (layer + 1) + ', head ' + (head + 1)"))
                 ).add_params(sentence, kind, layer, head, tokens)
    return InteractiveFigure(
        chart, "attention",
        f"Interactive figure: attention weights of {len(examples)} sentence(s), {layers} layers × {heads} heads; "
        f"menus pick the sentence, the kind of attention (encoder, decoder, cross), the layer and the head.")


def attention_weights_of_every_kind(model, source_ids, decoder_input_ids) -> dict[str, np.ndarray]:
    """Every attention weight of `model` (a `Transformer`) for one sentence pair, in inference mode.

    Walks the encoder and the decoder layer by layer, as their `call` does, and asks each
    self-attention sub-layer for its weights on the way (the decoder returns only the
    cross-attention ones).

    Args:
        source_ids: int `[1, src]`, START ... END.
        decoder_input_ids: int `[1, tgt]`, START then the translation's ids (no END).

    Returns:
        {"encoder": `[layers, heads, src, src]`, "decoder": `[layers, heads, tgt, tgt]`,
        "cross": `[layers, heads, tgt, src]`} as float32 NumPy arrays.
    """
    encoder, decoder = model.encoder, model.decoder
    source_mask = padding_mask(source_ids)  # (1, 1, 1, src)
    x = encoder.embed(source_ids, training=False)  # (1, src, d_model)
    encoder_weights = []
    for layer in encoder.stack_layers:
        h = layer.attention_add_norm.sublayer_input(x)
        encoder_weights.append(layer.self_attention(h, h, h, mask=source_mask)[1])  # (1, heads, src, src)
        x = layer(x, padding_mask=source_mask, training=False)
    encoder_output = encoder.finish(x)

    target_mask = decoder_mask(decoder_input_ids)  # (1, 1, tgt, tgt)
    x = decoder.embed(decoder_input_ids, training=False)  # (1, tgt, d_model)
    decoder_weights, cross_weights = [], []
    for layer in decoder.stack_layers:
        h = layer.self_attention_add_norm.sublayer_input(x)
        decoder_weights.append(layer.self_attention(h, h, h, mask=target_mask)[1])  # (1, heads, tgt, tgt)
        x, cross = layer(x, encoder_output, target_mask, source_mask, training=False)
        cross_weights.append(cross)  # (1, heads, tgt, src)
    return {kind: np.stack([np.asarray(w[0]) for w in weights]) for kind, weights in
            (("encoder", encoder_weights), ("decoder", decoder_weights), ("cross", cross_weights))}


def attention_examples(translator, sentences: Sequence[str]) -> list[dict]:
    """The examples `attention_figure` draws: each sentence translated greedily by `translator` (a
    `transformer_lib.Translator`), its pieces as `Translator.attention_weights` gives them, and every
    attention weight of the model (`attention_weights_of_every_kind`)."""
    examples = []
    for sentence in sentences:
        translation = translator(sentence, beam_size=1)
        maps = translator.attention_weights(sentence, translation)  # pieces and cross-attention, the library's way
        source_ids = translator.encode_sources([sentence])
        target = translator.target_tokenizer.encode(translation)[: translator.max_length - 1]
        decoder_input = np.array([[START_ID, *target]], np.int32)  # as attention_weights builds it
        examples.append({"sentence": sentence, "translation": translation,
                         "source_tokens": maps["source_pieces"], "target_tokens": maps["target_pieces"],
                         "weights": attention_weights_of_every_kind(translator.model, source_ids, decoder_input)})
    return examples
