"""Chapter 6's first run: the numbers corpus, the greedy translation, the verdict, and the check of
the Transformer's call (its right answer, its stub, two wrong answers, and the library's call)."""

import keras
import numpy as np
import pytest

import transformer_lib as tl
from transformer_lib.book import first_run as fr
from transformer_lib.exercises import check_transformer, passed


class Transformer(keras.Model):
    """The chapter's class, with the call written from Figure 1."""

    def __init__(self, num_layers, d_model, num_heads, dff, input_vocab_size, target_vocab_size,
                 dropout_rate=0.1, encoder_layer=tl.EncoderLayer, decoder_layer=tl.DecoderLayer, **kwargs):
        super().__init__(**kwargs)
        self.source_embedding = tl.PositionalEmbedding(input_vocab_size, d_model)
        self.target_embedding = tl.PositionalEmbedding(target_vocab_size, d_model)
        self.dropout = keras.layers.Dropout(dropout_rate)
        self.encoder_layers = [encoder_layer(d_model, num_heads, dff, dropout_rate) for _ in range(num_layers)]
        self.decoder_layers = [decoder_layer(d_model, num_heads, dff, dropout_rate) for _ in range(num_layers)]
        self.final_layer = keras.layers.Dense(target_vocab_size)

    def masks(self, source_ids, target_ids):
        return tl.padding_mask(source_ids), tl.decoder_mask(target_ids)

    def call(self, inputs, training=None):
        source_ids, target_ids = inputs
        source_mask, target_mask = self.masks(source_ids, target_ids)
        x = self.dropout(self.source_embedding(source_ids), training=training)
        for layer in self.encoder_layers:
            x = layer(x, padding_mask=source_mask, training=training)
        y = self.dropout(self.target_embedding(target_ids), training=training)
        for layer in self.decoder_layers:
            y, _ = layer(y, x, self_attention_mask=target_mask, cross_attention_mask=source_mask, training=training)
        return self.final_layer(y)


class NoPaddingMask(Transformer):
    def masks(self, source_ids, target_ids):
        return None, tl.decoder_mask(target_ids)


class NoLookAhead(Transformer):
    def masks(self, source_ids, target_ids):
        return tl.padding_mask(source_ids), None


class Stub(Transformer):
    def call(self, inputs, training=None):
        raise NotImplementedError("the masks, the stacks, the logits")


class CallsTheLibrary(Transformer):
    def call(self, inputs, training=None):
        return tl.Transformer.call(self, inputs, training)


def test_the_transformer_check_accepts_the_call_of_figure_1(capsys):
    check_transformer(Transformer)
    assert capsys.readouterr().out.startswith("Correct") and passed(check_transformer)


def test_the_transformer_check_reports_a_stub_without_failing(capsys):
    check_transformer(Stub)
    assert capsys.readouterr().out.startswith("Not written yet") and not passed(check_transformer)


@pytest.mark.parametrize("wrong, hint", [(NoPaddingMask, "source padding is not masked"),
                                         (NoLookAhead, "no look-ahead mask"),
                                         (CallsTheLibrary, "library's own implementation")])
def test_the_transformer_check_names_the_mistake(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        check_transformer(wrong)


def test_the_numbers_corpus_keeps_its_held_out_numbers_out_of_training():
    train, held_out, source_vocabulary, target_vocabulary = fr.number_corpus(seed=3)
    assert len(held_out) == fr.HELD_OUT and len(train) + len(held_out) == 10_000
    assert not {s for s, _ in held_out} & {s for s, _ in train}
    ids = source_vocabulary.encode(held_out[0][0])
    assert ids[0] == tl.START_ID and ids[-1] == tl.END_ID and min(ids[1:-1]) > tl.END_ID
    assert target_vocabulary.decode(target_vocabulary.encode("two thousand forty-seven")[1:]) == "two thousand forty-seven"
    (source, target_in), target_out = fr.batch(train, source_vocabulary, target_vocabulary, 8, np.random.default_rng(0))
    assert source.shape[0] == target_in.shape[0] == 8 and (target_in[:, 1:] == target_out[:, :-1]).all()


def test_a_short_first_run_reports_its_losses_and_translations():
    result = fr.first_run(tl.Transformer, steps=5, seed=0)
    assert len(result["losses"]) == 5 and result["seconds"] > 0 and 0 <= result["exact_match"] <= 1
    assert len(result["examples"]) == 8 and all(len(example) == 3 for example in result["examples"])


def test_the_verdict_tells_a_trained_run_from_an_untrained_one(capsys):
    good = dict(losses=[0.8] * 50, exact_match=0.99)
    fr.check_first_run(good)
    assert capsys.readouterr().out.startswith("Learned")
    with pytest.raises(AssertionError, match="did not learn"):
        fr.check_first_run(dict(losses=[3.7] * 50, exact_match=0.0))
    with pytest.raises(AssertionError, match="did not learn"):
        fr.check_first_run(dict(losses=[0.8] * 50, exact_match=0.1))  # memorised, not learned
