"""A translator saved and loaded (`save_translator`, `load_translator`) translates as before, and the exported
SavedModel (`export_saved_model`) serves strings with the translator's greedy output."""

import warnings

import pytest

import transformer_lib as tl
from transformer_lib.export.saved_model import load_translator, save_translator


@pytest.fixture(scope="module")
def tiny(trained_tiny):
    return load_translator(trained_tiny)


def test_saved_translator_reloads_and_translates_identically(tiny, tmp_path):
    sentences = [s for s, _ in tl.load_parallel_corpus("synthetic", "test")[:20]]
    save_translator(tiny, tmp_path / "copy")
    reloaded = load_translator(tmp_path / "copy")
    assert reloaded(sentences) == tiny(sentences)
    assert reloaded(sentences, beam_size=1) == tiny(sentences, beam_size=1)
    with pytest.raises(FileNotFoundError, match="is not a saved translator: model.keras"):
        load_translator(tmp_path / "nothing-here")


def test_saved_model_serves_strings_with_the_translators_greedy_output(tiny, tmp_path):
    import tensorflow as tf

    from transformer_lib.export.saved_model import export_saved_model

    texts = [s for s, _ in tl.load_parallel_corpus("synthetic", "test")[:25]] + ["", "   ", "\u00a0", "\u3000 ", "тысяча " * 40]
    export_saved_model(tiny, tmp_path / "saved")
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"](texts=tf.constant(texts))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the over-long input is cut in both, with a warning here
        expected = tiny(texts, beam_size=1)
    assert [t.decode("utf-8") for t in served["output_0"].numpy()] == expected
