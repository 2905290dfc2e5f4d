import importlib
from pathlib import Path

import numpy as np
import pytest

import transformer_lib.book as book
from transformer_lib import MultiHeadAttention, positional_encoding

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"


def test_show_source_renders_the_librarys_current_code():
    code = book.show_source(positional_encoding)
    text = repr(code)
    assert text.startswith("def positional_encoding(length: int, depth: int):")
    assert "np.where(dims % 2 == 0, np.sin(angles), np.cos(angles))" in text
    assert "<span" in code._repr_html_()  # highlighted for the page
    method = repr(book.show_source(MultiHeadAttention.split_heads))
    assert method.startswith("def split_heads(self, x):")  # methods lose their class indentation


def test_show_source_refuses_what_has_no_source():
    with pytest.raises(TypeError, match="show_source needs a function, class or method"):
        book.show_source(3)


@pytest.mark.parametrize("value, quick", [("1", True), ("", False), ("0", False)])
def test_quick_mode_follows_book_quick(monkeypatch, value, quick):
    monkeypatch.setenv("BOOK_QUICK", value)
    reloaded = importlib.reload(book)
    assert reloaded.QUICK is quick and reloaded.pick("full", "quick") == ("quick" if quick else "full")
    monkeypatch.delenv("BOOK_QUICK")
    importlib.reload(book)


def test_exercise_checks_accept_right_answers_and_explain_wrong_ones(capsys):
    import numpy as np

    from transformer_lib import exercises

    def concatenated(length, depth):
        pe = np.asarray(positional_encoding(length, depth))
        return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)

    exercises.check_concatenated_encoding(concatenated)
    assert "Correct" in capsys.readouterr().out
    with pytest.raises(AssertionError, match=r"concatenated encoding: for length=5, depth=4 entry \(0, 1\) is 1, expected 0"):
        exercises.check_concatenated_encoding(lambda length, depth: np.asarray(positional_encoding(length, depth)))

    from transformer_lib import decoder_mask

    exercises.check_combined_mask(lambda ids: np.asarray(decoder_mask(ids)))
    with pytest.raises(AssertionError, match="combined mask: for target_ids"):
        exercises.check_combined_mask(lambda ids: np.asarray(decoder_mask(ids)) * 0)


def test_attention_and_head_exercise_checks(capsys):
    import numpy as np

    from transformer_lib import exercises

    def attention(q, k, v, mask):
        scores = q @ k.T / np.sqrt(q.shape[-1]) + (0 if mask is None else mask * -1e9)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        return (weights / weights.sum(-1, keepdims=True)) @ v

    exercises.check_attention(attention)
    with pytest.raises(AssertionError, match="attention: for 2 queries, 3 keys, d_k=4, mask=none"):
        exercises.check_attention(lambda q, k, v, mask: attention(q * 2, k, v, mask))  # forgot the scaling, say

    def split(x, heads):
        b, n, d = x.shape
        return x.reshape(b, n, heads, d // heads).transpose(0, 2, 1, 3)

    exercises.check_split_heads(split)
    with pytest.raises(AssertionError, match="split heads: for x of shape"):
        exercises.check_split_heads(lambda x, heads: split(x, heads)[:, ::-1])
    assert capsys.readouterr().out.count("Correct") == 2


def test_padding_share_check(capsys):
    from transformer_lib import exercises

    exercises.check_padding_share(lambda batch: float((batch == 0).mean()))
    assert "Correct" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="padding share: for batch="):
        exercises.check_padding_share(lambda batch: float((batch != 0).mean()))


def test_encoder_layer_schedule_and_length_penalty_checks(capsys):
    """Independent formulas (written from the paper and Wu et al. 2016) pass; typical slips fail."""
    from transformer_lib import exercises

    def encoder_parameters(d, dff):
        return 4 * d * (d + 1) + (d * dff + dff) + (dff * d + d) + 2 * 2 * d

    exercises.check_encoder_layer_parameters(encoder_parameters)
    with pytest.raises(AssertionError, match="you count"):
        exercises.check_encoder_layer_parameters(lambda d, dff: encoder_parameters(d, dff) - 2 * 2 * d)  # no norms

    exercises.check_schedule(lambda n, d, w: d**-0.5 * min(n**-0.5, n * w**-1.5))
    with pytest.raises(AssertionError, match="learning rate: for steps"):
        exercises.check_schedule(lambda n, d, w: d**-0.5 * min(n**-0.5, n * w**-0.5))  # wrong warm-up power

    exercises.check_length_penalty(lambda n, a: ((5 + n) / 6) ** a)
    with pytest.raises(AssertionError, match="length penalty: for length="):
        exercises.check_length_penalty(lambda n, a: (n / 6) ** a)
    assert capsys.readouterr().out.count("Correct") == 3


def test_stored_progress_bars_keep_only_their_final_state():
    from transformer_lib.book import settle_terminal_text

    redraws = "Epoch 1/2\n 1/3 [====>....] loss: 9.1\b\b\b\b\r 3/3 [==========] loss: 7.2\nval_loss 7.0\n"
    assert settle_terminal_text(redraws) == "Epoch 1/2\n 3/3 [==========] loss: 7.2\nval_loss 7.0\n"
    assert settle_terminal_text("plain\ntext") == "plain\ntext"


def test_a_progress_bar_written_in_many_pieces_is_stored_as_its_final_line():
    import nbformat

    from transformer_lib.book import settle_streams

    pieces = ["Epoch 1/1\n", "\b\b\r 1/2 [==>..]", "\b\b\b\r 2/2 [=====]", "\n", "val_loss 7.0\n"]
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=text) for text in pieces]
    outputs.insert(3, nbformat.v4.new_output("stream", name="stderr", text="a warning\n"))
    settled = settle_streams(outputs)
    assert [(o["name"], o["text"]) for o in settled] == [
        ("stdout", "Epoch 1/1\n 2/2 [=====]"), ("stderr", "a warning\n"), ("stdout", "\nval_loss 7.0\n")]


def test_masked_mean_check(capsys):
    from transformer_lib import exercises

    exercises.check_masked_mean(lambda x, ids: (x * (ids != 0)[..., None]).sum(1) / (ids != 0).sum(1, keepdims=True))
    assert "Correct" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="masked mean: for token_ids="):
        exercises.check_masked_mean(lambda x, ids: x.mean(1))  # padding averaged in


def _spoil_a_copy(tmp_path, name, is_target):
    """A copy of chapter `name` whose first target cell has a stale output and whose first other code
    cell with outputs shows "left as it was". Returns (copy, notebook, that target's index, the other's)."""
    import json
    import shutil

    copy = tmp_path / name
    shutil.copy(CHAPTERS / name, copy)
    notebook = json.loads(copy.read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    targets = [c for c in code if is_target("".join(c["source"]))]
    others = [c for c in code if c not in targets and c["outputs"]]
    assert targets and others
    targets[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "stale"}]
    others[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "left as it was"}]
    copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return copy, notebook, notebook["cells"].index(targets[0]), notebook["cells"].index(others[0])


def _assert_refreshed_as_a_full_run(copy, target, other):
    import json

    refreshed = json.loads(copy.read_text())
    original = json.loads((CHAPTERS / copy.name).read_text())
    assert refreshed["cells"][target] == original["cells"][target]  # what a full run stored, exactly
    assert "".join(refreshed["cells"][other]["outputs"][0]["text"]) == "left as it was"


def test_refresh_listings_reruns_only_the_listing_cells_and_reproduces_a_clean_run(tmp_path):
    copy, _, target, other = _spoil_a_copy(tmp_path, "04_attention.ipynb", book.LISTING.match)
    assert book.refresh_listings([str(copy)]) == 1
    _assert_refreshed_as_a_full_run(copy, target, other)


def test_diagram_cells_are_recognised_and_nothing_else():
    assert book.is_diagram_cell("from transformer_lib.diagrams import architecture_diagram\n\n"
                                "architecture_diagram(['feed-forward'], title='x')\nplt.show()")
    assert book.is_diagram_cell("# the idea\ntl.diagrams.qkv_diagram()\nplt.show()")
    assert not book.is_diagram_cell("plt.show()")  # draws no diagram
    assert not book.is_diagram_cell("model.fit(data)\narchitecture_diagram()\nplt.show()")  # depends on more
    assert not book.is_diagram_cell("import os; architecture_diagram()")


def test_refresh_diagrams_reruns_only_the_diagram_cells_and_reproduces_a_clean_run(tmp_path):
    import json

    copy, notebook, target, other = _spoil_a_copy(tmp_path, "02_positional_encoding.ipynb", book.is_diagram_cell)
    assert book.refresh_diagrams([str(copy)]) == 1
    _assert_refreshed_as_a_full_run(copy, target, other)
    notebook["cells"][target]["execution_count"] = None  # a new diagram cell: it has no place in the chapter's run
    copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    with pytest.raises(ValueError, match="never ran with the chapter.*run the whole chapter"):
        book.refresh_diagrams([str(copy)])


def test_the_environment_report_names_the_gpu_or_says_how_to_get_one(monkeypatch):
    import keras
    import tensorflow as tf

    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    lines = book.describe_environment().splitlines()
    assert len(lines) == 3 and "none found" in lines[0] and "Runtime > Change runtime type" in lines[0]
    assert lines[1] == f"TensorFlow {tf.__version__}" and lines[2] == f"Keras {keras.__version__}"
    gpu = tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [gpu, gpu])
    monkeypatch.setattr(tf.config.experimental, "get_device_details", lambda device: {"device_name": "NVIDIA T4"})
    assert book.describe_environment().splitlines()[0] == "GPU: NVIDIA T4 and 1 more (training runs on it)."


def test_stored_warnings_name_library_files_from_the_repository():
    text = f"{book.LIBRARY_ROOT}transformer_lib/evaluation.py:41: UserWarning: 1 sentence(s) longer\n"
    assert book.relative_library_paths(text) == "transformer_lib/evaluation.py:41: UserWarning: 1 sentence(s) longer\n"
    settled = book.settle_streams([{"output_type": "stream", "name": "stderr", "text": text}])
    assert book.LIBRARY_ROOT not in settled[0]["text"] and settled[0]["text"].startswith("transformer_lib/")


def test_the_train_step_exercise_passes_the_update_and_names_what_is_missing():
    import tensorflow as tf

    import transformer_lib as tl
    from transformer_lib import exercises

    def step(model, optimizer, batch, loss_fn=tl.masked_loss, update=True):
        (source, target_in), target_out = batch
        with tf.GradientTape() as tape:
            loss = loss_fn(target_out, model((source, target_in), training=True))
        if update:
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    exercises.check_train_step(step)

    def unmasked(labels, logits):  # padding counted in the loss
        return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))

    with pytest.raises(AssertionError, match="padding must not count"):
        exercises.check_train_step(lambda m, o, b: step(m, o, b, loss_fn=unmasked))
    with pytest.raises(AssertionError, match="no weight changed"):
        exercises.check_train_step(lambda m, o, b: step(m, o, b, update=False))
    with pytest.raises(AssertionError, match="returned None"):
        exercises.check_train_step(lambda m, o, b: None)


def _union_find_groups(pairs, normalise=True):
    parent = {}

    def root(node):
        parent.setdefault(node, node)
        while parent[node] != node:
            node = parent[node]
        return node

    clean = (lambda text: " ".join(text.split())) if normalise else (lambda text: text)
    for source, target in pairs:
        parent[root("t:" + clean(target))] = root("s:" + clean(source))
    return [root("s:" + clean(source)) for source, _ in pairs]


def test_the_group_pairs_exercise_wants_chains_and_normalised_whitespace():
    from transformer_lib import exercises

    exercises.check_group_pairs(_union_find_groups)
    with pytest.raises(AssertionError, match="positions"):  # whitespace not normalised
        exercises.check_group_pairs(lambda pairs: _union_find_groups(pairs, normalise=False))
    with pytest.raises(AssertionError, match="positions"):  # grouped by the source sentence only: the old leak
        exercises.check_group_pairs(lambda pairs: [source for source, _ in pairs])
    with pytest.raises(AssertionError, match="one label per pair"):
        exercises.check_group_pairs(lambda pairs: [0])


def test_the_positional_encoding_and_look_ahead_exercises():
    from transformer_lib import exercises

    def encoding(length, depth, swap=False):
        angles = np.arange(length)[:, None] / 10000 ** (np.arange(0, depth, 2) / depth)
        out = np.zeros((length, depth))
        out[:, 0::2], out[:, 1::2] = (np.cos(angles), np.sin(angles)) if swap else (np.sin(angles), np.cos(angles))
        return out

    exercises.check_positional_encoding(encoding)
    with pytest.raises(AssertionError, match="positional encoding"):
        exercises.check_positional_encoding(lambda n, d: encoding(n, d, swap=True))
    exercises.check_look_ahead_mask(lambda size: np.triu(np.ones((size, size)), k=1))
    with pytest.raises(AssertionError, match="look-ahead mask"):
        exercises.check_look_ahead_mask(lambda size: np.triu(np.ones((size, size)), k=0))  # blocks itself too


def test_the_causal_self_attention_exercise():
    from transformer_lib import exercises

    def causal(x, w_q, w_k, w_v, mask=True):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        scores = q @ k.T / np.sqrt(k.shape[-1])
        if mask:
            scores = np.where(np.triu(np.ones(scores.shape), k=1) == 1, -1e9, scores)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        return weights / weights.sum(-1, keepdims=True) @ v

    exercises.check_causal_self_attention(causal)
    with pytest.raises(AssertionError, match="causal self-attention"):
        exercises.check_causal_self_attention(lambda *args: causal(*args, mask=False))


def test_the_merge_heads_and_feed_forward_exercises():
    from transformer_lib import exercises

    exercises.check_merge_heads(lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1))
    with pytest.raises(AssertionError, match="merge heads"):  # reshaped without moving the heads axis
        exercises.check_merge_heads(lambda x: x.reshape(x.shape[0], x.shape[2], -1))
    exercises.check_feed_forward(lambda x, w1, b1, w2, b2: np.maximum(0, x @ w1 + b1) @ w2 + b2)
    with pytest.raises(AssertionError, match="feed-forward"):  # the ReLU forgotten
        exercises.check_feed_forward(lambda x, w1, b1, w2, b2: (x @ w1 + b1) @ w2 + b2)


def test_the_beam_step_exercise_wants_the_best_of_all_beams_together():
    from transformer_lib import exercises

    def beam_step(scores, log_probs, k):
        totals = (scores[:, None] + log_probs).reshape(-1)
        best = np.argsort(-totals)[:k]
        return best // log_probs.shape[1], best % log_probs.shape[1], totals[best]

    def best_of_each_beam(scores, log_probs, k):  # a common mistake: one survivor per beam
        tokens = log_probs.argmax(axis=1)
        totals = scores + log_probs.max(axis=1)
        order = np.argsort(-totals)
        return order, tokens[order], totals[order]

    exercises.check_beam_step(beam_step)
    with pytest.raises(AssertionError, match="beam step"):
        exercises.check_beam_step(best_of_each_beam)


def _bert_masking(ids, mask_id, rng, rate=0.15, mask_share=0.8, skip_special=True):
    chosen = (rng.random(ids.shape) < rate) & ((ids > 2) if skip_special else (ids >= 0))
    action = rng.random(ids.shape)
    inputs = np.where(chosen & (action < mask_share), mask_id, ids)
    random_ids = rng.integers(3, mask_id, size=ids.shape)
    inputs = np.where(chosen & (action >= mask_share) & (action < mask_share + 0.1), random_ids, inputs)
    return inputs, np.where(chosen, ids, 0)


def test_the_bert_masking_exercise_checks_rules_and_shares():
    from transformer_lib import exercises

    exercises.check_bert_masking(_bert_masking)
    with pytest.raises(AssertionError, match="padding, START or END"):
        exercises.check_bert_masking(lambda ids, m, rng: _bert_masking(ids, m, rng, skip_special=False))
    with pytest.raises(AssertionError, match="mask id / chosen"):  # every chosen token masked: no 10/10
        exercises.check_bert_masking(lambda ids, m, rng: _bert_masking(ids, m, rng, mask_share=1.0))
    with pytest.raises(AssertionError, match="chosen / real tokens"):
        exercises.check_bert_masking(lambda ids, m, rng: _bert_masking(ids, m, rng, rate=0.3))


def test_the_machine_line_names_the_cpu_and_its_widest_vector_instructions():
    from transformer_lib.machine import cpu_model

    zen4 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 avx512f avx512bw\n\nprocessor\t: 1\n"
    assert cpu_model(zen4) == "AMD EPYC with AVX-512"
    zen3 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n"
    assert cpu_model(zen3) == "AMD EPYC with AVX2"
    assert cpu_model("model name\t: Old CPU\nflags\t\t: fpu sse2\n") == "Old CPU"
    assert cpu_model("") != ""  # no /proc/cpuinfo: what platform knows
