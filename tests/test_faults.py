"""Fault injection: every fault a user can cause gets a clear error (or a warning) that says what to do,
and nothing is silently dropped, mixed or lost. One test per guaranteed behaviour."""

import io
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import warnings

import keras
import numpy as np
import pytest
from conftest import requires_shared_data

import transformer_lib as tl
from transformer_lib.__main__ import main
from transformer_lib.decoding.search import beam_search, greedy_decode
from transformer_lib.decoding.translator import Translator
from transformer_lib.export.saved_model import load_translator, save_translator
from transformer_lib.training.recipe import train_translator
from transformer_lib.training.objective import make_optimizer, masked_loss
from transformer_lib.training.loop import train


@pytest.fixture(scope="module")
def tokenizers():
    return tl.train_tokenizers(tl.load_parallel_corpus("synthetic", "train"), vocab_size=400)


def untrained_translator(tokenizers, max_length=16):
    model = tl.Transformer(1, 16, 2, 32, tokenizers[0].vocab_size, tokenizers[1].vocab_size,
                           dropout_rate=0.0, max_length=max_length)
    model((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))  # built, as a trained model is
    return Translator(model, *tokenizers, max_length=max_length)


@pytest.fixture(scope="module")
def translator(tokenizers):
    return untrained_translator(tokenizers)


# --- Decoding: each path alone, from a fresh model (so its first trace is the batch size under test) ---

DECODING_PATHS = {
    "greedy, cached": lambda t, s: t([*s], beam_size=1),
    "greedy, re-run": lambda t, s: greedy_decode(t.model, t.encode_sources(s), 8, use_cache=False),
    "beam search": lambda t, s: t([*s], beam_size=3),
    "attention weights": lambda t, s: [t.attention_weights(text) for text in s],
}


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("path", DECODING_PATHS)
def test_every_decoding_path_works_alone_for_one_sentence_and_for_several(path, batch, tokenizers):
    fresh = untrained_translator(tokenizers)
    sentences = ["сто", "две тысячи", "девять"][:batch]
    assert len(DECODING_PATHS[path](fresh, sentences)) == batch


def test_greedy_translation_of_one_sentence_works_in_a_fresh_process(trained_tiny):
    """The reported crash: `'finished' has shape (1,) before the loop, but shape (None,) after`."""
    script = textwrap.dedent(f"""
        import transformer_lib as tl
        translator = tl.load_translator({str(trained_tiny)!r})
        print(translator("сто", beam_size=1))
        print(translator.attention_weights("сто")["weights"].shape)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines()[0] == "one hundred"


# --- Token ids reaching the model and the loss ---

@pytest.fixture(scope="module")
def model():
    return tl.Transformer(1, 16, 2, 32, 20, 20, dropout_rate=0.0)


GOOD = np.array([[1, 5, 6, 2]], np.int32)


@pytest.mark.parametrize(
    "source, target, error, message",
    [
        (np.array([[1, -1, 2]]), GOOD, ValueError, r"encoder include -1, outside this vocabulary of 20 ids"),
        (GOOD, np.array([[1, 20]]), ValueError, r"decoder include 20, outside this vocabulary of 20 ids"),
        (GOOD.astype("float32"), GOOD, TypeError, r"encoder must be integers, got dtype float32"),
        (np.concatenate([GOOD, GOOD]), GOOD, ValueError, r"source_ids has 2 rows but target_ids has 1"),
    ],
    ids=["negative id", "id past the vocabulary", "float ids", "batches of different sizes"],
)
def test_the_model_refuses_ids_that_are_not_its_tokens(model, source, target, error, message):
    with pytest.raises(error, match=message):
        model((source, target))


def test_the_loss_refuses_labels_outside_the_vocabulary():
    logits = np.zeros((1, 2, 5), "float32")
    with pytest.raises(ValueError, match="labels include -1, outside this vocabulary of 5 ids"):
        masked_loss(np.array([[-1, 2]]), logits)
    assert float(masked_loss(np.array([[1, 2]]), logits)) == pytest.approx(math.log(5), rel=1e-6)


# --- Decoding settings ---

@pytest.mark.parametrize("alpha", [-0.5, float("nan"), float("inf")])
def test_a_length_penalty_that_is_not_a_finite_non_negative_number_is_refused(translator, alpha):
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        translator("сто", alpha=alpha)
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        beam_search(translator.model, GOOD, alpha=alpha)


@pytest.mark.parametrize("beam_size", [1.5, 0, True, "4"])
def test_a_beam_size_that_is_not_a_positive_integer_is_refused(translator, beam_size):
    with pytest.raises(ValueError, match="beam_size must be a positive integer"):
        translator("сто", beam_size=beam_size)


def test_max_length_must_leave_room_for_a_token_and_fit_the_models_positions(tokenizers, translator):
    with pytest.raises(ValueError, match="max_length=2 leaves no room for a token between START and END"):
        Translator(translator.model, *tokenizers, max_length=2)
    with pytest.raises(ValueError, match="max_length=17 is more than the model's 16 positions"):
        Translator(translator.model, *tokenizers, max_length=17)
    with pytest.raises(ValueError, match="max_length=40 is more than the model's 16 positions"):
        greedy_decode(translator.model, GOOD, max_length=40)


# --- What the translator is given ---

@pytest.mark.parametrize(
    "texts, message",
    [(None, "got NoneType"), (5, "got int"), (b"\xd1\x81\xd1\x82\xd0\xbe", "got bytes: decode it first"),
     ({"сто": 1}, "got dict"), (["сто", 5], "got int: 5")],
    ids=["None", "int", "bytes", "dict", "a list holding an int"],
)
def test_the_translator_refuses_what_is_not_text(translator, texts, message):
    with pytest.raises(TypeError, match=f"Translator expects str or a list of str, {message}"):
        translator(texts, beam_size=1)


def test_the_translator_takes_any_sequence_of_strings(translator):
    expected = translator(["сто", "два"], beam_size=1)
    assert translator(("сто", "два"), beam_size=1) == expected
    assert translator((text for text in ["сто", "два"]), beam_size=1) == expected


def test_text_that_cannot_be_in_the_source_language_is_translated_with_a_warning(translator):
    assert translator.source_script == "CYRILLIC"
    with pytest.warns(UserWarning, match=r"2 sentence\(s\) have no Cyrillic letter \(first: #0, 'Hello world'\)"):
        result = translator(["Hello world", "сто", "12345"], beam_size=1)
    assert len(result) == 3 and all(isinstance(text, str) for text in result)
    with pytest.warns(UserWarning, match=r"contain control characters \(first: #0"):
        translator(["сто\x07"], beam_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        translator(["сто один", "  ", "пять\tтысяч"], beam_size=1)  # real Russian: no warning


# --- The exported SavedModel ---

def test_the_saved_model_leaves_unicode_blanks_untranslated_as_the_translator_does(translator, tmp_path):
    """Python's str.strip removes Unicode blanks, tf.strings.strip only ASCII ones: the untrained
    model translates an empty source into words, so a blank missed by the graph shows."""
    import tensorflow as tf

    from transformer_lib.export.saved_model import export_saved_model

    blanks = ["\u00a0", "\u3000", "\u2003 \u00a0", "\u2028\x85\x1c", " \t\n"]
    reloaded = tf.saved_model.load(str(export_saved_model(translator, tmp_path / "saved")))
    served = reloaded.translate(tf.constant(blanks))
    assert [text.decode("utf-8") for text in served.numpy()] == translator(blanks, beam_size=1) == [""] * 5


def test_the_saved_models_blank_test_is_pythons_str_strip_on_every_code_point():
    import tensorflow as tf

    from transformer_lib.export.saved_model import is_blank

    characters = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]  # surrogates are not UTF-8
    blank = is_blank(tf.constant(characters)).numpy()
    assert [c for c, b in zip(characters, blank) if b != (not c.strip())] == []


def test_the_saved_model_docstring_imports_tensorflow_text_before_loading():
    """Without it a fresh process fails with "Op type not registered 'SentencepieceOp'"."""
    from transformer_lib.export.saved_model import export_saved_model

    doc = export_saved_model.__doc__
    loads = doc.index("tf.saved_model.load(")
    assert "import tensorflow_text" in doc[:loads], doc


# --- A saved translator's files ---

@pytest.fixture
def saved(translator, tmp_path):
    return save_translator(translator, tmp_path / "translator")


def test_swapped_tokenizer_files_are_named_as_swapped(saved):
    source, target = (saved / "source.model").read_bytes(), (saved / "target.model").read_bytes()
    (saved / "source.model").write_bytes(target)
    (saved / "target.model").write_bytes(source)
    with pytest.raises(ValueError, match=r"source.model is not the source tokenizer .* the two files look swapped"):
        load_translator(saved)


def test_a_tokenizer_of_another_size_is_refused_even_without_fingerprints(saved):
    other = tl.train_tokenizers(tl.load_parallel_corpus("synthetic", "train"), vocab_size=350)[0]
    other.save(saved / "source.model")
    settings = json.loads((saved / "translator.json").read_text())
    for key in ("source_sha256", "target_sha256"):  # as in a directory saved by an earlier version
        del settings[key]
    (saved / "translator.json").write_text(json.dumps(settings))
    with pytest.raises(ValueError, match=r"source tokenizer has 350 pieces but the model's input_vocab_size is 4\d\d"):
        load_translator(saved)


@pytest.mark.parametrize(
    "content, message",
    [("{}", "lacks the required key 'max_length'"), ("{max_length: 16", "is not valid JSON"),
     ('{"max_length": 0}', "translator.json: max_length must be a positive integer, got 0"), ('{"max_length": 999}', "not hold a consistent translator: max_length=999 is more than the model's 16")],
    ids=["empty", "invalid JSON", "max_length 0", "max_length past the positions"],
)
def test_a_bad_settings_file_is_named_with_what_is_wrong(saved, content, message):
    (saved / "translator.json").write_text(content)
    with pytest.raises(ValueError, match=message):
        load_translator(saved)


@pytest.mark.parametrize(
    "name, message",
    [("model.keras", r"model.keras cannot be loaded .* damaged or truncated"),
     ("source.model", r"source.model is not a readable SentencePiece model .* damaged or truncated")],
)
def test_a_truncated_file_is_named_as_damaged(saved, name, message):
    path = saved / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match=message):
        load_translator(saved)


# --- Training runs: records, resume, changed settings, damaged checkpoints ---

RUN = dict(corpus="synthetic/small", preset="tiny", vocab_size=400, batch_tokens=4096, max_length=24, warmup_steps=50,
           verbose=0)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """One epoch, then a second call that resumes for the second: (out, the record after each call)."""
    out = tmp_path_factory.mktemp("run") / "out"
    first = train_translator(out, epochs=1, **RUN)
    second = train_translator(out, epochs=2, **RUN)
    return out, first, second


def test_a_resumed_run_appends_its_epochs_to_the_record(finished_run):
    out, first, second = finished_run
    assert first["history"]["epoch"] == [1] and second["history"]["epoch"] == [1, 2]
    assert second["history"]["loss"][0] == first["history"]["loss"][0]
    assert json.loads((out / "training.json").read_text())["history"]["epoch"] == [1, 2]


def test_re_running_a_finished_run_keeps_its_record(finished_run):
    out, _, second = finished_run
    before = (out / "training.json").read_text()
    again = train_translator(out, epochs=2, **RUN)
    assert (out / "training.json").read_text() == before
    assert again["history"] == second["history"]


@pytest.mark.parametrize("change, message", [(dict(seed=1), "seed=0 before, 1 now"),
                                             (dict(preset="small"), "preset='tiny' before, 'small' now")])
def test_resuming_with_other_settings_is_refused_naming_the_setting(finished_run, tmp_path, change, message):
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    with pytest.raises(ValueError, match=f"holds a run trained with other settings .*{message}.*restart=True"):
        train_translator(out, epochs=3, **{**RUN, **change})


def test_a_run_split_another_way_is_not_reused(finished_run, tmp_path):
    """A run from before the leak-free splits recorded no split scheme: its test split may hold its
    training sentences, so neither resuming it nor returning its record is allowed."""
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    settings_file = out / "checkpoints" / "settings.json"
    settings = json.loads(settings_file.read_text())
    del settings["splits"]
    settings_file.write_text(json.dumps(settings))
    with pytest.raises(ValueError, match="holds a run trained with other settings .*splits=None before"):
        train_translator(out, epochs=2, **RUN)


def test_restart_deletes_the_old_run_and_starts_afresh(finished_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    summary = train_translator(out, epochs=1, restart=True, **{**RUN, "seed": 1})
    assert summary["history"]["epoch"] == [1] and summary["seed"] == 1


def small_run(tokenizers, directory, epochs, d_model=32, scores=None):
    """A tiny run checkpointed into `directory`. With `scores` it also validates and keeps the last
    three epochs' weights and the best one's, epoch e scoring scores[e - 1]."""
    keras.utils.set_random_seed(5)
    batches = tl.make_batches(tl.load_parallel_corpus("synthetic", "validation"), tokenizers, batch_tokens=512,
                              max_length=24, seed=1, verbose=False)
    model = tl.Transformer(1, d_model, 4, 64, tokenizers[0].vocab_size, tokenizers[1].vocab_size)
    kept = {}
    if scores is not None:
        done = json.loads((directory / "history.json").read_text())["epoch"] if (directory / "history.json").exists() else []
        score = iter(scores[len(done):])
        kept = dict(val_ds=batches, keep_weights=3, score=lambda model: next(score))
    return model, train(model, batches, epochs=epochs, optimizer=make_optimizer(d_model, 50),
                        checkpoint_dir=directory, verbose=0, **kept)


def test_resume_skips_a_damaged_latest_checkpoint_and_says_which(tokenizers, tmp_path):
    small_run(tokenizers, tmp_path, epochs=2)
    data = next(tmp_path.glob("ckpt-2.data-*"))
    data.write_bytes(data.read_bytes()[:100])
    with pytest.warns(UserWarning, match=r"Checkpoint .*ckpt-2 is unreadable .* resuming from the one before"):
        _, history = small_run(tokenizers, tmp_path, epochs=3)
    assert history["epoch"] == [1, 2, 3]  # epoch 2 trained again from ckpt-1


def test_a_checkpoint_of_another_model_is_refused_with_a_remedy(tokenizers, tmp_path):
    small_run(tokenizers, tmp_path, epochs=1)
    with pytest.raises(ValueError, match="does not fit this model and optimizer .* use another checkpoint_dir"):
        small_run(tokenizers, tmp_path, epochs=2, d_model=64)


# --- Bad arguments, refused before any long work ---

def test_sizes_that_cannot_work_are_refused_by_the_library():
    pairs = tl.load_parallel_corpus("synthetic", "validation")
    with pytest.raises(ValueError, match="vocab_size must be a positive integer, got 0"):
        tl.train_tokenizers(pairs, vocab_size=0)
    with pytest.raises(ValueError, match="batch_tokens must be a positive integer, got 0"):
        tl.make_batches(pairs, tl.train_tokenizers(pairs, vocab_size=300), batch_tokens=0)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        tl.make_batches(pairs, tl.train_tokenizers(pairs, vocab_size=300), batch_size=0, batch_tokens=None)


@pytest.mark.parametrize(
    "argv, message",
    [(["train", "--batch-tokens", "0"], "--batch-tokens: expected a whole number >= 1, got 0"),
     (["train", "--vocab-size", "0"], "--vocab-size: expected a whole number >= 1, got 0"),
     (["train", "--max-length", "2"], "--max-length: 2 leaves no room for a token"),
     (["translate", "--model", "m", "--beam-size", "1.5", "x"], "--beam-size: expected a whole number >= 1, got '1.5'"),
     (["translate", "--model", "m", "--alpha", "nan", "x"], "--alpha: expected a finite number >= 0, got nan"),
     (["evaluate", "--model", "m", "--limit", "-500"], "--limit: expected a whole number >= 1, got -500"),
     (["train", "--vocab-size", "3000000000"], "--vocab-size: expected a size <= 2,147,483,647 (sentencepiece's")],
    ids=["batch tokens 0", "vocab size 0", "max length 2", "beam size 1.5", "alpha nan", "limit -500", "vocab size 3e9"],
)
def test_the_command_line_refuses_bad_numbers_before_any_work(argv, message, tmp_path, capsys):
    if argv[0] == "train":
        argv = [*argv, "--out", str(tmp_path / "run")]
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


def test_train_refuses_an_out_that_is_a_file_before_training(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        main(["train", "--corpus", "synthetic", "--out", str(tmp_path / "file")])
    assert "is a file; give a directory" in capsys.readouterr().err


def test_the_command_line_reports_a_missing_translator_without_a_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "transformer_lib", "translate", "--model", str(tmp_path), "сто"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "translate: error:" in result.stderr and "is not a saved translator" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_utf8_on_stdin_loses_no_line(trained_tiny, monkeypatch, capsys):
    stdin = io.TextIOWrapper(io.BytesIO("сто\n".encode() + b"\xff\xfe bad\n" + "два\n".encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    with pytest.warns(UserWarning, match="stdin line 2 is not valid UTF-8"), \
            pytest.warns(UserWarning, match=r"1 sentence\(s\) have no Cyrillic letter \(first: #1"):
        translations = main(["translate", "--model", str(trained_tiny), "--beam-size", "1"])
    assert len(translations) == 3 and translations[0] == "one hundred" and translations[2] == "two"
    assert capsys.readouterr().out.splitlines() == translations


def test_invalid_utf8_on_the_command_line_is_read_like_stdin(trained_tiny, capsys):
    bad = os.fsdecode(b"\xff\xfe bad")  # what Python makes of undecodable bytes in sys.argv
    with pytest.warns(UserWarning, match="argument 2 is not valid UTF-8"):
        translations = main(["translate", "--model", str(trained_tiny), "--beam-size", "1", "сто", bad, "два"])
    assert len(translations) == 3 and translations[0] == "one hundred" and translations[2] == "two"
    assert capsys.readouterr().out.splitlines() == translations


@requires_shared_data
def test_a_split_missing_from_the_offline_copy_is_named(monkeypatch):
    with pytest.raises(tl.CorpusUnavailableError, match=r"has no 'train' split \(it holds: test, validation\)"):
        tl.load_parallel_corpus("ted_hrlr/pt_to_en", "train")


# --- A run's directory: checkpoints without their index file, one run at a time, whole records ---

def test_resume_finds_the_checkpoints_when_their_index_file_is_gone(tokenizers, tmp_path):
    _, first = small_run(tokenizers, tmp_path, epochs=2)
    (tmp_path / "checkpoint").unlink()  # TensorFlow's index of the checkpoints, lost or not copied
    with pytest.warns(UserWarning, match=r"index file .*checkpoint is missing; rebuilt it from ckpt-1, ckpt-2"):
        _, history = small_run(tokenizers, tmp_path, epochs=3)
    assert history["epoch"] == [1, 2, 3]
    assert history["seconds"][:2] == first["seconds"]  # the two epochs were resumed, not trained again


def test_a_run_without_its_index_file_still_has_its_settings_compared(finished_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    (out / "checkpoints" / "checkpoint").unlink()
    with pytest.raises(ValueError, match="holds a run trained with other settings .*seed=0 before, 1 now"):
        train_translator(out, epochs=3, **{**RUN, "seed": 1})


HOLD_LOCK = """
import fcntl, os, sys
handle = open(sys.argv[1], "a+")
fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
handle.truncate(0)
handle.write(f"{os.getpid()}\\nanother training run\\n")
handle.flush()
print("locked", flush=True)
sys.stdin.read()  # held until the test closes stdin
"""


def test_a_second_run_into_the_same_directory_is_refused_at_once_naming_the_holder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out / ".lock")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(RuntimeError, match=rf"in use by another training run \(pid {holder.pid}: another "
                                               r"training run\).* wait for it to finish"):
            train_translator(out, epochs=1, **RUN)
    finally:
        holder.communicate("", timeout=60)
    assert not (out / "checkpoints").exists()  # refused before anything was written


def test_the_run_lock_is_held_released_and_taken_over_from_a_dead_process(tmp_path):
    from transformer_lib.training.run_lock import RunInUseError, run_lock

    (tmp_path / ".lock").write_text("999999999\na run that crashed\n")  # stale: its process is gone
    with run_lock(tmp_path):
        assert (tmp_path / ".lock").read_text().split("\n")[0] == str(os.getpid())
        with pytest.raises(RunInUseError, match=f"pid {os.getpid()}"):
            with run_lock(tmp_path):
                pass
    assert not (tmp_path / ".lock").exists()  # a finished run leaves no lock file behind
    with pytest.raises(KeyError):
        with run_lock(tmp_path):
            raise KeyError("an error inside the run")
    with run_lock(tmp_path):  # released after the error too
        pass


def test_train_holds_the_lock_of_its_checkpoint_dir(tokenizers, tmp_path):
    from transformer_lib.training.run_lock import RunInUseError, run_lock

    with run_lock(tmp_path):
        with pytest.raises(RunInUseError, match=f"pid {os.getpid()}"):
            small_run(tokenizers, tmp_path, epochs=1)
    assert not (tmp_path / "ckpt-1.index").exists()


def test_a_record_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    from transformer_lib.training.checkpoints import write_history
    from transformer_lib.utils.json_records import write_json

    path = tmp_path / "history.json"
    write_json(path, {"epoch": [1]})
    with pytest.raises(TypeError):
        write_json(path, {"epoch": [1, 2], "model": object()})  # cannot be serialised
    assert json.loads(path.read_text()) == {"epoch": [1]}

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError, match="disk full"):
        write_history(tmp_path, {"epoch": [1, 2]})
    assert json.loads(path.read_text()) == {"epoch": [1]}
    assert [p.name for p in tmp_path.iterdir()] == ["history.json"]  # no temporary file left behind


def test_a_damaged_history_names_the_file_and_what_to_do(tmp_path):
    from transformer_lib.training.checkpoints import read_history

    (tmp_path / "history.json").write_text('{"epoch": [1, 2')
    with pytest.raises(ValueError, match=r"history.json is damaged \(not valid JSON.*\).* restore it"):
        read_history(tmp_path, 2, {"epoch": [], "loss": []})


def test_a_damaged_training_record_names_the_file_and_what_to_do(finished_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    (out / "training.json").write_text('{"history": ')
    with pytest.raises(ValueError, match=r"training.json is damaged .* delete it"):
        train_translator(out, epochs=2, **RUN)


def test_a_run_without_its_settings_file_is_checked_against_its_record(finished_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    (out / "checkpoints" / "settings.json").unlink()
    with pytest.raises(ValueError, match="holds a run trained with other settings .*seed=0 before, 1 now"):
        train_translator(out, epochs=3, **{**RUN, "seed": 1})
    with pytest.warns(UserWarning, match=r"settings.json is missing; the run's settings were read from its record"):
        summary = train_translator(out, epochs=3, **RUN)
    assert summary["history"]["epoch"] == [1, 2, 3]
    assert json.loads((out / "checkpoints" / "settings.json").read_text())["seed"] == 0


def test_a_run_without_settings_file_or_record_is_not_resumed(finished_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    (out / "checkpoints" / "settings.json").unlink()
    (out / "training.json").unlink()
    with pytest.raises(ValueError, match=r"holds checkpoints but not settings.json.* could mix two runs\. Restore "
                                         r"settings.json from a copy of the run, or pass restart=True"):
        train_translator(out, epochs=3, **RUN)
    assert not (out / "checkpoints" / "ckpt-3.index").exists()


def kept_weights_run(tokenizers, directory, epochs):
    """A tiny run that keeps its epochs' weights; its scores make epoch 2 the best."""
    return small_run(tokenizers, directory, epochs, scores=(1.0, 3.0, 2.0, 0.5))


def test_lost_kept_weights_are_written_again_from_what_is_intact(tokenizers, tmp_path):
    kept_weights_run(tokenizers, tmp_path, epochs=3)
    weights = tmp_path / "weights"
    best_before = weights.joinpath("epoch-002.weights.h5").read_bytes()
    (weights / "epoch-003.weights.h5").unlink()
    (weights / "best.weights.h5").write_bytes(best_before[:200])  # truncated
    (weights / "epoch-001.weights.h5").write_bytes(b"")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, history = kept_weights_run(tokenizers, tmp_path, epochs=4)
    said = "\n".join(str(w.message) for w in caught)
    assert "epoch-001.weights.h5 was damaged; removed it" in said
    assert "epoch-003.weights.h5 was missing; wrote it again from the checkpoint of epoch 3" in said
    assert "best.weights.h5 was missing or damaged; copied it again from epoch 2's weights" in said
    assert history["epoch"] == [1, 2, 3, 4]
    assert tl.training.selection.kept_epochs(tmp_path) == [2, 3, 4]
    choice = tl.training.selection.select_weights(model, tmp_path, lambda m: 1.0, average_last=3, verbose=False)
    assert set(choice["scores"]) == {"last (epoch 4)", "best", "average of epochs 2-4"}


def test_lost_best_weights_without_a_copy_are_refused_before_training(tokenizers, tmp_path):
    kept_weights_run(tokenizers, tmp_path, epochs=3)
    (tmp_path / "weights" / "best.weights.h5").unlink()
    (tmp_path / "weights" / "epoch-002.weights.h5").unlink()  # the best epoch's own file
    with pytest.raises(ValueError, match=r"best.weights.h5 is missing or damaged and the best epoch \(2\) has no other "
                                         r"copy.* Restore best.weights.h5 from a copy of the run, or start afresh"):
        kept_weights_run(tokenizers, tmp_path, epochs=4)
    assert not (tmp_path / "ckpt-4.index").exists()


def test_choosing_weights_from_a_damaged_file_names_it(tokenizers, tmp_path):
    model, _ = kept_weights_run(tokenizers, tmp_path, epochs=3)
    (tmp_path / "weights" / "epoch-003.weights.h5").write_bytes(b"\x89HDF")
    with pytest.raises(ValueError, match=r"epoch-003.weights.h5 is missing or damaged\. Run train with this "
                                         r"checkpoint folder again"):
        tl.training.selection.select_weights(model, tmp_path, lambda m: 1.0, average_last=3, verbose=False)


# --- Limits from memory, checked before the work ---

def test_a_beam_too_wide_for_the_memory_is_refused_with_the_widest_that_fits(translator, monkeypatch):
    monkeypatch.setattr("transformer_lib.utils.memory_budget.available_bytes", lambda: 8 * 2**30)
    with pytest.raises(ValueError, match=r"beam_size=1,000,000 for 1 sentence\(s\) and max_length=\d+ would need about "
                                         r"[\d,.]+ GB of memory, and about 7.2 GB is free for it: use beam_size <= ") as error:
        translator("сто", beam_size=10**6)
    widest = int(str(error.value).rsplit("<= ", 1)[1].rstrip(".").replace(",", ""))
    # a tiny model's hypothesis carries tens of kilobytes (its caches and a row of scores): ~10^5 fit in 7 GB
    assert 10**4 < widest < 10**6


def test_a_beam_that_no_machine_holds_is_refused_by_the_command_line(trained_tiny, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["translate", "--model", str(trained_tiny), "--beam-size", str(10**9), "сто"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "translate: error: beam_size=1,000,000,000 for 1 sentence(s)" in err and "Traceback" not in err


@pytest.mark.parametrize("change, message", [
    (dict(max_length=10**6), r"max_length=1,000,000 with preset 'tiny' would need about .* use max_length <= [\d,]+\."),
    (dict(batch_tokens=10**12), r"batch_tokens=1,000,000,000,000 with preset 'tiny' and max_length=24 would need .* "
                                r"use batch_tokens <= [\d,]+\."),
], ids=["max length", "batch tokens"])
def test_a_run_too_big_for_the_memory_is_refused_before_any_work(change, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        train_translator(tmp_path / "out", epochs=1, **{**RUN, **change})
    assert not (tmp_path / "out").exists()


# --- Telling the user: a finished run, Ctrl-C, a full disk ---

CLI_RUN = ["train", "--corpus", "synthetic/small", "--preset", "tiny", "--vocab-size", "400", "--batch-tokens", "4096",
           "--max-length", "24", "--warmup-steps", "50"]


@pytest.mark.parametrize("epochs, said", [(2, "finished run of 2 epochs and its translator. Ask for more epochs"),
                                          (1, "finished run of 2 epochs and its translator (asked for 1: a finished "
                                              "run is not cut short)")])
def test_a_finished_run_says_there_is_nothing_to_train(finished_run, tmp_path, capsys, epochs, said):
    out = tmp_path / "copy"
    shutil.copytree(finished_run[0], out)
    record = main([*CLI_RUN, "--epochs", str(epochs), "--out", str(out)])
    assert record["history"]["epoch"] == [1, 2]
    assert f"Nothing to train: {out} holds a {said}" in capsys.readouterr().out


def test_ctrl_c_ends_training_with_one_line_saying_how_to_resume(tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("transformer_lib.training.recipe.train", interrupted)
    with pytest.raises(SystemExit) as stop:
        main([*CLI_RUN, "--epochs", "1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 130 and len(err.splitlines()) == 1
    assert err == (f"python -m transformer_lib train: interrupted. Run the same command again to resume from the last "
                   f"finished epoch (checkpoints in {tmp_path / 'out' / 'checkpoints'}).")
    assert not (tmp_path / "out" / ".lock").exists()


@pytest.mark.parametrize("where", ["checkpoint", "weights"])
def test_a_full_disk_while_saving_an_epoch_is_one_line_saying_what_to_do(tmp_path, monkeypatch, capsys, where):
    import tensorflow as tf

    def checkpoint_full(*args, **kwargs):
        raise tf.errors.UnknownError(None, None, "ckpt-1_temp/part-00000-of-00001.data: No space left on device")

    def weights_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    if where == "checkpoint":
        monkeypatch.setattr(tf.train.CheckpointManager, "save", checkpoint_full)
    else:
        monkeypatch.setattr(keras.Model, "save_weights", weights_full)
    with pytest.raises(SystemExit) as stop:
        main([*CLI_RUN, "--epochs", "1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "No space left on the disk while saving epoch 1 in" in err and "run the same training again" in err
