"""transformer_lib: the Transformer of "Attention Is All You Need" (Vaswani et al. 2017), in Keras 3.

Folders by role; each one's __init__ says what is inside. Imports run one way, down this list
(a module imports only from its own folder and the folders below it):

    __main__        the command line: train, translate, evaluate, export-web
    book/           the chapters' teaching helpers: source (show_source), runs, kept and first_run
                    (trainings run once and kept),
                    records and course_files (the committed records a chapter reads), trained_heads,
                    browser_translator, diagrams/, figures/, exercises/ (the checks; `transformer_lib.exercises`
                    is their short name)
    training/       recipe (Recipe, train_translator), loop (train_step, train), objective (the schedule,
                    masked_loss, perplexity), checkpoints, selection (best epoch, averaging), run_lock,
                    run_folder (a run's settings and record), since_2017 (the study of the changes since 2017)
    export/         saved_model (save_translator, load_translator, export_saved_model); the page's translator:
                    graphs (two ONNX graphs), quantize (int8), onnx_translator (checked against Keras), web
    decoding/       search (greedy_decode, beam_search, sampled_decode), translator (Translator), bleu
                    (evaluate_bleu, paired_bootstrap), text_checks, back_translation (back_translate)
    models/         transformer (Transformer, count_parameters), language_model (LanguageModel: the
                    decoder alone, with the switches since 2017; generate), gguf (load_gguf: SmolLM2-135M, a
                    trained model of 2024, in these blocks; its tokenizer, chat_prompt), legacy_weights (the
                    since-2017 model's older weight files), classifier, bert
    layers/         the paper's boxes: positional_encoding, masks, attention (grouped-query attention
                    included), feed_forward, add_norm, stack (what the stacks share), encoder, decoder,
                    decoder_only (the language model's block and stack), kv_cache (decoding's key/value cache); and since 2017: rms_norm, rotary, swiglu,
                    blockwise_attention
    data/           downloads, splits, synthetic, ted, back_translations, corpora, tokenizer, batching,
                    imdb_archive, imdb
    utils/          checks, sublayers, arguments, quiet, json_records, memory_budget, machine_description

and two leaves at the root that any folder may read: config (TransformerConfig, every size of a model in
one frozen dataclass, and PRESETS: tiny, small and wide for a CPU, Table 3's base and big) and _version.

Every name a chapter uses is importable from the root: `import transformer_lib as tl; tl.MultiHeadAttention`.
"""

import os

# Quiet TensorFlow's C++ logging unless the user asked for it (only works before TF loads), and keep
# its start-up notices out of notebooks (see utils/quiet.py); real errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from transformer_lib.utils.quiet import hide_tensorflow_notices  # noqa: E402

with hide_tensorflow_notices():
    import tensorflow as _tf

    _tf.config.list_physical_devices()  # device discovery prints its notices now, inside the filter

from transformer_lib.layers.add_norm import AddNorm  # noqa: E402
from transformer_lib.layers.attention import (  # noqa: E402
    GroupedQueryAttention,
    MultiHeadAttention,
    scaled_dot_product_attention,
)
from transformer_lib.models.bert import MaskedLanguageModel, classifier_from_pretrained, mask_tokens  # noqa: E402
from transformer_lib.models.classifier import TransformerClassifier, masked_mean  # noqa: E402
from transformer_lib.data.corpora import CORPORA, ChecksumError, CorpusUnavailableError, load_parallel_corpus  # noqa: E402
from transformer_lib.data.batching import make_batches, padding_fraction, train_tokenizers  # noqa: E402
from transformer_lib.layers.decoder import Decoder, DecoderLayer  # noqa: E402
from transformer_lib.decoding.search import beam_search, greedy_decode, sampled_decode  # noqa: E402
from transformer_lib.decoding.back_translation import back_translate  # noqa: E402
from transformer_lib.decoding.translator import Translator
from transformer_lib.layers.encoder import Encoder, EncoderLayer  # noqa: E402
from transformer_lib.decoding.bleu import evaluate_bleu, paired_bootstrap  # noqa: E402
from transformer_lib.export.saved_model import load_translator, save_translator  # noqa: E402
from transformer_lib.models.language_model import (  # noqa: E402
    LanguageModel,
    ModernLanguageModel,
    generate,
    next_token_pairs,
)
from transformer_lib.models.gguf import GGUFTokenizer, chat_prompt, load_gguf  # noqa: E402
from transformer_lib.utils.machine_description import describe_machine  # noqa: E402
from transformer_lib.training.recipe import Recipe, train_translator  # noqa: E402
from transformer_lib.layers.feed_forward import FeedForward  # noqa: E402
from transformer_lib.layers.blockwise_attention import blockwise_attention  # noqa: E402
from transformer_lib.layers.rms_norm import RMSNorm  # noqa: E402
from transformer_lib.layers.rotary import RotaryEmbedding  # noqa: E402
from transformer_lib.layers.swiglu import SwiGLUFeedForward  # noqa: E402
from transformer_lib.data.imdb import load_imdb, make_review_batches  # noqa: E402
from transformer_lib.layers.masks import (  # noqa: E402
    decoder_mask,
    from_keras_mask,
    look_ahead_mask,
    padding_mask,
    to_keras_mask,
)
from transformer_lib.config import PRESETS, TransformerConfig  # noqa: E402
from transformer_lib.models.transformer import Transformer, count_parameters  # noqa: E402
from transformer_lib.layers.positional_encoding import PositionalEmbedding, positional_encoding  # noqa: E402
from transformer_lib.data.tokenizer import (  # noqa: E402
    END_ID,
    PAD_ID,
    START_ID,
    UNKNOWN_ID,
    SubwordTokenizer,
)
from transformer_lib.training.objective import (  # noqa: E402
    MaskedLoss,
    perplexity,
    TransformerSchedule,
    make_optimizer,
    masked_accuracy,
    masked_loss,
)
from transformer_lib.training.loop import train, train_step  # noqa: E402
from transformer_lib.training import since_2017  # noqa: E402,F401 (tl.training.since_2017: the chapter "Since 2017")

from transformer_lib._version import __version__  # noqa: E402

__all__ = [
    "MaskedLoss",
    "Translator",
    "TransformerSchedule",
    "beam_search",
    "evaluate_bleu",
    "paired_bootstrap",
    "greedy_decode",
    "sampled_decode",
    "back_translate",
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
    "ModernLanguageModel",
    "generate",
    "load_gguf",
    "chat_prompt",
    "GGUFTokenizer",
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
    "GroupedQueryAttention",
    "RMSNorm",
    "RotaryEmbedding",
    "SwiGLUFeedForward",
    "blockwise_attention",
    "MultiHeadAttention",
    "PRESETS",
    "PositionalEmbedding",
    "Transformer",
    "TransformerConfig",
    "count_parameters",
    "decoder_mask",
    "from_keras_mask",
    "look_ahead_mask",
    "padding_mask",
    "positional_encoding",
    "scaled_dot_product_attention",
    "to_keras_mask",
]
