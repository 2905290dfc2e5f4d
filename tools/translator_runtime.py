"""Write `runtime.json` for the translator in the page: what the first click on Translate downloads
besides the model (onnxruntime-web, its WebAssembly, SentencePiece), each file's size and gzip size,
and the npm packages they come from. `make book` runs it after fetching them; the page reads it to say
the download's size on its button, and benchmarks/browser_translator.py adds the model's files.

    python tools/translator_runtime.py _assets/browser-translator "onnxruntime-web@1.30.0 ..."
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

LOADED_ON_CLICK = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm", "sentencepiece.min.js")


def main(folder: str, packages: str) -> dict:
    folder = Path(folder)
    files = {}
    for name in LOADED_ON_CLICK:
        data = (folder / name).read_bytes()
        files[name] = {"bytes": len(data), "gzip_bytes": len(gzip.compress(data, 9))}
    record = {"packages": packages.split(), "files": files}
    (folder / "runtime.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main(*sys.argv[1:3])
