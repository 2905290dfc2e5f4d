import importlib

import pytest

import transformer_lib.book as book
from transformer_lib import MultiHeadAttention, positional_encoding


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


def test_refresh_listings_reruns_only_the_listing_cells_and_reproduces_a_clean_run(tmp_path):
    import json
    import shutil
    from pathlib import Path

    chapter = Path(__file__).resolve().parent.parent / "chapters" / "04_attention.ipynb"
    copy = tmp_path / chapter.name
    shutil.copy(chapter, copy)
    notebook = json.loads(copy.read_text())
    listings = [c for c in notebook["cells"] if book.LISTING.match("".join(c["source"]))]
    others = [c for c in notebook["cells"] if c["cell_type"] == "code" and c not in listings and c["outputs"]]
    assert listings and others
    listings[0]["outputs"][0]["data"]["text/plain"] = "stale listing"
    others[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "left as it was"}]
    copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    assert book.refresh_listings([str(copy)]) == 1
    refreshed = json.loads(copy.read_text())
    original = json.loads(chapter.read_text())
    index = notebook["cells"].index(listings[0])
    assert refreshed["cells"][index] == original["cells"][index]  # what a full run stored, exactly
    assert "".join(refreshed["cells"][notebook["cells"].index(others[0])]["outputs"][0]["text"]) == "left as it was"


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
