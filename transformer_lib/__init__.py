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
    corpora              §5.1  load_parallel_corpus (Tatoeba, WMT news, TED via TFDS, synthetic)
    splits                     leak-free train/validation/test splits (connected components)
    downloads                  pinned, checksum-verified files, or the offline folder TRANSFORMER_BOOK_DATA
    synthetic                  numbers in Russian words -> English words, a corpus generated in code
    data                 §5.1  train_tokenizers, make_batches (length bucketing), padding_fraction

and what turns it into a translator:

    objective            §5.3-4 TransformerSchedule, make_optimizer, masked_loss, masked_accuracy (keras.ops only)
    training             §5.3-4 train_step, train (the loop, on TensorFlow)
    checkpoints                make_checkpoint, resume (the newest intact checkpoint), the epoch history
    selection            §6.1  keep the best epoch, average the last ones: select_weights, bleu_score
    decoding             §6.1  greedy_decode, beam_search (fixed-shape key/value cache, XLA), Translator
    text_checks                as_text_list, warn_unusual_text (what the translator is given)
    evaluation           §6.1  evaluate_bleu (sacreBLEU)
    export                     save_translator, load_translator, export_saved_model
    recipe                     Recipe (every setting of a run), train_translator: corpus -> saved translator
    machine                    describe_machine: the hardware and software a result came from

and the side chapter's encoder-only models:

    classifier                 TransformerClassifier (masked mean pooling)
    bert                       mask_tokens (BERT's 80/10/10), MaskedLanguageModel, classifier_from_pretrained
    imdb                       load_imdb, make_review_batches (IMDB reviews, Maas et al. 2011)

and the decoder alone:

    language_model             LanguageModel (GPT's idea: DecoderLayer without cross-attention), perplexity,
                               generate (greedy, temperature, top-k; the key/value cache)

and the book's teaching helpers in the package `book` (imported by the chapters, never by the modules
above): show_source, quick mode and run reports, book.exercises (the checks, one module per part of the
book; `transformer_lib.exercises` is its short name), book.diagrams (the architecture and each
chapter's idea, drawn), book.figures (the interactive figures) and the refresh tools for stored chapters.
"""

import os

# Quiet TensorFlow's C++ logging unless the user asked for it (only works before TF loads), and keep
# its start-up notices out of notebooks (see _quiet.py); real errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from transformer_lib._quiet import hide_tensorflow_notices  # noqa: E402

with hide_tensorflow_notices():
    import tensorflow as _tf

    _tf.config.list_physical_devices()  # device discovery prints its notices now, inside the filter

from transformer_lib.add_norm import AddNorm  # noqa: E402
from transformer_lib.attention import MultiHeadAttention, scaled_dot_product_attention  # noqa: E402
from transformer_lib.bert import MaskedLanguageModel, classifier_from_pretrained, mask_tokens  # noqa: E402
from transformer_lib.classifier import TransformerClassifier, masked_mean  # noqa: E402
from transformer_lib.corpora import CORPORA, ChecksumError, CorpusUnavailableError, load_parallel_corpus  # noqa: E402
from transformer_lib.data import make_batches, padding_fraction, train_tokenizers  # noqa: E402
from transformer_lib.decoder import Decoder, DecoderLayer  # noqa: E402
from transformer_lib.decoding import Translator, beam_search, greedy_decode  # noqa: E402
from transformer_lib.encoder import Encoder, EncoderLayer  # noqa: E402
from transformer_lib.evaluation import evaluate_bleu  # noqa: E402
from transformer_lib.export import load_translator, save_translator  # noqa: E402
from transformer_lib.language_model import LanguageModel, generate, next_token_pairs, perplexity  # noqa: E402
from transformer_lib.machine import describe_machine  # noqa: E402
from transformer_lib.recipe import Recipe, train_translator  # noqa: E402
from transformer_lib.feed_forward import FeedForward  # noqa: E402
from transformer_lib.imdb import load_imdb, make_review_batches  # noqa: E402
from transformer_lib.masks import (  # noqa: E402
    decoder_mask,
    from_keras_mask,
    look_ahead_mask,
    padding_mask,
    to_keras_mask,
)
from transformer_lib.model import PRESETS, Transformer, count_parameters  # noqa: E402
from transformer_lib.positional_encoding import PositionalEmbedding, positional_encoding  # noqa: E402
from transformer_lib.tokenizer import (  # noqa: E402
    END_ID,
    PAD_ID,
    START_ID,
    UNKNOWN_ID,
    SubwordTokenizer,
)
from transformer_lib.objective import (  # noqa: E402
    MaskedLoss,
    TransformerSchedule,
    make_optimizer,
    masked_accuracy,
    masked_loss,
)
from transformer_lib.training import train, train_step  # noqa: E402

from transformer_lib._version import __version__  # noqa: E402

__all__ = [
    "MaskedLoss",
    "Translator",
    "TransformerSchedule",
    "beam_search",
    "evaluate_bleu",
    "greedy_decode",
    "load_translator",
    "make_optimizer",
    "masked_accuracy",
    "masked_loss",
    "save_translator",
    "train_translator",
    "Recipe",
    "describe_machine",
    "MaskedLanguageModel",
    "LanguageModel",
    "generate",
    "next_token_pairs",
    "perplexity",
    "TransformerClassifier",
    "classifier_from_pretrained",
    "load_imdb",
    "make_review_batches",
    "mask_tokens",
    "masked_mean",
    "train",
    "train_step",
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
