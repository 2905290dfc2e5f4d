"""The encoder (§3.1, Figure 1 left): N identical layers of self-attention and feed-forward.

`Stack` holds what the encoder and the decoder stacks share: the embedding, the dropout on it,
N layers and, for pre-LN, a final LayerNorm. `Encoder` and `transformer_lib.decoder.Decoder` are
the two stacks.
"""

from __future__ import annotations

import inspect

import keras

from transformer_lib._checks import (
    build_unbuilt,
    check_token_ids,
    require_layer_sizes,
    require_positive_int,
)
from transformer_lib.add_norm import LAYER_NORM_EPSILON, AddNorm
from transformer_lib.attention import MultiHeadAttention
from transformer_lib.feed_forward import FeedForward
from transformer_lib.masks import padding_mask
from transformer_lib.positional_encoding import PositionalEmbedding


class BaseTransformerLayer(keras.layers.Layer):
    """Base of `EncoderLayer` and `DecoderLayer`: their shared arguments and config.

    Args:
        d_model, num_heads, dff: sizes, as in the paper.
        dropout_rate: P_drop of §5.4.
        norm_first: False for post-LN (the paper), True for pre-LN (Xiong et al. 2020).
        activation: the feed-forward activation ("relu" in the paper).
        attention_dropout, activation_dropout: dropout on the attention weights and on the
            feed-forward's inner activations (not in the paper; default 0: none).
    """

    def __init__(self, d_model: int, num_heads: int, dff: int, dropout_rate: float = 0.1,
                 norm_first: bool = False, activation: str = "relu", attention_dropout: float = 0.0,
                 activation_dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        require_layer_sizes(d_model, num_heads, dff, dropout_rate, attention_dropout, activation_dropout)
        self.d_model, self.num_heads, self.dff = d_model, num_heads, dff
        self.dropout_rate, self.norm_first, self.activation = dropout_rate, norm_first, activation
        self.attention_dropout, self.activation_dropout = attention_dropout, activation_dropout
        self.feed_forward = FeedForward(d_model, dff, activation, activation_dropout, name="feed_forward")
        self.feed_forward_add_norm = self.add_norm("feed_forward_add_norm")

    def add_norm(self, name: str) -> AddNorm:
        return AddNorm(self.dropout_rate, self.norm_first, name=name)

    def attention(self, name: str) -> MultiHeadAttention:
        return MultiHeadAttention(self.d_model, self.num_heads, self.attention_dropout, name=name)

    def get_config(self):
        return {
            **super().get_config(),
            "d_model": self.d_model,
            "num_heads": self.num_heads,
            "dff": self.dff,
            "dropout_rate": self.dropout_rate,
            "norm_first": self.norm_first,
            "activation": self.activation,
            "attention_dropout": self.attention_dropout,
            "activation_dropout": self.activation_dropout,
        }


@keras.saving.register_keras_serializable(package="transformer_lib")
class EncoderLayer(BaseTransformerLayer):
    """One encoder layer: multi-head self-attention, then the feed-forward network, each wrapped
    in Add & Norm. Arguments as in `BaseTransformerLayer`.

    Call arguments:
        x: `[batch, src_len, d_model]`.
        padding_mask: float `[batch, 1, 1, src_len]`, 1.0 at padding (`transformer_lib.padding_mask`).
        training: enables dropout.

    Returns:
        `[batch, src_len, d_model]`.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.self_attention = self.attention("self_attention")
        self.attention_add_norm = self.add_norm("attention_add_norm")

    def build(self, x_shape):
        build_unbuilt(self.self_attention, x_shape, x_shape, x_shape)
        build_unbuilt(self.attention_add_norm, x_shape)
        build_unbuilt(self.feed_forward, x_shape)
        build_unbuilt(self.feed_forward_add_norm, x_shape)

    def call(self, x, padding_mask=None, training=None):
        # 1. Self-attention: every position attends to every real (non-padding) source token.
        x = self.attention_add_norm(x, lambda h: self.self_attention(h, h, h, mask=padding_mask)[0], training=training)
        # 2. The position-wise feed-forward network.
        return self.feed_forward_add_norm(x, self.feed_forward, training=training)  # (batch, src_len, d_model)


class Stack(keras.layers.Layer):
    """Base of `Encoder` and `Decoder`: token ids -> embedding * sqrt(d_model) + positions ->
    dropout -> `num_layers` layers -> (pre-LN only) a final LayerNorm.

    Args:
        num_layers: N (6 in the paper).
        d_model, num_heads, dff, dropout_rate, norm_first, activation, attention_dropout,
            activation_dropout: as in `BaseTransformerLayer`.
        vocab_size: vocabulary size; id 0 is padding.
        max_length: longest sequence.
        embedding: optional `PositionalEmbedding` to use instead of a new one, to share weights
            between stacks (§3.4). It is saved with the stack's config.
        learned_positions: the stack's own embedding learns its positions (Table 3, row E).
    """

    layer_class: type[BaseTransformerLayer]

    def __init__(self, num_layers: int, d_model: int, num_heads: int, dff: int, vocab_size: int,
                 dropout_rate: float = 0.1, norm_first: bool = False, activation: str = "relu",
                 max_length: int = 2048, embedding: PositionalEmbedding | None = None,
                 learned_positions: bool = False, attention_dropout: float = 0.0, activation_dropout: float = 0.0,
                 **kwargs):
        super().__init__(**kwargs)
        require_positive_int("num_layers", num_layers)
        require_layer_sizes(d_model, num_heads, dff, dropout_rate, attention_dropout, activation_dropout)
        self.num_layers, self.vocab_size, self.max_length, self.d_model = num_layers, vocab_size, max_length, d_model
        self.layer_config = dict(d_model=d_model, num_heads=num_heads, dff=dff, dropout_rate=dropout_rate,
                                 norm_first=norm_first, activation=activation, attention_dropout=attention_dropout,
                                 activation_dropout=activation_dropout)
        self.shares_embedding = embedding is not None
        if embedding is not None and (embedding.vocab_size, embedding.d_model) != (vocab_size, d_model):
            raise ValueError(
                f"The shared embedding has vocab_size={embedding.vocab_size}, d_model={embedding.d_model}; "
                f"this stack needs vocab_size={vocab_size}, d_model={d_model}."
            )
        self.learned_positions = learned_positions
        if embedding is None:
            embedding = PositionalEmbedding(vocab_size, d_model, max_length, learned_positions, name="embedding")
        self.embedding = embedding
        self.dropout = keras.layers.Dropout(dropout_rate)
        self.stack_layers = [self.layer_class(**self.layer_config, name=f"layer_{i}") for i in range(num_layers)]
        self.final_norm = (
            keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, name="final_norm") if norm_first else None
        )

    def build_stack(self, token_ids_shape, *other_shapes):
        """Build the embedding, each layer (given `x_shape, *other_shapes`) and the final norm."""
        build_unbuilt(self.embedding, token_ids_shape)
        x_shape = (*token_ids_shape, self.d_model)
        for layer in self.stack_layers:
            build_unbuilt(layer, x_shape, *other_shapes)
        if self.final_norm is not None:
            build_unbuilt(self.final_norm, x_shape)

    def embed(self, token_ids, training=None):
        check_token_ids(f"the token ids of {self.path}", token_ids, self.vocab_size)
        return self.dropout(self.embedding(token_ids), training=training)  # (batch, len, d_model)

    def finish(self, x):
        return x if self.final_norm is None else self.final_norm(x)

    def get_config(self):
        config = {
            **super().get_config(),
            **self.layer_config,
            "num_layers": self.num_layers,
            "vocab_size": self.vocab_size,
            "max_length": self.max_length,
            "learned_positions": self.learned_positions,
        }
        if self.shares_embedding:
            config["embedding"] = keras.saving.serialize_keras_object(self.embedding)
        return config

    @classmethod
    def from_sizes(cls, sizes: dict, **overrides) -> "Stack":
        """A stack from a model's hyperparameters, taking the entries it has arguments for (the
        others, such as `num_classes`, are ignored) and then `overrides`: the one way the
        Transformer, the classifier and BERT build theirs."""
        names = inspect.signature(cls.__init__).parameters
        return cls(**{**{k: v for k, v in sizes.items() if k in names}, **overrides})

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("embedding") is not None:
            config["embedding"] = keras.saving.deserialize_keras_object(config["embedding"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="transformer_lib")
class Encoder(Stack):
    """Source token ids in, one contextual vector per source position out. Arguments as in `Stack`.

    Call arguments:
        source_ids: int `[batch, src_len]`, 0 = padding. The padding mask is built from them.
        training: enables dropout.
        mask_padding: False lets every position attend to the padding too (wrong; it exists to
            measure what the mask is worth, chapter 9).

    Returns:
        `[batch, src_len, d_model]`.
    """

    layer_class = EncoderLayer

    def build(self, source_ids_shape):
        self.build_stack(source_ids_shape)

    def call(self, source_ids, training=None, mask_padding=True):
        mask = padding_mask(source_ids) if mask_padding else None  # (batch, 1, 1, src_len)
        x = self.embed(source_ids, training)  # (batch, src_len, d_model)
        for layer in self.stack_layers:
            x = layer(x, padding_mask=mask, training=training)
        return self.finish(x)
