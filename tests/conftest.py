"""What every test shares. The tests mirror the library: tests/layers/ tests transformer_lib/layers/, and so
on for models, data, training, decoding, export and book (book/exercises/: the exercises' checks). At the top
stand the tests that span the library or the repository: faults, the command line, the library's layout, the
chapters and the reader's text, READMEs, packaging, CI, the student edition, grading, the site check.
tests/fixtures/ holds files kept for the tests (saved weights and translators). Helpers that several test
modules use live here (`from conftest import random_ids`); the exercises' tests share theirs in
book/exercises/answers.py. Each test module's name is unique across the folders: pytest imports it by that
name."""

import ast
import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Floating-point sums of a trained outcome depend on how many threads split them (TensorFlow's
# default follows the number of cores): one intra-op thread unless the caller sets another, so a
# test run gives the same numbers on any core count. The trained-outcome tests are measured to hold
# with 1, 2 and 4 threads too (TF_NUM_INTRAOP_THREADS=4 make unit-tests).
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

from pathlib import Path  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# TensorFlow rewrites each graph (Grappler: constant folding, op fusion, ...) before its first run, which
# makes a long run faster but costs 3 to 4 s per trained toy model, more than the training itself (measured
# on a 2-core AMD EPYC: a 2-epoch toy train_translator 18.8-20.3 s without, 21.8-24.6 s with). The tests
# check what the graphs compute, which the rewrite leaves as it is; the chapters, which CI also runs, keep it.
tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state, so a failure reproduces."""
    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def random_ids(rng, batch, length, vocab_size, pad_from=None):
    """Random token ids in [1, vocab_size); row b is padded with 0 from position pad_from[b] on."""
    ids = rng.integers(1, vocab_size, size=(batch, length))
    if pad_from is not None:
        for row, start in enumerate(pad_from):
            ids[row, start:] = 0
    return ids.astype("int32")


def keras_mask_of(tensor):
    """The implicit mask Keras attached to a tensor (e.g. by `Embedding(mask_zero=True)`), or None."""
    return getattr(tensor, "_keras_mask", None)


def synthetic_reviews(count: int, seed: int) -> list[tuple[str, int]]:
    """Reviews of 4-60 neutral words with a few sentiment words mixed in; the label says whether the
    positive words outnumber the negative ones. Lengths vary a lot, so most batches are mostly padding."""
    rng = np.random.default_rng(seed)
    neutral = "the movie film plot actor scene story it was and a of this that director music ending".split()
    good, bad = "great excellent wonderful superb loved".split(), "awful boring terrible dull hated".split()
    reviews = []
    for _ in range(count):
        label = int(rng.integers(2))
        major, minor = rng.integers(2, 5), rng.integers(0, 2)
        words = list(rng.choice(neutral, rng.integers(4, 60)))
        words += list(rng.choice(good if label else bad, major)) + list(rng.choice(bad if label else good, minor))
        rng.shuffle(words)
        reviews.append((" ".join(words), label))
    return reviews


def tiny_gguf_tensors(rng, d=8, heads=2, kv_heads=1, ff=12, vocab=None):
    """The tensors of a one-layer llama model, random, each (output features, input features) as GGUF stores them."""
    vocab = vocab or len(TINY_TOKENS)
    d_kv = d // heads * kv_heads
    shapes = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,), "blk.0.attn_norm.weight": (d,),
              "blk.0.attn_q.weight": (d, d), "blk.0.attn_k.weight": (d_kv, d), "blk.0.attn_v.weight": (d_kv, d),
              "blk.0.attn_output.weight": (d, d), "blk.0.ffn_norm.weight": (d,), "blk.0.ffn_gate.weight": (ff, d),
              "blk.0.ffn_up.weight": (ff, d), "blk.0.ffn_down.weight": (d, ff)}
    return {name: rng.normal(0, 0.5, shape).astype(np.float32) for name, shape in shapes.items()}


def _tiny_tokens():
    from tokenizers import pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())  # one token per byte: any text has tokens
    return ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *alphabet, "ab", "Ġa"]


TINY_TOKENS = _tiny_tokens()


def write_tiny_gguf(path, tensors, architecture="llama", heads=2, kv_heads=1, d=8, ff=12, context=32):
    """A GGUF file at `path` (written by the `gguf` package) of a one-layer llama model with `tensors` and a byte-level
    BPE tokenizer of TINY_TOKENS (merges "a b" and "Ġ a"): what `load_gguf` reads, in a few kilobytes."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), architecture)
    writer.add_block_count(1)
    writer.add_context_length(context)
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_freq_base(500.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(TINY_TOKENS)
    writer.add_token_types([3, 3, 3] + [1] * (len(TINY_TOKENS) - 3))
    writer.add_token_merges(["a b", "Ġ a"])
    for name, value in tensors.items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def function_lengths(source: str, without_docstrings: bool = False) -> dict[str, int]:
    """Every function and method of `source` (nested ones too), by qualified name (`Class.method`,
    `outer.inner`), with its length in lines from `def` (or its first decorator) to its last line
    (less its docstring's lines, `without_docstrings`: its code lines)."""
    lengths = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    docstring = child.body[0] if without_docstrings and ast.get_docstring(child) is not None else None
                    skipped = docstring.end_lineno - docstring.lineno + 1 if docstring else 0
                    lengths[name] = child.end_lineno - first + 1 - skipped
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return lengths


SHARED_DATA = Path(os.environ.get("TRANSFORMER_BOOK_DATA") or "/nonexistent")
requires_shared_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(),
    reason="needs the offline corpora: set TRANSFORMER_BOOK_DATA to ../shared/data (CI and `make test` do)",
)


@pytest.fixture(scope="session")
def trained_tiny(tmp_path_factory):
    """The `tiny` preset trained on the synthetic task (numbers in Russian words -> English words),
    saved as a translator directory: a model that really translates, shared by every test that needs
    one. Its trained weights are kept in tests/fixtures/tiny-translator/ (tools/tiny_translator.py says how
    they were trained, and why they can be trusted); each worker gets its own copy, which a test may change."""
    from tools.tiny_translator import trained_tiny_translator

    copy = tmp_path_factory.mktemp("tiny") / "translator"
    shutil.copytree(trained_tiny_translator(), copy)
    return copy
