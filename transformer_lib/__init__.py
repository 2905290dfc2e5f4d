"""transformer_lib: the Transformer of "Attention Is All You Need" (Vaswani et al. 2017), in Keras 3.

One module per box of the paper's Figure 1:

    positional_encoding  §3.5  positional_encoding, PositionalEmbedding
    masks                §3.2.3 padding_mask, look_ahead_mask, decoder_mask (1.0 = blocked)
    attention            §3.2  scaled_dot_product_attention, MultiHeadAttention
    feed_forward         §3.3  FeedForward
    add_norm             §5.4  AddNorm (post-LN or pre-LN)
    encoder, decoder     §3.1  EncoderLayer, Encoder, DecoderLayer, Decoder
    model                §3    Transformer, PRESETS, count_parameters

and the data around it:

    tokenizer            §5.1  SubwordTokenizer (SentencePiece BPE; 0 = pad, 1 = start, 2 = end, 3 = unknown)
    data                 §5.1  load_parallel_corpus, train_tokenizers, make_batches, padding_fraction
"""

import os

# Quiet TensorFlow's C++ start-up logging unless the user asked for it (only works before TF loads).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from transformer_lib.add_norm import AddNorm  # noqa: E402
from transformer_lib.attention import MultiHeadAttention, scaled_dot_product_attention  # noqa: E402
from transformer_lib.data import (  # noqa: E402
    CORPORA,
    ChecksumError,
    CorpusUnavailableError,
    load_parallel_corpus,
    make_batches,
    padding_fraction,
    train_tokenizers,
)
from transformer_lib.decoder import Decoder, DecoderLayer  # noqa: E402
from transformer_lib.encoder import Encoder, EncoderLayer  # noqa: E402
from transformer_lib.feed_forward import FeedForward  # noqa: E402
from transformer_lib.masks import (  # noqa: E402
    decoder_mask,
    from_keras_mask,
    look_ahead_mask,
    padding_mask,
    to_keras_mask,
)
from transformer_lib.model import PRESETS, Transformer, count_parameters  # noqa: E402
from transformer_lib.positional_encoding import PositionalEmbedding, positional_encoding  # noqa: E402
from transformer_lib.tokenizer import END_ID, PAD_ID, START_ID, UNKNOWN_ID, SubwordTokenizer  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "CORPORA",
    "ChecksumError",
    "CorpusUnavailableError",
    "END_ID",
    "PAD_ID",
    "START_ID",
    "SubwordTokenizer",
    "UNKNOWN_ID",
    "load_parallel_corpus",
    "make_batches",
    "padding_fraction",
    "train_tokenizers",
    "AddNorm",
    "Decoder",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "MultiHeadAttention",
    "PRESETS",
    "PositionalEmbedding",
    "Transformer",
    "count_parameters",
    "decoder_mask",
    "from_keras_mask",
    "look_ahead_mask",
    "padding_mask",
    "positional_encoding",
    "scaled_dot_product_attention",
    "to_keras_mask",
]
