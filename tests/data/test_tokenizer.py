import pytest
from conftest import requires_shared_data

from transformer_lib.data.corpora import load_parallel_corpus
from transformer_lib.data.synthetic import synthetic_pairs
from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID, UNKNOWN_ID, SubwordTokenizer

SENTENCES = [
    "Я люблю читать книги.",
    "Где ты был вчера вечером?",
    "Он купил iPhone за 999 долларов, а потом — MacBook!",
    "В 1961 году Гагарин полетел в космос.",
    "Tom doesn't know what Mary's doing (yet); ask her.",
    "It's 3:45 p.m., and the price is $12.50 — or €11.",
    "Ёлка, щёки, объём: «кавычки» и „лапки“.",
    "日本語 and emoji 🙂 are not in the training data.",
]


@pytest.fixture(scope="module", params=["synthetic", pytest.param("tatoeba", marks=requires_shared_data)])
def tokenizer(request):
    if request.param == "synthetic":
        sentences = [s for pair in synthetic_pairs() for s in pair]
        return SubwordTokenizer.train(sentences, vocab_size=400)
    pairs = load_parallel_corpus("tatoeba/rus-eng", "train")
    return SubwordTokenizer.train([s for pair in pairs for s in pair], vocab_size=8000)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_sentences_survive_a_round_trip_exactly(tokenizer, sentence):
    ids = tokenizer.encode(sentence)
    assert all(isinstance(i, int) and 0 <= i < tokenizer.vocab_size for i in ids)
    assert UNKNOWN_ID not in ids  # byte fallback spells unseen characters instead
    assert tokenizer.decode(ids) == sentence


@pytest.mark.parametrize("blank", ["", " ", "     ", "\t \n"])
def test_empty_and_blank_strings_encode_to_nothing(tokenizer, blank):
    assert tokenizer.encode(blank) == []
    assert tokenizer.encode(blank, add_start_end=True) == [START_ID, END_ID]
    assert tokenizer.decode([]) == "" and tokenizer.decode([START_ID, END_ID]) == ""


def test_normalization_is_nfkc_with_whitespace_collapsed(tokenizer):
    text = "  ＡＢＣ１２３   и   ещё  "  # full-width letters and digits, extra spaces
    assert tokenizer.normalize(text) == "ABC123 и ещё"
    assert tokenizer.decode(tokenizer.encode(text)) == "ABC123 и ещё"


def test_start_end_and_padding_ids_are_reserved_and_skipped_when_decoding(tokenizer):
    assert (PAD_ID, START_ID, END_ID, UNKNOWN_ID) == (0, 1, 2, 3)
    ids = tokenizer.encode("Привет, мир!", add_start_end=True)
    assert ids[0] == START_ID and ids[-1] == END_ID and PAD_ID not in ids
    assert tokenizer.decode(ids + [PAD_ID] * 3) == "Привет, мир!"


def test_batches_encode_and_decode_like_single_strings(tokenizer):
    batch = tokenizer.encode(SENTENCES)
    assert batch == [tokenizer.encode(s) for s in SENTENCES]
    assert tokenizer.decode(batch) == SENTENCES


def test_lowercase_option_folds_case():
    tokenizer = SubwordTokenizer.train(["привет мир", "hello world"] * 50, vocab_size=300, lowercase=True)
    assert tokenizer.decode(tokenizer.encode("Привет, МИР! Hello")) == "привет, мир! hello"


def test_saved_tokenizer_loads_with_identical_ids(tokenizer, tmp_path):
    path = tokenizer.save(tmp_path / "nested" / "source.model")
    loaded = SubwordTokenizer.load(path)
    assert loaded.vocab_size == tokenizer.vocab_size
    assert loaded.encode(SENTENCES) == tokenizer.encode(SENTENCES)


def test_too_large_vocabulary_is_clamped_with_a_warning():
    with pytest.warns(UserWarning, match=r"vocab_size=8000 is more than 60 sentences support; using vocab_size=\d+"):
        tokenizer = SubwordTokenizer.train(["один два три", "four five six"] * 30, vocab_size=8000)
    assert 260 < tokenizer.vocab_size < 8000  # 4 reserved ids and 256 bytes, plus the pieces it found
    assert tokenizer.decode(tokenizer.encode("один two")) == "один two"


def test_bad_input_gives_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="empty corpus"):
        SubwordTokenizer.train(["", "   "])
    with pytest.raises(ValueError, match=r"vocab_size=100 cannot hold .*; use vocab_size >= \d+"):
        SubwordTokenizer.train(["абв где ёжз"] * 10, vocab_size=100)
    with pytest.raises(FileNotFoundError, match="No tokenizer model at"):
        SubwordTokenizer.load(tmp_path / "missing.model")
    tokenizer = SubwordTokenizer.train(["a b c"] * 10, vocab_size=264)
    with pytest.raises(TypeError, match="encode expects str or a list of str, got bytes"):
        tokenizer.encode([b"bytes"])


def test_a_sampled_segmentation_spells_the_same_text_in_more_pieces_and_varies(tokenizer):
    sentence = "Где ты был вчера вечером? Tom doesn't know what Mary's doing."
    fixed = tokenizer.encode(sentence)
    draws = [tokenizer.encode(sentence, sampling_alpha=0.5) for _ in range(20)]
    assert all(tokenizer.decode(ids) == sentence for ids in draws)  # the same text, whatever the draw
    # merges skipped at random: several segmentations. The synthetic tokenizer knows few merges in this
    # sentence (6 segmentations, the likeliest 25% of draws), so "more than 2 of 20" fails about twice in 10^6
    assert len({tuple(ids) for ids in draws}) > 2
    assert sum(map(len, draws)) / len(draws) > len(fixed)  # and smaller pieces on average
    batch = tokenizer.encode([sentence, "Я люблю читать книги."], add_start_end=True, sampling_alpha=0.1)
    assert [ids[0] for ids in batch] == [START_ID] * 2 and [ids[-1] for ids in batch] == [END_ID] * 2
    seeded = [tokenizer.encode([sentence] * 3, sampling_alpha=0.5, seed=seed) for seed in (1, 1, 2)]
    assert seeded[0] == seeded[1] != seeded[2]  # a seed fixes the draw
    unseeded = {tuple(tokenizer.encode(sentence, sampling_alpha=0.5)) for _ in range(10)}
    assert len(unseeded) > 1  # unseeded again after a seed (ten equal draws: about 2 in 10^6 here)
    with pytest.raises(ValueError, match=r"sampling_alpha must be a probability in \(0, 1\)"):
        tokenizer.encode(sentence, sampling_alpha=1.0)
