import importlib
from pathlib import Path

import pytest

import tools.notebooks as notebooks
import transformer_lib.book as book
from transformer_lib import MultiHeadAttention, positional_encoding

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"


def test_show_source_renders_the_librarys_current_code():
    code = book.show_source(positional_encoding)
    text = repr(code)
    assert text.startswith("def positional_encoding(length: int, depth: int):")
    assert "np.where(dims % 2 == 0, np.sin(angles), np.cos(angles))" in text
    assert "<span" in code._repr_html_()  # highlighted for the page
    method = repr(book.show_source(MultiHeadAttention.split_heads))
    assert method.startswith("def split_heads(self, x):")  # methods lose their class indentation


def test_show_source_refuses_what_has_no_source():
    with pytest.raises(TypeError, match="show_source needs a function, class or method"):
        book.show_source(3)


@pytest.mark.parametrize("value, quick", [("1", True), ("", False), ("0", False)])
def test_quick_mode_follows_book_quick(monkeypatch, value, quick):
    monkeypatch.setenv("BOOK_QUICK", value)
    reloaded = importlib.reload(book)
    assert reloaded.QUICK is quick and reloaded.pick("full", "quick") == ("quick" if quick else "full")
    monkeypatch.delenv("BOOK_QUICK")
    importlib.reload(book)


def test_stored_progress_bars_keep_only_their_final_state():
    from tools.notebooks import settle_terminal_text

    redraws = "Epoch 1/2\n 1/3 [====>....] loss: 9.1\b\b\b\b\r 3/3 [==========] loss: 7.2\nval_loss 7.0\n"
    assert settle_terminal_text(redraws) == "Epoch 1/2\n 3/3 [==========] loss: 7.2\nval_loss 7.0\n"
    assert settle_terminal_text("plain\ntext") == "plain\ntext"


def test_a_progress_bar_written_in_many_pieces_is_stored_as_its_final_line():
    import nbformat

    from tools.notebooks import settle_streams

    pieces = ["Epoch 1/1\n", "\b\b\r 1/2 [==>..]", "\b\b\b\r 2/2 [=====]", "\n", "val_loss 7.0\n"]
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=text) for text in pieces]
    outputs.insert(3, nbformat.v4.new_output("stream", name="stderr", text="a warning\n"))
    settled = settle_streams(outputs)
    assert [(o["name"], o["text"]) for o in settled] == [
        ("stdout", "Epoch 1/1\n 2/2 [=====]"), ("stderr", "a warning\n"), ("stdout", "\nval_loss 7.0\n")]


def _spoil_a_copy(tmp_path, name, is_target):
    """A copy of chapter `name` whose first target cell has a stale output and whose first other code
    cell with outputs shows "left as it was". Returns (copy, notebook, that target's index, the other's)."""
    import json
    import shutil

    copy = tmp_path / name
    shutil.copy(CHAPTERS / name, copy)
    notebook = json.loads(copy.read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    targets = [c for c in code if is_target("".join(c["source"]))]
    others = [c for c in code if c not in targets and c["outputs"]]
    assert targets and others
    targets[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "stale"}]
    others[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "left as it was"}]
    copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return copy, notebook, notebook["cells"].index(targets[0]), notebook["cells"].index(others[0])


def _assert_refreshed_as_a_full_run(copy, target, other):
    import json

    refreshed = json.loads(copy.read_text())
    original = json.loads((CHAPTERS / copy.name).read_text())
    assert refreshed["cells"][target] == original["cells"][target]  # what a full run stored, exactly
    assert "".join(refreshed["cells"][other]["outputs"][0]["text"]) == "left as it was"


def test_refresh_listings_reruns_only_the_listing_cells_and_reproduces_a_clean_run(tmp_path):
    copy, _, target, other = _spoil_a_copy(tmp_path, "03_attention.ipynb", notebooks.LISTING.match)
    assert notebooks.refresh_listings([str(copy)]) == 1
    _assert_refreshed_as_a_full_run(copy, target, other)


def test_diagram_cells_are_recognised_and_nothing_else():
    assert notebooks.is_diagram_cell("from transformer_lib.diagrams import architecture_diagram\n\n"
                                "architecture_diagram(['feed-forward'], title='x')\nplt.show()")
    assert notebooks.is_diagram_cell("# the idea\ntl.diagrams.qkv_diagram()\nplt.show()")
    assert not notebooks.is_diagram_cell("plt.show()")  # draws no diagram
    assert not notebooks.is_diagram_cell("model.fit(data)\narchitecture_diagram()\nplt.show()")  # depends on more
    assert not notebooks.is_diagram_cell("import os; architecture_diagram()")


def test_refresh_diagrams_reruns_only_the_diagram_cells_and_reproduces_a_clean_run(tmp_path):
    import json

    copy, notebook, target, other = _spoil_a_copy(tmp_path, "02_positional_encoding.ipynb", notebooks.is_diagram_cell)
    assert notebooks.refresh_diagrams([str(copy)]) == 1
    _assert_refreshed_as_a_full_run(copy, target, other)
    notebook["cells"][target]["execution_count"] = None  # a new diagram cell: it has no place in the chapter's run
    copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    with pytest.raises(ValueError, match="never ran with the chapter.*run the whole chapter"):
        notebooks.refresh_diagrams([str(copy)])


def test_the_environment_report_names_the_gpu_or_says_how_to_get_one(monkeypatch):
    import keras
    import tensorflow as tf

    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    lines = book.describe_environment().splitlines()
    assert len(lines) == 3 and "none found" in lines[0] and "Runtime > Change runtime type" in lines[0]
    assert lines[1] == f"TensorFlow {tf.__version__}" and lines[2] == f"Keras {keras.__version__}"
    gpu = tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [gpu, gpu])
    monkeypatch.setattr(tf.config.experimental, "get_device_details", lambda device: {"device_name": "NVIDIA T4"})
    assert book.describe_environment().splitlines()[0] == "GPU: NVIDIA T4 and 1 more (training runs on it)."


def test_stored_warnings_name_library_files_from_the_repository():
    text = f"{notebooks.LIBRARY_ROOT}transformer_lib/decoding/bleu.py:41: UserWarning: 1 sentence(s) longer\n"
    assert notebooks.relative_library_paths(text) == "transformer_lib/decoding/bleu.py:41: UserWarning: 1 sentence(s) longer\n"
    settled = notebooks.settle_streams([{"output_type": "stream", "name": "stderr", "text": text}])
    assert notebooks.LIBRARY_ROOT not in settled[0]["text"] and settled[0]["text"].startswith("transformer_lib/")


def test_the_machine_line_names_the_cpu_and_its_widest_vector_instructions():
    from transformer_lib.utils.machine_description import cpu_model

    zen4 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 avx512f avx512bw\n\nprocessor\t: 1\n"
    assert cpu_model(zen4) == "AMD EPYC with AVX-512"
    zen3 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n"
    assert cpu_model(zen3) == "AMD EPYC with AVX2"
    assert cpu_model("model name\t: Old CPU\nflags\t\t: fpu sse2\n") == "Old CPU"
    assert cpu_model("") != ""  # no /proc/cpuinfo: what platform knows


def test_the_chapter_runner_explains_bad_input_instead_of_a_traceback(tmp_path, capsys):
    from tools.notebooks.__main__ import main

    assert main(["--help"]) == 0 and "--listings" in capsys.readouterr().out
    assert main([]) == 2 and "no notebook given" in capsys.readouterr().err
    chapter = tmp_path / "chapter.ipynb"
    chapter.write_text("{}")
    assert main(["--listngs", str(chapter)]) == 2
    assert "unknown option --listngs" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.ipynb"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "missing.ipynb is not a notebook file" in err and f"{tmp_path} is not a notebook file" in err
