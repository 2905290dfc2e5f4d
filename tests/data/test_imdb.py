"""IMDB for the side chapter (`transformer_lib.data.imdb`): the reviews cleaned, split by movie and checked,
truncated, batched, and cut into windows."""

import gzip
import io
import tarfile

import pytest
from conftest import SHARED_DATA, requires_shared_data, synthetic_reviews

import transformer_lib as tl
from transformer_lib.data import imdb


def test_review_html_line_breaks_become_newlines():
    text = "Great film.<br /><br />Loved it. <br/>Really \x08\x08"
    assert imdb.clean_review(text) == "Great film.\n\nLoved it.\nReally"  # a paragraph stays a paragraph


def test_review_batches_truncate_long_reviews_and_keep_every_review():
    tokenizer = imdb.train_review_tokenizer(synthetic_reviews(300, seed=0), vocab_size=320)
    reviews = synthetic_reviews(50, seed=3)
    batches = imdb.make_review_batches(reviews, tokenizer, max_length=16, batch_tokens=128)
    seen = [(ids, labels) for ids, labels in batches.as_numpy_iterator()]
    assert len(seen) == int(batches.cardinality())
    assert sum(len(labels) for _, labels in seen) == 50
    assert sum(int(labels.sum()) for _, labels in seen) == sum(label for _, label in reviews)
    for ids, _ in seen:
        assert ids.shape[1] <= 16 and (ids[:, 0] == tl.START_ID).all()
        assert ((ids == tl.END_ID).sum(axis=1) == 1).all()  # truncated, but each still ends with END
    fixed = imdb.make_review_batches(reviews, tokenizer, max_length=16, reviews_per_batch=16, truncate="head+tail")
    assert [len(labels) for _, labels in fixed.as_numpy_iterator()] == [16, 16, 16, 2]


@requires_shared_data
def test_imdb_has_12500_reviews_per_official_split_and_label():
    counts = {}
    for split in ("train", "validation", "test"):
        for _, label in imdb.load_imdb(split):
            counts[split, label] = counts.get((split, label), 0) + 1
    for label in (0, 1):
        assert counts["train", label] + counts["validation", label] == 12_500
        assert counts["test", label] == 12_500
        assert 0.08 < counts["validation", label] / 12_500 < 0.12


@requires_shared_data
def test_no_movie_has_reviews_in_both_training_and_validation():
    movies = imdb.read_movies(SHARED_DATA / imdb.LOCAL_ARCHIVE[0])
    reviews = imdb.read_archive(SHARED_DATA / imdb.LOCAL_ARCHIVE[0])
    movie_of_text = {}  # a review's text -> its movie; the few texts posted for two movies are left out
    for part, review_id, label, text in reviews:
        if part == "train":
            movie_of_text.setdefault((imdb.clean_review(text), label), set()).add(movies[label, review_id])
    movies_of = {split: {next(iter(movie_of_text[r])) for r in imdb.load_imdb(split) if len(movie_of_text[r]) == 1}
                 for split in ("train", "validation")}
    assert movies_of["train"].isdisjoint(movies_of["validation"])
    assert 0.05 < len(movies_of["validation"]) / len(set(movies.values())) < 0.15
    # A review-level split (the old one) shares nearly every movie: a movie has up to 30 reviews.
    by_review = {split: {next(iter(m)) for r, m in movie_of_text.items() if len(m) == 1
                         and (imdb.hash_bucket(r[0]) < imdb.VALIDATION_PERCENT) == (split == "validation")}
                 for split in ("train", "validation")}
    assert len(by_review["train"] & by_review["validation"]) > 0.5 * len(by_review["validation"])


def test_a_review_url_names_its_movie():
    assert imdb.movie_of("http://www.imdb.com/title/tt0453418/usercomments\n") == "tt0453418"
    assert imdb.movie_of("http://example.org/other\n") == "http://example.org/other"


def test_an_archive_without_url_lists_is_refused_with_what_is_missing(tmp_path):
    path = tmp_path / "no-urls.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = b"http://www.imdb.com/title/tt0000001/usercomments\n"
        info = tarfile.TarInfo("aclImdb/train/urls_pos.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buffer.getvalue()))
    with pytest.raises(tl.CorpusUnavailableError, match="lacks the URL lists.*found 1 lines"):
        imdb.read_movies(path)


def test_head_and_tail_truncation_keeps_both_ends():
    ids = list(range(10))
    assert imdb.truncated(ids, 6, "head") == [0, 1, 2, 3, 4, 5]
    assert imdb.truncated(ids, 6, "head+tail") == [0, 1, 2, 7, 8, 9]
    assert imdb.truncated(ids, 5, "head+tail") == [0, 1, 2, 8, 9]  # the odd one goes to the head
    assert imdb.truncated(ids, 1, "head+tail") == [0]
    assert imdb.truncated(ids[:4], 6, "head+tail") == [0, 1, 2, 3]  # short reviews stay whole
    tokenizer = imdb.train_review_tokenizer(synthetic_reviews(300, seed=0), vocab_size=320)
    review = [("great " * 40 + "awful " * 40, 1)]
    encoded = tokenizer.encode(review[0][0])
    ((ids, _),) = imdb.make_review_batches(review, tokenizer, max_length=10, truncate="head+tail").as_numpy_iterator()
    assert ids[0].tolist() == [tl.START_ID, *encoded[:4], *encoded[-4:], tl.END_ID]
    with pytest.raises(ValueError, match="truncate='tail' is not one of"):
        imdb.make_review_batches(review, tokenizer, truncate="tail")


@requires_shared_data
def test_the_imdb_sample_is_a_subset_with_the_same_splits():
    sample = imdb.load_imdb("test", sample=True)
    assert len(sample) == 1000 and sum(label for _, label in sample) == 500
    assert set(sample) <= set(imdb.load_imdb("test"))
    assert len(imdb.load_imdb("train", sample=True)) + len(imdb.load_imdb("validation", sample=True)) == 1000


@requires_shared_data
def test_a_truncated_imdb_tarball_gives_a_clear_error(tmp_path, monkeypatch):
    original = (SHARED_DATA / imdb.LOCAL_ARCHIVE[0]).read_bytes()
    truncated = tmp_path / "aclImdb_truncated.tar.gz"
    truncated.write_bytes(original[: len(original) // 3])
    with pytest.raises(tl.CorpusUnavailableError, match="truncated or damaged.*download"):
        imdb.read_archive(truncated)
    # Through load_imdb the pinned checksum catches it first, with its own clear message.
    (tmp_path / "aclImdb").mkdir()
    (tmp_path / imdb.LOCAL_ARCHIVE[0]).write_bytes(original[: len(original) // 3])
    monkeypatch.setenv("TRANSFORMER_BOOK_DATA", str(tmp_path))
    with pytest.raises(tl.ChecksumError, match="damaged or another version"):
        imdb.load_imdb("train")


def test_an_archive_without_all_labeled_reviews_is_refused(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("aclImdb/train/pos/0_9.txt", "aclImdb/test/neg/0_2.txt"):
            data = b"A review."
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    path = tmp_path / "small.tar.gz"
    path.write_bytes(gzip.compress(buffer.getvalue()))
    with pytest.raises(tl.CorpusUnavailableError, match="4 x 12,500 labeled reviews"):
        imdb.read_archive(path)


def test_review_windows_hold_every_piece_of_every_review_once_in_order():
    from transformer_lib.data.tokenizer import END_ID, START_ID

    ids = [[], list(range(10, 11)), list(range(20, 25)), list(range(30, 36)), list(range(40, 53))]
    windows = tl.data.imdb.review_windows(ids, window=7)  # 5 pieces between START and END
    assert [len(w) - 2 for w in windows] == [1, 5, 5, 1, 5, 5, 3]
    assert all(w[0] == START_ID and w[-1] == END_ID for w in windows)
    assert [piece for w in windows for piece in w[1:-1]] == [piece for row in ids for piece in row]
    with pytest.raises(ValueError, match="window=2"):
        tl.data.imdb.review_windows(ids, window=2)


def test_random_review_windows_show_every_review_once_an_epoch_at_a_new_place():
    ids = [list(range(100 * r + 3, 100 * r + 3 + n)) for r, n in enumerate([5, 40, 12, 60, 8, 0, 33])]  # one empty
    batches = tl.data.imdb.random_review_windows(ids, window=12, windows_per_batch=4, seed=1)
    epochs = [[row[row > 0].tolist() for x, y in batches.as_numpy_iterator() for row in x] for _ in range(3)]
    assert int(batches.cardinality()) == 2
    for windows in epochs:
        assert len(windows) == 6 and all(w[0] == tl.START_ID and w[-1] == tl.END_ID for w in windows)
        pieces = sorted(w[1:-1] for w in windows)
        for review in (r for r in ids if r):
            stretch = next(p for p in pieces if p[0] // 100 == review[0] // 100)  # each review once
            start = review.index(stretch[0])
            assert stretch == review[start:start + 10] and len(stretch) == min(10, len(review))  # consecutive
    starts = {tuple(w[1] for w in sorted(windows)) for windows in epochs}
    assert len(starts) > 1  # long reviews give other stretches in other epochs
    again = [row[row > 0].tolist() for x, _ in tl.data.imdb.random_review_windows(ids, 12, 4, seed=1).as_numpy_iterator()
             for row in x]
    assert again == epochs[0]  # the seed fixes the draws
    assert all((y == 0).all() for _, y in batches.as_numpy_iterator())
    with pytest.raises(ValueError, match="window=2"):
        tl.data.imdb.random_review_windows(ids, window=2, windows_per_batch=4)
    with pytest.raises(ValueError, match="positive number of windows"):
        tl.data.imdb.random_review_windows(ids, window=12, windows_per_batch=0)
    with pytest.raises(ValueError, match="at least one review"):
        tl.data.imdb.random_review_windows([[], []], window=12, windows_per_batch=4)


def test_batch_rows_keeps_every_row_with_its_label_and_refuses_what_does_not_fit():
    rows = [[1, 5, 2], [1, 6, 7, 8, 2], [1, 9, 2], [1] + [4] * 10 + [2]]
    labels = [0, 1, 1, 0]
    seen = []
    for ids, batch_labels in tl.data.imdb.batch_rows(rows, labels, max_length=12, batch_tokens=16).as_numpy_iterator():
        for row, label in zip(ids, batch_labels):
            seen.append((row[row > 0].tolist(), int(label)))
    assert sorted(seen) == sorted(zip(rows, labels))
    with pytest.raises(ValueError, match="3 labels"):
        tl.data.imdb.batch_rows(rows, labels[:3], max_length=12)
    with pytest.raises(ValueError, match="longest has 12"):
        tl.data.imdb.batch_rows(rows, labels, max_length=8)


def test_batch_rows_can_hold_a_fixed_number_of_rows_in_a_new_random_mix_every_epoch():
    rows = [[1] + [4] * (n % 9 + 1) + [2] for n in range(50)]  # lengths 3 to 11, mixed
    labels = [n % 2 for n in range(50)]
    batches = tl.data.imdb.batch_rows(rows, labels, max_length=12, rows_per_batch=8, seed=3)
    epochs = [list(batches.as_numpy_iterator()) for _ in range(2)]
    for epoch in epochs:
        assert [len(y) for _, y in epoch] == [8] * 6 + [2] and len(epoch) == int(batches.cardinality())
        seen = [(row[row > 0].tolist(), int(label)) for ids, y in epoch for row, label in zip(ids, y)]
        assert sorted(seen) == sorted(zip(rows, labels))  # every row once, with its label
        for ids, _ in epoch:  # padded to the longest row of its own batch
            assert ids.shape[1] == max(int((row > 0).sum()) for row in ids)
    orders = [[tuple(row) for ids, _ in epoch for row in ids] for epoch in epochs]
    assert orders[0] != orders[1]  # drawn anew every epoch
    spread = [int((ids > 0).sum(axis=1).max() - (ids > 0).sum(axis=1).min()) for ids, _ in epochs[0][:-1]]
    assert max(spread) >= 5  # short and long rows together (bucketing would keep them apart)
    again = [tuple(row) for ids, _ in tl.data.imdb.batch_rows(rows, labels, 12, rows_per_batch=8, seed=3).as_numpy_iterator()
             for row in ids]
    assert again == orders[0]  # the seed fixes the draws
    unshuffled = tl.data.imdb.batch_rows(rows, labels, 12, rows_per_batch=8, shuffle=False)
    assert [row[row > 0].tolist() for ids, _ in unshuffled.as_numpy_iterator() for row in ids] == rows
    with pytest.raises(ValueError, match="give one"):
        tl.data.imdb.batch_rows(rows, labels, 12, batch_tokens=64, rows_per_batch=8)
    with pytest.raises(ValueError, match="positive number of rows"):
        tl.data.imdb.batch_rows(rows, labels, 12, rows_per_batch=0)


def test_balanced_draws_half_of_each_label_reproducibly_in_order():
    reviews = [(f"review {i}", int(i % 3 == 0)) for i in range(30)]  # 10 positive, 20 negative
    picked = tl.data.imdb.balanced(reviews, 8, seed=1)
    assert [label for _, label in picked].count(1) == 4 and len(picked) == 8
    assert picked == sorted(picked, key=reviews.index) and set(picked) <= set(reviews)
    assert picked == tl.data.imdb.balanced(reviews, 8, seed=1) != tl.data.imdb.balanced(reviews, 8, seed=2)
    assert tl.data.imdb.balanced(reviews, 30) == reviews
    with pytest.raises(ValueError, match="even count"):
        tl.data.imdb.balanced(reviews, 7)
    with pytest.raises(ValueError, match="needs 12 reviews of label 1; there are 10"):
        tl.data.imdb.balanced(reviews, 24)
