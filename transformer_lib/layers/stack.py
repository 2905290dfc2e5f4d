"""What the stacks of §3.1 share: `BaseTransformerLayer`, the arguments and config of one layer (the
encoder's, the decoder's and the decoder-only model's), and `Stack`, the embedding, the dropout on
it, N layers and, for pre-LN, a final LayerNorm. `transformer_lib.layers.encoder.Encoder`,
`transformer_lib.layers.decoder.Decoder` and the language model's `DecoderOnly` are stacks.
"""

from __future__ import annotations

import inspect

import keras

from transformer_lib.config import TransformerConfig, config_and_rest
from transformer_lib.layers.add_norm import LAYER_NORM_EPSILON, AddNorm, make_norm
from transformer_lib.layers.attention import MultiHeadAttention
from transformer_lib.layers.feed_forward import FeedForward
from transformer_lib.layers.positional_encoding import PositionalEmbedding
from transformer_lib.layers.swiglu import SwiGLUFeedForward
from transformer_lib.utils.checks import (
    check_token_ids,
    require_kv_heads_divide,
    require_layer_sizes,
    require_positive_int,
)
from transformer_lib.utils.sublayers import build_unbuilt


class BaseTransformerLayer(keras.layers.Layer):
    """Base of `EncoderLayer`, `DecoderLayer` and `DecoderOnlyLayer`: their shared arguments and config.

    Args:
        d_model, num_heads, dff: sizes, as in the paper.
        dropout_rate: P_drop of §5.4.
        norm_first: False for post-LN (the paper), True for pre-LN (analysed by Xiong et al. 2020).
        activation: the feed-forward activation ("relu" in the paper).
        attention_dropout, activation_dropout: dropout on the attention weights and on the
            feed-forward's inner activations (not in the paper; default 0: none).
        rms_norm, swiglu, num_kv_heads, rotary: the changes since 2017, as in `TransformerConfig` (rotary
            positions only in a layer whose class takes them, the decoder-only model's).
        use_bias, norm_epsilon, swiglu_dff: as in `TransformerConfig` (a trained model's settings, `load_gguf`).
    """

    takes_rotary = False  # a subclass that turns queries and keys by their positions sets it

    def __init__(self, d_model: int, num_heads: int, dff: int, dropout_rate: float = 0.1,
                 norm_first: bool = False, activation: str = "relu", attention_dropout: float = 0.0,
                 activation_dropout: float = 0.0, rms_norm: bool = False, swiglu: bool = False,
                 num_kv_heads: int | None = None, rotary: bool = False, use_bias: bool = True,
                 norm_epsilon: float = LAYER_NORM_EPSILON, swiglu_dff: int | None = None, **kwargs):
        super().__init__(**kwargs)
        require_layer_sizes(d_model, num_heads, dff, dropout_rate, attention_dropout, activation_dropout)
        require_kv_heads_divide(num_heads, num_kv_heads)
        if rotary and not self.takes_rotary:
            raise ValueError(f"{type(self).__name__} adds no rotary positions (the translator's stacks add sinusoids "
                             "at the bottom); rotary=True is for the decoder-only LanguageModel.")
        self.settings = dict(d_model=d_model, num_heads=num_heads, dff=dff, dropout_rate=dropout_rate,
                             norm_first=norm_first, activation=activation, attention_dropout=attention_dropout,
                             activation_dropout=activation_dropout, rms_norm=rms_norm, swiglu=swiglu,
                             num_kv_heads=num_kv_heads, rotary=rotary, use_bias=use_bias,
                             norm_epsilon=norm_epsilon, swiglu_dff=swiglu_dff)
        self.d_model, self.num_heads, self.dff = d_model, num_heads, dff
        self.dropout_rate, self.norm_first, self.activation = dropout_rate, norm_first, activation
        self.attention_dropout, self.activation_dropout = attention_dropout, activation_dropout
        self.feed_forward = (SwiGLUFeedForward(d_model, swiglu_dff or SwiGLUFeedForward.same_parameters_as(d_model, dff),
                                               name="feed_forward") if swiglu else
                             FeedForward(d_model, dff, activation, activation_dropout, use_bias, name="feed_forward"))
        self.feed_forward_add_norm = self.add_norm("feed_forward_add_norm")

    @classmethod
    def for_config(cls, config: TransformerConfig, **kwargs) -> BaseTransformerLayer:
        """One layer of a stack with `config`'s settings: every field that is an argument of this class (and
        `kwargs` for Keras, such as `name`)."""
        names = {name for klass in cls.__mro__ if "__init__" in vars(klass)
                 for name in inspect.signature(klass.__init__).parameters}
        return cls(**{name: value for name, value in config.to_dict().items() if name in names}, **kwargs)

    def add_norm(self, name: str) -> AddNorm:
        return AddNorm(self.dropout_rate, self.norm_first, self.settings["rms_norm"], self.settings["norm_epsilon"],
                       name=name)

    def attention(self, name: str) -> MultiHeadAttention:
        return MultiHeadAttention(self.d_model, self.num_heads, self.attention_dropout,
                                  num_kv_heads=self.settings["num_kv_heads"], use_bias=self.settings["use_bias"],
                                  name=name)

    def build(self, x_shape):
        self.build_sublayers(x_shape)

    def build_sublayers(self, x_shape, encoder_output_shape=None):
        """Build each sub-layer once: self-attention on x, cross-attention (a `DecoderLayer`'s) on the
        encoder output, and the feed-forward network and every Add & Norm on x's shape. (Each layer's
        `build` calls it with the shapes of its own `call`'s inputs, as Keras asks.)"""
        build_unbuilt(self.self_attention, x_shape, x_shape, x_shape)
        if encoder_output_shape is not None:
            build_unbuilt(self.cross_attention, x_shape, encoder_output_shape, encoder_output_shape)
        for sublayer in (self.feed_forward, *(v for v in vars(self).values() if isinstance(v, AddNorm))):
            build_unbuilt(sublayer, x_shape)

    def get_config(self):
        return {**super().get_config(), **self.settings}


class Stack(keras.layers.Layer):
    """Base of `Encoder` and `Decoder`: token ids -> embedding * sqrt(d_model) + positions ->
    dropout -> `num_layers` layers -> (pre-LN only) a final LayerNorm.

    Args:
        config: the model's `TransformerConfig` (its vocabulary sizes are not read here), or its
            fields in their order: `Encoder(2, 64, 4, 256, vocab_size=8000)` is
            `Encoder(TransformerConfig(2, 64, 4, 256), vocab_size=8000)`.
        vocab_size: this stack's vocabulary size; id 0 is padding.
        embedding: optional `PositionalEmbedding` to use instead of a new one, to share weights
            between stacks (§3.4). It is saved with the stack's config.
    """

    layer_class: type[BaseTransformerLayer]

    def __init__(self, *config, vocab_size: int, embedding: PositionalEmbedding | None = None, **kwargs):
        config, kwargs = config_and_rest(config, kwargs)
        super().__init__(**kwargs)
        require_positive_int("vocab_size", vocab_size)
        self.config, self.vocab_size, self.d_model = config, vocab_size, config.d_model
        self.shares_embedding = embedding is not None
        if embedding is not None and (embedding.vocab_size, embedding.d_model) != (vocab_size, config.d_model):
            raise ValueError(
                f"The shared embedding has vocab_size={embedding.vocab_size}, d_model={embedding.d_model}; "
                f"this stack needs vocab_size={vocab_size}, d_model={config.d_model}."
            )
        if embedding is None:
            embedding = PositionalEmbedding(vocab_size, config.d_model, config.max_length, config.learned_positions,
                                            name="embedding")
        self.embedding = embedding
        self.dropout = keras.layers.Dropout(config.dropout_rate)
        self.stack_layers = [self.layer_class.for_config(config, name=f"layer_{i}") for i in range(config.num_layers)]
        self.final_norm = make_norm(config.rms_norm, config.norm_epsilon, name="final_norm") if config.norm_first else None

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
        return self.dropout(self.embed_positions(token_ids), training=training)  # (batch, len, d_model)

    def embed_positions(self, token_ids, offset=0):
        """Token embeddings * sqrt(d_model), plus the positions of §3.5 unless they are rotary (given to
        the queries and keys in every layer instead; such a model may also leave out the scale:
        `scale_embeddings`)."""
        if not self.config.rotary:
            return self.embedding(token_ids, offset=offset)
        if self.config.scale_embeddings:
            return self.embedding.scaled_tokens(token_ids)
        return self.embedding.token_embedding(token_ids)

    def finish(self, x):
        return x if self.final_norm is None else self.final_norm(x)

    def get_config(self):
        config = {**super().get_config(), **self.config.to_dict(), "vocab_size": self.vocab_size}
        if self.shares_embedding:
            config["embedding"] = keras.saving.serialize_keras_object(self.embedding)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("embedding") is not None:
            config["embedding"] = keras.saving.deserialize_keras_object(config["embedding"])
        return cls(**config)
