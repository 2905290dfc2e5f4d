import shutil
import urllib.error

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import SHARED_DATA, requires_shared_data

from benchmarks.padding import measure
from transformer_lib.data import corpora
from transformer_lib.data import downloads
from transformer_lib.data import synthetic
from transformer_lib.data.corpora import ChecksumError, CorpusUnavailableError, load_parallel_corpus
from transformer_lib.data.batching import make_batches, padding_fraction, train_tokenizers
from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID


@pytest.fixture(scope="module")
def synthetic_tokenizers():
    return train_tokenizers(load_parallel_corpus("synthetic", "train"), vocab_size=400)


# --- Corpora -------------------------------------------------------------------------------------


@requires_shared_data
@pytest.mark.parametrize("name, total", [("tatoeba/rus-eng", 19_425), ("tatoeba/por-eng", 13_222),
                                         ("newstest/rus-eng", 27_810),  # 27,813 lines, 3 pairs repeated
                                         ("tatoeba+newstest/rus-eng", 19_425 + 27_810),
                                         ("smartool/rus-eng", 9_468),  # 9,469 distinct in its README, one "_"
                                         ("tatoeba+smartool/rus-eng", 19_425 + 9_468)])
def test_no_sentence_of_either_side_appears_in_two_splits(name, total):
    splits = {split: load_parallel_corpus(name, split) for split in ("train", "validation", "test")}
    assert sum(len(pairs) for pairs in splits.values()) == total
    for side in (0, 1):  # sources, then targets, compared with whitespace normalised
        sentences = {split: {" ".join(pair[side].split()) for pair in pairs} for split, pairs in splits.items()}
        assert not sentences["train"] & sentences["validation"]
        assert not sentences["train"] & sentences["test"]
        assert not sentences["validation"] & sentences["test"]
    assert 0.85 < len(splits["train"]) / total < 0.95
    assert all(0.025 < len(splits[split]) / total < 0.075 for split in ("validation", "test"))
    assert all(s.strip() and t.strip() for pairs in splits.values() for s, t in pairs)


@requires_shared_data
def test_the_combined_corpus_trains_on_no_sentence_of_either_corpus_held_out_splits():
    combined_train = load_parallel_corpus("tatoeba+newstest/rus-eng", "train")
    for side in (0, 1):
        trained = {" ".join(pair[side].split()) for pair in combined_train}
        for name in ("tatoeba/rus-eng", "newstest/rus-eng"):
            for split in ("validation", "test"):
                held_out = {" ".join(pair[side].split()) for pair in load_parallel_corpus(name, split)}
                assert held_out and not trained & held_out, (name, split, side)


def test_a_combined_group_goes_to_the_most_held_out_split_of_its_pairs(monkeypatch):
    """A news pair that shares a sentence with a Tatoeba test pair leaves training with it, although its
    own corpus alone would train on it."""
    from transformer_lib.data.splits import split_of_key

    train_keys = [f"Фраза {i}." for i in range(1000) if split_of_key(f"Фраза {i}.") == "train"]
    test_key = next(f"Фраза {i}." for i in range(1000) if split_of_key(f"Фраза {i}.") == "test")
    tatoeba = [(test_key, "A test sentence."), (train_keys[0], "A training sentence.")]
    news = [(train_keys[1], "A test sentence."), ("Новость.", "News.")]  # shares its target with tatoeba[0]
    monkeypatch.setattr(corpora, "_tatoeba_pairs", lambda name: tatoeba)
    monkeypatch.setattr(corpora, "_newstest_pairs", lambda: news)
    assert news[0] in load_parallel_corpus("newstest/rus-eng", "train")  # alone, it would be trained on
    combined = {split: load_parallel_corpus("tatoeba+newstest/rus-eng", split) for split in ("train", "validation", "test")}
    assert news[0] in combined["test"] and tatoeba[0] in combined["test"]
    assert tatoeba[1] in combined["train"]
    assert sum(len(pairs) for pairs in combined.values()) == 4


@requires_shared_data
def test_tatoeba_with_smartool_keeps_tatoebas_held_out_pairs_and_trains_on_every_learner_pair():
    for split in ("validation", "test"):  # the same pairs, in the same order: scores stay comparable
        assert load_parallel_corpus("tatoeba+smartool/rus-eng", split) == load_parallel_corpus("tatoeba/rus-eng", split)
    train = load_parallel_corpus("tatoeba+smartool/rus-eng", "train")
    learner = [pair for split in ("train", "validation", "test") for pair in load_parallel_corpus("smartool/rus-eng", split)]
    assert train == load_parallel_corpus("tatoeba/rus-eng", "train") + sorted(learner, key=learner_order())
    assert len(train) == 17_475 + 9_468
    assert ("Он сел в трамвай и поехал домой.", "He got on the tram and went home.") in train  # the first row of A1


def learner_order():
    """The order of the pairs in the SMARTool files (A1 first), as the combined corpus keeps it."""
    order = {pair: i for i, pair in enumerate(corpora._smartool_pairs())}
    return order.__getitem__


def test_a_learner_pair_linked_to_a_tatoeba_held_out_pair_is_not_trained_on(monkeypatch):
    """A SMARTool pair that shares a sentence with a Tatoeba test pair, and one chained to it through
    another shared sentence, are left out; Tatoeba's own splits do not move."""
    from transformer_lib.data.splits import split_of_key

    train_keys = [f"Фраза {i}." for i in range(1000) if split_of_key(f"Фраза {i}.") == "train"]
    test_key = next(f"Фраза {i}." for i in range(1000) if split_of_key(f"Фраза {i}.") == "test")
    tatoeba = [(test_key, "A test sentence."), (train_keys[0], "A training sentence.")]
    learner = [(train_keys[1], "A test sentence."),  # its English is the test pair's
               (train_keys[1], "Another wording."),  # chained to it by its Russian
               (train_keys[0], "A second translation."),  # linked to a Tatoeba *training* pair only
               ("Урок.", "A lesson.")]
    monkeypatch.setattr(corpora, "_tatoeba_pairs", lambda name: tatoeba)
    monkeypatch.setattr(corpora, "_smartool_pairs", lambda: learner)
    combined = {split: load_parallel_corpus("tatoeba+smartool/rus-eng", split) for split in ("train", "validation", "test")}
    assert combined["test"] == [tatoeba[0]] and combined["validation"] == []
    assert combined["train"] == [tatoeba[1], learner[2], learner[3]]


def _smartool_folder(root, rows, header=corpora.SMARTOOL_COLUMNS):
    """SMARTool-like level files under root (the A1 file holds `rows`, the others only the header);
    returns their sha256 by name, for SMARTOOL_SHA256."""
    import csv
    import hashlib

    folder = root / corpora.SMARTOOL_DIR
    folder.mkdir(parents=True)
    sums = {}
    for name in corpora.SMARTOOL_SHA256:
        with (folder / name).open("w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["Target language lemma", *header, "Topic(s)"])
            for row in rows if name.endswith("A1.csv") else []:
                writer.writerow(["лемма", *row, "тема"])
        sums[name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    return sums


def test_smartool_rows_without_both_sentences_are_not_pairs_and_a_repeated_pair_is_read_once(tmp_path, monkeypatch):
    rows = [("Он сел в трамвай.", "He got on the tram."), ("", "A gloss without an example."), ("_", "_"),
            ("Я дома.", "_"), ("Он  сел в трамвай. ", "He got on\nthe tram."),  # the first pair again, spaced out
            ("Я дома.", "I'm at home.")]
    monkeypatch.setattr(corpora, "SMARTOOL_SHA256", _smartool_folder(tmp_path, rows))
    monkeypatch.setenv(corpora.DATA_ENV, str(tmp_path))
    assert corpora._smartool_pairs() == [("Он сел в трамвай.", "He got on the tram."), ("Я дома.", "I'm at home.")]


def test_a_file_that_is_not_a_smartool_level_file_is_named(tmp_path, monkeypatch):
    sums = _smartool_folder(tmp_path, [], header=("Russian", "English"))
    monkeypatch.setattr(corpora, "SMARTOOL_SHA256", sums)
    monkeypatch.setenv(corpora.DATA_ENV, str(tmp_path))
    with pytest.raises(CorpusUnavailableError, match="SMARTool_data_A1.csv has no column 'Target language example"):
        load_parallel_corpus("smartool/rus-eng", "train")


@requires_shared_data
def test_smartool_files_are_checked_against_their_sums(tmp_path, monkeypatch):
    shutil.copytree(SHARED_DATA / corpora.SMARTOOL_DIR, tmp_path / corpora.SMARTOOL_DIR)
    victim = tmp_path / corpora.SMARTOOL_DIR / "SMARTool_data_B1.csv"
    victim.write_bytes(victim.read_bytes().replace("трамвай".encode(), "троллейбус".encode(), 1) + b"\n")
    monkeypatch.setenv(corpora.DATA_ENV, str(tmp_path))
    with pytest.raises(ChecksumError, match=r"SMARTool_data_B1\.csv has sha256 \w+, expected b0e5ecd4"):
        load_parallel_corpus("smartool/rus-eng", "train")
    victim.unlink()
    with pytest.raises(CorpusUnavailableError, match="nothing is downloaded.*smartool_rus_eng/SMARTool_data_B1.csv"):
        load_parallel_corpus("smartool/rus-eng", "test")


def test_pairs_linked_through_a_shared_target_stay_together_whatever_their_order():
    from transformer_lib.data.splits import connected_groups, split_pairs

    pairs = [("Я не знаю.", "I don't know."), ("Не знаю.", "I don't know."), ("Не знаю.", "No idea."),
             ("Кот спит.", "The cat  is sleeping."), ("Кошка спит.", " The cat is sleeping.")]
    keys = connected_groups(pairs)
    assert keys[0] == keys[1] == keys[2] and keys[3] == keys[4] and keys[0] != keys[3]
    assert connected_groups(pairs[::-1]) == keys[::-1]  # the key does not depend on the order
    for split in ("train", "validation", "test"):
        chosen = split_pairs(pairs, split)
        assert len([p for p in chosen if p in pairs[:3]]) in (0, 3)
        assert split_pairs(pairs[::-1], split) == chosen[::-1]


@requires_shared_data
def test_news_pairs_are_distinct_and_their_files_are_checked(tmp_path, monkeypatch):
    pairs = [pair for split in ("train", "validation", "test") for pair in load_parallel_corpus("newstest/rus-eng", split)]
    assert len({(" ".join(s.split()), " ".join(t.split())) for s, t in pairs}) == len(pairs)
    shutil.copytree(SHARED_DATA / corpora.NEWSTEST_DIR, tmp_path / corpora.NEWSTEST_DIR)
    monkeypatch.setenv(corpora.DATA_ENV, str(tmp_path))
    victim = tmp_path / corpora.NEWSTEST_DIR / "testsets" / "rus-eng" / "newstest2016.eng"
    victim.write_bytes(victim.read_bytes()[:-10])
    with pytest.raises(ChecksumError, match=r"newstest2016\.eng has sha256 \w+, expected 5bf673ee"):
        load_parallel_corpus("newstest/rus-eng", "test")
    victim.unlink()
    with pytest.raises(CorpusUnavailableError, match="nothing is downloaded.*testsets/rus-eng/newstest2016.eng"):
        load_parallel_corpus("newstest/rus-eng", "test")


@requires_shared_data
def test_tatoeba_pairs_are_russian_to_english_and_aligned():
    pairs = load_parallel_corpus("tatoeba/rus-eng", "train")
    cyrillic = sum(any("а" <= c <= "я" for c in s.lower()) for s, _ in pairs)
    latin_targets = sum(any("a" <= c <= "z" for c in t.lower()) for _, t in pairs)
    assert cyrillic / len(pairs) > 0.99 and latin_targets / len(pairs) > 0.99


@requires_shared_data
def test_a_corrupted_local_copy_fails_its_checksum(tmp_path, monkeypatch):
    shutil.copytree(SHARED_DATA / corpora.TATOEBA_DIR, tmp_path / corpora.TATOEBA_DIR)
    victim = tmp_path / corpora.TATOEBA_DIR / "eng-rus" / "tatoeba-test-v2021-08-07.rus"
    content = bytearray(victim.read_bytes())
    content[1000] ^= 0x01  # one bit of one byte
    victim.write_bytes(bytes(content))
    monkeypatch.setenv(corpora.DATA_ENV, str(tmp_path))
    with pytest.raises(ChecksumError, match=r"tatoeba-test-v2021-08-07\.rus has sha256 \w+, expected 643d0d8b"):
        load_parallel_corpus("tatoeba/rus-eng", "train")


def test_a_missing_local_file_is_an_error_not_a_download(tmp_path, monkeypatch):
    monkeypatch.setenv(corpora.DATA_ENV, str(tmp_path))
    monkeypatch.setattr(keras.utils, "get_file", lambda *a, **k: pytest.fail("must not download"))
    with pytest.raises(CorpusUnavailableError, match="nothing is downloaded.*tatoeba-test-v2021-08-07.rus"):
        load_parallel_corpus("tatoeba/rus-eng", "train")


def test_online_download_uses_the_pinned_commit_and_checksum(tmp_path, monkeypatch):
    monkeypatch.delenv(corpora.DATA_ENV, raising=False)
    calls = []

    def fake_get_file(fname, origin, file_hash, hash_algorithm, cache_subdir):
        calls.append((fname, origin, file_hash, hash_algorithm, cache_subdir))
        path = tmp_path / fname
        path.write_text("не тот файл\n", encoding="utf-8")
        return str(path)

    monkeypatch.setattr(keras.utils, "get_file", fake_get_file)
    with pytest.raises(ChecksumError):  # the fake file is not the pinned one
        load_parallel_corpus("tatoeba/rus-eng", "train")
    fname, origin, file_hash, algorithm, subdir = calls[0]
    assert origin == (
        "https://raw.githubusercontent.com/Helsinki-NLP/OPUS-MT-testsets/ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180"
        "/datasets/helsinki_nlp/tatoeba/testsets/eng-rus/tatoeba-test-v2021-08-07.rus"
    )
    assert (fname, algorithm) == ("tatoeba-test-v2021-08-07.rus", "sha256")
    assert file_hash == "643d0d8beedac2add8b8a6523bacdbbb349e438e0139eb5ef9b4cc0f63660cd5"


def test_a_failed_download_says_what_to_do(monkeypatch):
    monkeypatch.delenv(corpora.DATA_ENV, raising=False)

    def offline(*args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(keras.utils, "get_file", offline)
    with pytest.raises(CorpusUnavailableError, match="Could not download .* set TRANSFORMER_BOOK_DATA"):
        load_parallel_corpus("tatoeba/rus-eng", "train")


@requires_shared_data
@pytest.mark.parametrize("split, count", [("test", 1_803), ("validation", 1_193)])
def test_tfds_ted_corpus_loads_from_a_local_data_dir(split, count, monkeypatch):
    monkeypatch.delenv(corpora.DATA_ENV, raising=False)
    tfds_dir = SHARED_DATA / "ted_hrlr_translate_pt_to_en" / "tfds"
    pairs = load_parallel_corpus("ted_hrlr/pt_to_en", split, data_dir=tfds_dir, download=False)
    assert len(pairs) == count
    if split == "validation":  # the pair the TensorFlow tutorial prints first
        assert pairs[0] == ("tinham comido peixe com batatas fritas ?", "did they eat fish and chips ?")


@requires_shared_data
def test_tfds_ted_corpus_is_found_through_the_environment_variable():
    assert len(load_parallel_corpus("ted_hrlr/pt_to_en", "test")) == 1_803


def test_tfds_unreachable_host_fails_fast_with_alternatives(tmp_path, monkeypatch):
    import tensorflow_datasets as tfds

    monkeypatch.delenv(corpora.DATA_ENV, raising=False)

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(downloads.urllib.request, "urlopen", no_network)
    monkeypatch.setattr(tfds, "load", lambda *a, **k: pytest.fail("must not start a download that retries"))
    with pytest.raises(CorpusUnavailableError) as error:
        load_parallel_corpus("ted_hrlr/ru_to_en", "train", data_dir=tmp_path)
    message = str(error.value)
    assert "phontron.com" in message and "Temporary failure in name resolution" in message
    assert "TRANSFORMER_BOOK_DATA" in message and "tatoeba/rus-eng" in message


def test_tfds_without_download_and_without_data_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(corpora.DATA_ENV, raising=False)
    with pytest.raises(CorpusUnavailableError, match="not prepared in .* and download=False"):
        load_parallel_corpus("ted_hrlr/ru_to_en", "test", data_dir=tmp_path, download=False)


@pytest.mark.parametrize(
    "name, split, message",
    [
        ("tatoeba/deu-eng", "train", "Unknown corpus 'tatoeba/deu-eng'"),
        ("ted_hrlr/xx_to_en", "train", "the ted_hrlr pairs are"),
        ("wmt14", "train", "Unknown corpus 'wmt14'; choose one of"),
        ("synthetic", "dev", r"Unknown split 'dev'; choose one of \('train', 'validation', 'test'\)"),
    ],
)
def test_unknown_names_list_the_valid_ones(name, split, message):
    with pytest.raises(ValueError, match=message):
        load_parallel_corpus(name, split)


@pytest.mark.parametrize(
    "number, russian, english",
    [
        (0, "ноль", "zero"),
        (11, "одиннадцать", "eleven"),
        (21, "двадцать один", "twenty-one"),
        (300, "триста", "three hundred"),
        (1001, "одна тысяча один", "one thousand one"),
        (2024, "две тысячи двадцать четыре", "two thousand twenty-four"),
        (4110, "четыре тысячи сто десять", "four thousand one hundred ten"),
        (5000, "пять тысяч", "five thousand"),
        (9999, "девять тысяч девятьсот девяносто девять", "nine thousand nine hundred ninety-nine"),
    ],
)
def test_synthetic_corpus_spells_numbers_correctly(number, russian, english):
    assert synthetic.synthetic_pairs()[number] == (russian, english)


def test_synthetic_corpus_splits_are_deterministic_and_complete():
    splits = [load_parallel_corpus("synthetic", split) for split in ("train", "validation", "test")]
    assert sum(map(len, splits)) == 10_000
    assert load_parallel_corpus("synthetic", "test") == splits[2]
    dataset = load_parallel_corpus("synthetic", "test", as_dataset=True)
    assert [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()] == splits[2]


def test_the_small_synthetic_corpus_is_every_seventh_number_and_its_splits_are_the_big_ones():
    small = {split: load_parallel_corpus("synthetic/small", split) for split in ("train", "validation", "test")}
    numbers = {synthetic.russian_number(n): n for n in range(10_000)}
    everything = [numbers[source] for pairs in small.values() for source, _ in pairs]
    assert sorted(everything) == list(range(0, 10_000, 7))  # 1,429 pairs, each number once
    assert {n % 10 for n in everything} == set(range(10))  # every last digit occurs
    for split, pairs in small.items():  # a number keeps the split it has in the whole corpus
        assert set(pairs) <= set(load_parallel_corpus("synthetic", split)), split
    assert len(small["validation"]) >= 40 and len(small["test"]) >= 40


# --- Batches -------------------------------------------------------------------------------------


def all_batches(dataset):
    return [(s, t_in, t_out) for (s, t_in), t_out in dataset.as_numpy_iterator()]


@pytest.mark.parametrize("options", [dict(batch_size=16), dict(batch_tokens=256), dict(batch_size=16, bucketing=False)])
def test_batches_respect_max_length_and_shift_the_target_by_one(options, synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "validation")
    dataset = make_batches(pairs, synthetic_tokenizers, max_length=12, verbose=False, **options)
    batches = all_batches(dataset)
    assert len(batches) == dataset.cardinality()  # the count Keras's progress bar shows
    for source, target_in, target_out in batches:
        assert source.dtype == target_in.dtype == np.int32
        assert source.shape[1] <= 12 and target_in.shape[1] <= 11 and target_out.shape == target_in.shape
        np.testing.assert_array_equal(source[:, 0], START_ID)
        np.testing.assert_array_equal(target_in[:, 0], START_ID)
        np.testing.assert_array_equal(target_in[:, 1:], target_out[:, :-1])  # shifted by one
        for row in (source, target_out):  # END closes every sequence, then only padding follows
            lengths = (row != PAD_ID).sum(axis=1)
            np.testing.assert_array_equal(row[np.arange(len(row)), lengths - 1], END_ID)
            assert ((row != PAD_ID).cumsum(axis=1) == np.minimum(np.arange(1, row.shape[1] + 1), lengths[:, None])).all()


def test_every_kept_pair_appears_once_and_the_dropped_ones_are_reported(synthetic_tokenizers, capsys):
    pairs = load_parallel_corpus("synthetic", "validation")
    source_tokenizer, target_tokenizer = synthetic_tokenizers
    lengths = [(len(source_tokenizer.encode(s)) + 2, len(target_tokenizer.encode(t)) + 2) for s, t in pairs]
    max_length = max(max(pair) for pair in lengths) - 1
    expected_kept = sum(max(ls, lt) <= max_length for ls, lt in lengths)
    assert 0 < expected_kept < len(pairs)  # some pairs are too long

    dataset = make_batches(pairs, synthetic_tokenizers, batch_size=8, max_length=max_length)
    report = capsys.readouterr().out
    assert f"kept {expected_kept:,} of {len(pairs):,} pairs" in report
    assert f"dropped {len(pairs) - expected_kept:,} longer than max_length={max_length}" in report
    decoded = sorted(t for _, _, t_out in all_batches(dataset) for t in target_tokenizer.decode(t_out.tolist()))
    expected = sorted(t for (s, t), (ls, lt) in zip(pairs, lengths) if max(ls, lt) <= max_length)
    assert decoded == expected


def test_shuffling_is_seeded_and_changes_each_epoch(synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "validation")

    def first_batches(seed):
        dataset = make_batches(pairs, synthetic_tokenizers, batch_size=8, seed=seed, verbose=False)
        return [next(iter(dataset))[1] for _ in range(2)]  # first batch of two epochs

    (epoch1, epoch2), (again1, _) = first_batches(3), first_batches(3)
    np.testing.assert_array_equal(epoch1, again1)
    assert not np.array_equal(epoch1, epoch2)


def test_batch_arguments_are_checked(synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "test")
    with pytest.raises(ValueError, match="exactly one of batch_size"):
        make_batches(pairs, synthetic_tokenizers)
    with pytest.raises(ValueError, match="exactly one of batch_size"):
        make_batches(pairs, synthetic_tokenizers, batch_size=8, batch_tokens=100)
    with pytest.raises(ValueError, match="No pair left"):
        make_batches([("тысяча " * 20, "thousand " * 20)], synthetic_tokenizers, batch_size=8, max_length=5)
    with pytest.raises(ValueError, match="max_length=2 leaves no room"):
        make_batches(pairs, synthetic_tokenizers, batch_size=8, max_length=2)


def test_batches_feed_model_fit(synthetic_tokenizers):
    from transformer_lib import Transformer

    source_tokenizer, target_tokenizer = synthetic_tokenizers
    dataset = make_batches(load_parallel_corpus("synthetic", "test"), synthetic_tokenizers, batch_size=32, verbose=False)
    model = Transformer(1, 16, 2, 32, source_tokenizer.vocab_size, target_tokenizer.vocab_size)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)  # the dataset shuffles itself
    assert np.isfinite(history.history["loss"][0])


def test_padding_fraction_counts_pad_tokens():
    batch = ((tf.constant([[1, 5, 2, 0]]), tf.constant([[1, 6, 0]])), tf.constant([[6, 2, 0]]))
    assert padding_fraction(tf.data.Dataset.from_tensors(batch)) == pytest.approx(2 / 7)


@requires_shared_data
def test_bucketing_keeps_padding_under_ten_percent_on_tatoeba():
    result = measure("tatoeba/rus-eng")  # what `python -m benchmarks.padding` prints
    print(f"padding on Tatoeba rus-eng: bucketing {result['bucketing']:.1%}, padded_batch {result['padded_batch']:.1%}")
    assert result["bucketing"] <= 0.10
    assert result["bucketing"] < result["padded_batch"]


# --- Shuffled bucketed batches (the default recipe's batching, #29) ---------------------------------


@pytest.mark.parametrize("options", [dict(batch_tokens=256), dict(batch_size=16), dict(batch_tokens=256, bucket_growth=1.3)])
def test_shuffled_batches_hold_every_kept_pair_once_in_each_epoch(options, synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "validation")
    _, target_tokenizer = synthetic_tokenizers
    dataset = make_batches(pairs, synthetic_tokenizers, max_length=24, shuffle_batches=True, verbose=False, **options)
    expected = sorted(t for s, t in pairs if len(target_tokenizer.encode(t)) + 2 <= 24)
    for _ in range(2):  # two epochs: each one whole, nothing lost or repeated
        batches = all_batches(dataset)
        assert len(batches) == dataset.cardinality()
        decoded = sorted(t for _, _, t_out in batches for t in target_tokenizer.decode(t_out.tolist()))
        assert decoded == expected


def test_token_batches_stay_within_their_budget_and_vary_in_sentences(synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "train")
    dataset = make_batches(pairs, synthetic_tokenizers, batch_tokens=256, max_length=24, shuffle_batches=True,
                           verbose=False)
    batches = all_batches(dataset)
    for source, target_in, _ in batches:
        assert len(source) * max(source.shape[1], target_in.shape[1] + 1) <= 256
    assert len({len(source) for source, _, _ in batches}) > 3  # short sentences, more of them


def test_shuffled_batches_are_the_same_batches_in_another_order_fixed_by_the_seed(synthetic_tokenizers):
    """Shuffling after bucketing changes only the order of the batches: the part-filled batches that
    bucketing flushes at the end of an epoch (in rising length) are spread through it."""
    pairs = load_parallel_corpus("synthetic", "train")

    def keys(seed, shuffled):
        dataset = make_batches(pairs, synthetic_tokenizers, batch_tokens=256, max_length=24, seed=seed,
                               shuffle_batches=shuffled, verbose=False)
        return [[tuple(map(int, s[0])) + (len(s),) for s, _, _ in all_batches(dataset)] for _ in range(2)]

    plain, shuffled, again, other = keys(3, False), keys(3, True), keys(3, True), keys(4, True)
    assert sorted(shuffled[0]) == sorted(plain[0]) and shuffled[0] != plain[0]
    assert shuffled == again  # the same seed, the same orders, epoch after epoch
    assert shuffled[0] != shuffled[1] and shuffled[0] != other[0]  # a new order each epoch; another seed, another
    tail = [key[-1] for key in plain[0][-5:]]
    lengths = [len(key) - 1 for key in plain[0][-5:]]  # the flushed remainders: rising lengths
    assert lengths == sorted(lengths) and min(tail) < 20


def test_bucket_growth_below_one_is_refused(synthetic_tokenizers):
    with pytest.raises(ValueError, match="bucket_growth must be >= 1"):
        make_batches(load_parallel_corpus("synthetic", "test"), synthetic_tokenizers, batch_tokens=256,
                     bucket_growth=0.9, verbose=False)


# --- Subword sampling (BPE-dropout) --------------------------------------------------------------


def _decoded_pairs(batches, tokenizers):
    source_tokenizer, target_tokenizer = tokenizers
    return sorted((s, t) for source, _, target_out in batches
                  for s, t in zip(source_tokenizer.decode(source.tolist()), target_tokenizer.decode(target_out.tolist())))


def test_sampled_segmentations_spell_the_same_pairs_in_more_pieces_and_change_each_epoch(synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "validation")
    options = dict(batch_tokens=256, max_length=40, verbose=False)
    fixed = make_batches(pairs, synthetic_tokenizers, **options)
    sampled = make_batches(pairs, synthetic_tokenizers, sampling_alpha=0.3, **options)
    assert sampled.cardinality() == fixed.cardinality()  # bucketed by the fixed length: the same batches
    fixed_batches = all_batches(fixed)
    segmented = []
    for _ in range(2):  # two epochs: each one whole, the same pairs as without sampling
        batches = all_batches(sampled)
        assert len(batches) == sampled.cardinality()
        assert _decoded_pairs(batches, synthetic_tokenizers) == _decoded_pairs(fixed_batches, synthetic_tokenizers)
        segmented.append({tuple(row[row > 0]) for _, _, target_out in batches for row in target_out})
    real = lambda batches: sum(int((s > 0).sum() + (t > 0).sum()) for s, _, t in batches)
    assert real(all_batches(sampled)) > 1.1 * real(fixed_batches)  # dropped merges: more, smaller pieces
    assert len(segmented[0] - segmented[1]) > len(segmented[0]) // 4  # a new draw in the next epoch


def test_a_sampled_segmentation_longer_than_max_length_is_replaced_by_the_fixed_one(synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "validation")
    source_tokenizer, target_tokenizer = synthetic_tokenizers
    fixed = [(source_tokenizer.encode(s, add_start_end=True), target_tokenizer.encode(t, add_start_end=True))
             for s, t in pairs]
    max_length = max(len(ids) for pair in fixed for ids in pair)  # every pair kept, the longest just fits
    longest = {tuple(ids[1:]) for pair in fixed for ids in pair if len(ids) == max_length}  # as target_out holds it
    dataset = make_batches(pairs, synthetic_tokenizers, batch_size=4, max_length=max_length, sampling_alpha=0.9,
                           verbose=False)
    batches = all_batches(dataset)
    targets = [tuple(row[row > 0]) for _, _, target_out in batches for row in target_out]
    assert len(targets) == len(pairs) and max(source.shape[1] for source, _, _ in batches) <= max_length
    assert max(map(len, targets)) <= max_length - 1
    assert longest and longest <= set(targets)  # almost every merge dropped: too long, so the fixed segmentation


@pytest.mark.parametrize("alpha", [0, 1.0, -0.1, True, "0.1"])
def test_a_sampling_alpha_that_is_not_a_probability_is_refused(alpha, synthetic_tokenizers):
    with pytest.raises(ValueError, match=r"sampling_alpha must be a probability in \(0, 1\).*None"):
        make_batches(load_parallel_corpus("synthetic", "test"), synthetic_tokenizers, batch_tokens=256,
                     sampling_alpha=alpha, verbose=False)


def test_a_run_on_sampled_segmentations_is_checkpointed_and_resumed(tmp_path, synthetic_tokenizers):
    import transformer_lib as tl

    dataset = make_batches(load_parallel_corpus("synthetic", "test"), synthetic_tokenizers, batch_tokens=512,
                           max_length=24, sampling_alpha=0.1, verbose=False)
    sizes = (1, 16, 2, 32, synthetic_tokenizers[0].vocab_size, synthetic_tokenizers[1].vocab_size)
    tl.train(tl.Transformer(*sizes), dataset, epochs=1, checkpoint_dir=tmp_path, verbose=0)
    history = tl.train(tl.Transformer(*sizes), dataset, epochs=2, checkpoint_dir=tmp_path, verbose=0)
    assert history["epoch"] == [1, 2]  # the data iterator (sampling draws included) was saved and restored


def test_sampled_batches_are_fixed_by_the_seed_and_draw_from_many_segmentations(synthetic_tokenizers):
    pairs = load_parallel_corpus("synthetic", "validation")

    def epochs(seed, count):
        dataset = make_batches(pairs, synthetic_tokenizers, batch_tokens=256, max_length=40, sampling_alpha=0.3,
                               seed=seed, verbose=False)
        return [[tuple(row[row > 0]) for source, _, _ in all_batches(dataset) for row in source] for _ in range(count)]

    first, again, other = epochs(3, 6), epochs(3, 1), epochs(4, 1)
    assert first[0] == again[0] and first[0] != other[0]  # the same seed, the same draws and order
    source_tokenizer = synthetic_tokenizers[0]
    by_text = {}
    for rows in first:
        for row in rows:
            by_text.setdefault(source_tokenizer.decode(list(row)), set()).add(row)
    longest = max(by_text, key=len)
    assert len(by_text[longest]) >= 4  # the longest sentence came in at least 4 segmentations in 6 epochs
