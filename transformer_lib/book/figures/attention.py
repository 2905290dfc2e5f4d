"""§3.2: attention weights, as a heatmap picked by sentence, kind of attention, layer and head; and the
data it draws, every weight of a translator's model for some sentences."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from transformer_lib.book.figures._data import _select
from transformer_lib.book.figures.interactive import InteractiveFigure
from transformer_lib.layers.masks import decoder_mask, padding_mask
from transformer_lib.data.tokenizer import START_ID

ATTENTION_KINDS = {  # kind: (label, query side, key side); side 0 = source tokens, 1 = target tokens
    "encoder": ("encoder self-attention", 0, 0),
    "decoder": ("decoder self-attention (masked)", 1, 1),
    "cross": ("cross-attention: target queries, source keys", 1, 0),
}


def _attention_matrices(examples: Sequence[dict]) -> tuple[list[dict], tuple[int, int]]:
    """One record per (sentence, kind, layer, head) matrix, its weights row by row in thousandths, and
    the (layers, heads) every example shares; a clear error for weights of the wrong shape."""
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
    return matrices, shape


def _attention_heatmap(matrices: list[dict]) -> alt.Chart:
    """The heatmap of the matrix the parameters sentence, kind, layer and head pick, its tokens (the
    parameter `tokens`) on the axes: the browser looks the matrix up and lays its cells out."""
    query_side = "(kind === 'encoder' ? 0 : 1)"
    key_side = "(kind === 'decoder' ? 1 : 0)"
    cells = max(m["queries"] * m["keys"] for m in matrices)
    return alt.Chart(alt.sequence(0, cells, as_="cell")).transform_calculate(  # cell = query * keys + key
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
                 title=alt.Title(alt.expr("'layer ' + (layer + 1) + ', head ' + (head + 1)")))


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
    matrices, (layers, heads) = _attention_matrices(examples)
    sentence = _select("sentence", list(range(len(examples))),
                       [" → ".join(filter(None, (e["sentence"], e.get("translation")))) for e in examples])
    kind = _select("kind", list(ATTENTION_KINDS), [label for label, _, _ in ATTENTION_KINDS.values()])
    layer = _select("layer", list(range(layers)), [str(i + 1) for i in range(layers)])
    head = _select("head", list(range(heads)), [str(i + 1) for i in range(heads)])
    # The tokens live in a parameter: tokens[sentence][side][position], side 0 = source, 1 = target.
    tokens = alt.param(name="tokens", value=[[list(e["source_tokens"]), list(e["target_tokens"])] for e in examples])
    chart = _attention_heatmap(matrices).add_params(sentence, kind, layer, head, tokens)
    return InteractiveFigure(
        chart, "attention",
        f"Interactive figure: attention weights of {len(examples)} sentence(s), {layers} layers × {heads} heads; "
        f"menus pick the sentence, the kind of attention (encoder, decoder, cross), the layer and the head.")


def _sublayer_input(add_norm, x):
    """What the sub-layer inside `add_norm` reads: LayerNorm(x) for pre-LN, x itself for post-LN."""
    return add_norm.norm(x) if add_norm.norm_first else x


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
        h = _sublayer_input(layer.attention_add_norm, x)
        encoder_weights.append(layer.self_attention(h, h, h, mask=source_mask)[1])  # (1, heads, src, src)
        x = layer(x, padding_mask=source_mask, training=False)
    encoder_output = encoder.finish(x)

    target_mask = decoder_mask(decoder_input_ids)  # (1, 1, tgt, tgt)
    x = decoder.embed(decoder_input_ids, training=False)  # (1, tgt, d_model)
    decoder_weights, cross_weights = [], []
    for layer in decoder.stack_layers:
        h = _sublayer_input(layer.self_attention_add_norm, x)
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
