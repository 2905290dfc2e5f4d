"""Every size of a Transformer in one frozen dataclass (as nanoGPT's `GPTConfig`): the recipe makes
one, the `Transformer` is built from it, its encoder and decoder stacks read it, and so do the
optimizer's schedule (`d_model`) and the memory estimates. `PRESETS` are the paper's sizes (Table 3)
and three small ones.

    config = TransformerConfig(num_layers=2, d_model=64, num_heads=4, dff=256,
                               input_vocab_size=8000, target_vocab_size=8000)
    model = Transformer(config)
    bigger = config.replace(d_model=128)            # a new config; a config never changes
"""

from __future__ import annotations

import dataclasses

from transformer_lib.utils.checks import (
    require_kv_heads_divide,
    require_layer_sizes,
    require_max_length,
    require_non_negative_number,
    require_positive_int,
)


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """The sizes and choices of one encoder-decoder Transformer.

    Args:
        num_layers: N, layers in each stack (6 in the paper).
        d_model: model width (512).
        num_heads: h, must divide d_model (8).
        dff: the feed-forward's inner size (2048).
        input_vocab_size, target_vocab_size: the two vocabularies (id 0 = padding); None until the
            tokenizers are known (a preset has none).
        dropout_rate: the paper's P_drop (§5.4): on each sub-layer's output and on the embeddings.
        norm_first: False: post-LN, as in the paper; True: pre-LN (analysed by Xiong et al. 2020).
        share_embeddings: one matrix for both embeddings and the output layer (§3.4); needs one
            joint vocabulary, so the two sizes must be equal.
        max_length: the longest source or target sequence.
        activation: the feed-forward's activation ("relu" in the paper).
        learned_positions: learn one vector per position instead of the sinusoids (Table 3, row E).
        attention_dropout: dropout on the attention weights; activation_dropout: on the feed-forward's
            inner activations. Not in the paper (default 0: none); regularizers for small corpora.
        tie_output: the target embedding matrix is also the output layer (Press & Wolf 2017), with
            two vocabularies; `share_embeddings` ties the source embedding to them as well (§3.4).

    And the changes since 2017 (the chapter "Since 2017"), each off by default:
        rms_norm: RMSNorm instead of LayerNorm in every Add & Norm and the final norm (Zhang & Sennrich 2019).
        rotary: rotary positions in every self-attention layer instead of the sinusoids added at the bottom
            (Su et al. 2021); the decoder-only model's only.
        swiglu: a SwiGLU feed-forward network at the ReLU network's parameter count (Shazeer 2020).
        num_kv_heads: g key/value heads shared by the h query heads (grouped-query attention; Ainslie
            et al. 2023); None: one per query head.

    And what a trained model of today may set otherwise than the paper (SmolLM2, `load_gguf`):
        use_bias: biases in the attention projections and the ReLU feed-forward network (the paper's b_1, b_2);
            False: none, as in Llama and SmolLM2 (SwiGLU has none either way).
        scale_embeddings: multiply the token embeddings by sqrt(d_model) (§3.4). Only a model with rotary
            positions may turn it off: the sinusoids added at the bottom are sized for scaled embeddings.
        rotary_base: the base of the rotary angles, theta_i = base^(-2i/d_k) (10,000 as in RoFormer; SmolLM2:
            100,000, for longer contexts).
        norm_epsilon: the epsilon of every LayerNorm or RMSNorm (1e-6 here; SmolLM2: 1e-5).
        swiglu_dff: SwiGLU's inner size; None: the size at which it has the ReLU network's parameter count
            for `dff` (`SwiGLUFeedForward.same_parameters_as`).
    """

    num_layers: int = 6
    d_model: int = 512
    num_heads: int = 8
    dff: int = 2048
    input_vocab_size: int | None = None
    target_vocab_size: int | None = None
    dropout_rate: float = 0.1
    norm_first: bool = False
    share_embeddings: bool = False
    max_length: int = 2048
    activation: str = "relu"
    learned_positions: bool = False
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    tie_output: bool = False
    rms_norm: bool = False
    rotary: bool = False
    swiglu: bool = False
    num_kv_heads: int | None = None
    use_bias: bool = True
    scale_embeddings: bool = True
    rotary_base: float = 10_000.0
    norm_epsilon: float = 1e-6
    swiglu_dff: int | None = None

    def __post_init__(self):
        require_positive_int("num_layers", self.num_layers)
        require_layer_sizes(self.d_model, self.num_heads, self.dff, self.dropout_rate,
                            self.attention_dropout, self.activation_dropout)
        require_max_length(self.max_length)
        require_kv_heads_divide(self.num_heads, self.num_kv_heads)
        for name in ("input_vocab_size", "target_vocab_size", "swiglu_dff"):
            if getattr(self, name) is not None:
                require_positive_int(name, getattr(self, name))
        if not self.rotary_base > 1:
            raise ValueError(f"rotary_base must be > 1 (10000 in RoFormer), got {self.rotary_base!r}.")
        require_non_negative_number("norm_epsilon", self.norm_epsilon)
        if not self.scale_embeddings and not self.rotary:
            raise ValueError("scale_embeddings=False needs rotary=True: the sinusoids added at the bottom are sized for "
                             "embeddings scaled by sqrt(d_model) (§3.4); only a model whose positions are rotary may "
                             "leave its embeddings unscaled.")
        if self.swiglu_dff is not None and not self.swiglu:
            raise ValueError("swiglu_dff is SwiGLU's inner size; set swiglu=True too (the ReLU network's is dff).")
        if self.share_embeddings and self.input_vocab_size != self.target_vocab_size:
            raise ValueError(
                f"share_embeddings=True ties one embedding matrix to both languages, so it needs one "
                f"joint vocabulary; got input_vocab_size={self.input_vocab_size} and "
                f"target_vocab_size={self.target_vocab_size}. Train a joint tokenizer, or set share_embeddings=False."
            )

    def replace(self, **changes) -> TransformerConfig:
        """This config with some fields changed (checked again); an unknown name is refused."""
        unknown = sorted(set(changes) - set(FIELDS))
        if unknown:
            raise TypeError(f"TransformerConfig has no field {', '.join(unknown)}; its fields: {', '.join(FIELDS)}.")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The fields as a dict: a model's `get_config` (Keras saves it) and a run's record."""
        return dataclasses.asdict(self)

    def pick(self, *names: str) -> dict:
        """Some fields as a dict, e.g. `config.pick("d_model", "num_heads")`."""
        return {name: getattr(self, name) for name in names}


FIELDS = tuple(field.name for field in dataclasses.fields(TransformerConfig))
SINCE_2017 = ("norm_first", "rms_norm", "rotary", "swiglu", "num_kv_heads")  # the chapter "Since 2017"'s switches

# Sizes of Table 3 (base, big) and three small ones for a CPU or a free Colab GPU: `small` is chapter 7's;
# `wide` is the small-data study's width-256 row (ahead after eight epochs, level over a 40-minute run).
PRESETS = {
    "tiny": TransformerConfig(num_layers=2, d_model=64, num_heads=4, dff=256, dropout_rate=0.1),
    "small": TransformerConfig(num_layers=4, d_model=128, num_heads=8, dff=512, dropout_rate=0.1),
    "wide": TransformerConfig(num_layers=3, d_model=256, num_heads=8, dff=1024, dropout_rate=0.1),
    "base": TransformerConfig(num_layers=6, d_model=512, num_heads=8, dff=2048, dropout_rate=0.1),
    "big": TransformerConfig(num_layers=6, d_model=1024, num_heads=16, dff=4096, dropout_rate=0.3),
}


def require_preset(preset: str) -> None:
    """Raise a ValueError naming the presets unless `preset` is one of them."""
    if preset not in PRESETS:
        raise ValueError(f"Unknown preset {preset!r}; choose one of {sorted(PRESETS)}.")


def config_and_rest(args: tuple, kwargs: dict) -> tuple[TransformerConfig, dict]:
    """A model's or a stack's `TransformerConfig`, given whole (`Transformer(config)`) or by its fields
    (`Transformer(2, 64, 4, 256, input_vocab_size=...)`, in the order of the fields, or by name, as
    Keras's `from_config` does), and the keyword arguments left for Keras (`name`, `dtype`, ...)."""
    rest = dict(kwargs)
    fields = {name: rest.pop(name) for name in FIELDS if name in rest}
    given = rest.pop("config", None)
    if args and isinstance(args[0], TransformerConfig):
        given, args = args[0], args[1:]
    if given is None:
        return TransformerConfig(*args, **fields), rest
    if args or fields:
        raise TypeError(f"Give a TransformerConfig or its fields, not both (got the config and "
                        f"{', '.join([*map(repr, args), *fields])}); change the config with config.replace(...).")
    return given, rest


def one_stack_config(args: tuple, kwargs: dict, defaults: dict, target: bool = False) -> tuple[TransformerConfig, dict]:
    """The `TransformerConfig` of a model with one stack and one vocabulary (the classifier, BERT, the language
    model), given whole (`LanguageModel(config)`, its vocabulary in `input_vocab_size`) or as `vocab_size` and
    fields over the model's `defaults` (`LanguageModel(8000, 2, 128, 4, 512, max_length=256)`: the first four
    fields may come in order; or all by name, as Keras's `from_config` gives them); and the keyword arguments
    left for Keras (`name`, `dtype`, ...). `target`: the vocabulary is also the target's (a language model's)."""
    rest = dict(kwargs)
    given = rest.pop("config", None)
    if args and isinstance(args[0], TransformerConfig):
        given, args = args[0], args[1:]
    fields = {name: rest.pop(name) for name in FIELDS if name in rest}
    vocab_size = rest.pop("vocab_size", None)
    if given is not None:
        if args or fields or vocab_size is not None:
            raise TypeError("Give a TransformerConfig or vocab_size and its fields, not both; change the config with "
                            "config.replace(...).")
        vocab_size = given.input_vocab_size or given.target_vocab_size
        if vocab_size is None:
            raise ValueError("The config has no vocabulary size: give config.replace(input_vocab_size=...).")
        fields = given.to_dict()
    else:
        if args:
            vocab_size, args = args[0], args[1:]
        if vocab_size is None:
            raise TypeError("Give the vocabulary size (vocab_size) or a TransformerConfig.")
        if len(args) > 4:
            raise TypeError(f"After vocab_size, at most num_layers, d_model, num_heads, dff come in order; got {args}.")
        fields = {**defaults, **dict(zip(("num_layers", "d_model", "num_heads", "dff"), args)), **fields}
    fields.update(input_vocab_size=vocab_size, target_vocab_size=vocab_size if target else None)
    return TransformerConfig(**fields), rest


def one_stack_fields(config: TransformerConfig) -> dict:
    """A one-stack model's config as `vocab_size` and the other fields by name: what its `get_config` saves, and
    what `one_stack_config` reads back."""
    fields = {name: value for name, value in config.to_dict().items() if not name.endswith("vocab_size")}
    return {"vocab_size": config.input_vocab_size, **fields}
