"""The record of chapter 5's trained heads: what `record_heads` stores is attention (rows of weights that
sum to 1, one matrix per layer and head), it survives a save and a load, its untrained half differs from
the trained one, and the committed record the chapter reads is well formed."""

import json

import keras
import numpy as np
import pytest

import transformer_lib as tl
from transformer_lib.book import trained_heads
from transformer_lib.book.trained_heads import head_summary, load_heads, record_heads, save_heads
from transformer_lib.decoding.translator import Translator

SENTENCE = "сто двадцать три"


@pytest.fixture(scope="module", params=[False, True], ids=["post-LN", "pre-LN"])
def translator(request):
    keras.utils.set_random_seed(42)  # not the record's seed: the "trained" weights must differ from the random ones
    pairs = tl.load_parallel_corpus("synthetic", "train")[:300]
    tokenizers = tl.train_tokenizers(pairs, vocab_size=300)
    model = tl.Transformer.from_preset("tiny", tokenizers[0].vocab_size, tokenizers[1].vocab_size,
                                       norm_first=request.param)
    ids = tokenizers[0].encode([SENTENCE], add_start_end=True)
    model((np.array(ids, np.int32), np.array([[1, 2]], np.int32)))  # builds it
    return Translator(model, *tokenizers, max_length=24)


def test_the_record_holds_one_attention_matrix_per_layer_and_head_whose_rows_sum_to_one(translator):
    record = record_heads(translator, SENTENCE, run={"run": "test"})
    T = len(translator.encode_sources([SENTENCE])[0])
    assert record["pieces"][0] == "<s>" and record["pieces"][-1] == "</s>" and len(record["pieces"]) == T
    assert record["shape"] == [2, 4, T, T]  # the tiny preset: 2 layers of 4 heads
    for key in ("trained", "random"):
        weights = np.asarray(record[key])
        assert weights.shape == (2, 4, T, T) and (weights >= 0).all()
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-3)  # rounded to 4 decimals
        assert np.array_equal(np.round(weights, 4), weights)
    assert record["run"] == {"run": "test"}
    json.dumps(record)  # JSON-able as it is


def test_the_first_layers_weights_are_those_of_its_own_attention(translator):
    ids = translator.encode_sources([SENTENCE])
    encoder = translator.model.encoder
    layer = encoder.stack_layers[0]
    x = encoder.embed(ids, training=False)
    h = layer.attention_add_norm.norm(x) if layer.norm_first else x
    _, expected = layer.self_attention(h, h, h)
    np.testing.assert_allclose(trained_heads.encoder_self_attention(encoder, ids)[0], np.asarray(expected)[0],
                               atol=1e-6)


def test_the_untrained_half_is_another_model_the_same_for_the_same_seed(translator):
    first = record_heads(translator, SENTENCE, run={})
    again = record_heads(translator, SENTENCE, run={})
    assert first["random"] == again["random"] and first["trained"] == again["trained"]
    assert not np.allclose(first["trained"], first["random"], atol=1e-3)
    other_seed = record_heads(translator, SENTENCE, run={}, seed=1)
    assert other_seed["random"] != first["random"]


def test_a_saved_record_loads_back_as_arrays(translator, tmp_path):
    record = record_heads(translator, SENTENCE, run={"run": "test", "provisional": True})
    path = save_heads(record, tmp_path / "results" / "heads.json")
    loaded = load_heads(path)
    assert {k: v for k, v in loaded.items() if k not in ("trained", "random")} == \
        {k: v for k, v in record.items() if k not in ("trained", "random")}
    for key in ("trained", "random"):
        np.testing.assert_array_equal(loaded[key], np.asarray(record[key], np.float32))


def test_a_record_whose_weights_do_not_match_its_shape_is_refused(tmp_path):
    path = tmp_path / "heads.json"
    path.write_text(json.dumps({"shape": [1, 1, 2, 2], "trained": [[[[1, 0], [0, 1]]]], "random": [[[[1, 0]]]]}))
    with pytest.raises(ValueError, match="'random' has shape"):
        load_heads(path)


def test_the_committed_record_is_found_and_well_formed():
    record = load_heads()  # chapters/results/trained_heads.json, found from the repository's root
    layers, heads, T, _ = record["shape"]
    assert len(record["pieces"]) == T and heads == 8  # chapter 5 draws 8 heads
    for key in ("trained", "random"):
        np.testing.assert_allclose(record[key].sum(axis=-1), 1.0, atol=1e-3)
    assert record["run"]["run"] and "machine" in record["run"] and "date" in record["run"]


def test_the_summary_finds_a_previous_token_head_and_a_uniform_head():
    T = 5
    previous = np.eye(T, k=-1)
    previous[0, 0] = 1.0  # the first token has no previous one: it looks at itself
    uniform = np.full((T, T), 1 / T)
    summary = head_summary(np.stack([previous, uniform]))
    np.testing.assert_allclose(summary["previous"], [1.0, 1 / T])
    np.testing.assert_allclose(summary["self"], [1 / T, 1 / T])
    np.testing.assert_allclose(summary["entropy"], [0.0, np.log2(T)])
    assert summary["top"][0] == 0 and summary["top_share"][0] == pytest.approx(2 / T)


def test_the_run_is_described_from_its_training_record(tmp_path):
    run_dir = tmp_path / "small-tatoeba-rus-eng"
    run_dir.mkdir()
    (run_dir / "training.json").write_text(json.dumps({
        "preset": "small", "dropout_rate": 0.2, "machine": "somewhere",
        "history": {"epoch": [1, 2], "val_score": [3.0, 21.456]},
        "weights": {"scores": {"last": 20.1, "average of 10": 22.3}, "chosen": "average of 10"}}))
    run = trained_heads.run_description(run_dir)
    assert run["run"] == "small-tatoeba-rus-eng" and run["provisional"] is False
    assert run["recipe"] == {"preset": "small", "dropout_rate": 0.2}  # the history and choice are summed up, not copied
    assert run["epochs_trained"] == 2 and run["final_val_bleu_greedy"] == 21.46
    assert run["weights"] == "average of 10" and run["val_bleu_beam"] == 22.3
    assert run["machine"] and run["date"]


def test_the_committed_record_is_chapter_7s_translator():
    # chapter 5 says its heads are those of chapter 7's translator: the record must name that run, trained to its end
    recipe, run = tl.Recipe(), load_heads()["run"]
    assert run["run"] == f"{recipe.preset}-{recipe.corpus.replace('/', '-')}", (
        "re-record the heads from chapter 7's run: python tools/record_trained_heads.py --model chapters/runs/...")
    assert run["epochs_trained"] == recipe.epochs and not run.get("provisional")
    assert {key: run["recipe"][key] for key in ("preset", "corpus", "epochs")} == {
        "preset": recipe.preset, "corpus": recipe.corpus, "epochs": recipe.epochs}
