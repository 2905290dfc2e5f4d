"""The benchmark scripts at toy size, so that they cannot rot (their real runs are not tests)."""

from benchmarks.decode_speed import main as decode_speed
from benchmarks.padding import main as padding


def test_padding_benchmark_runs_and_prints_both_numbers(capsys):
    result = padding(["--corpus", "synthetic", "--vocab-size", "400", "--batch-tokens", "512"])
    printed = capsys.readouterr().out
    assert f"{result['padded_batch']:6.1%}" in printed and f"{result['bucketing']:6.1%}" in printed
    assert 0 <= result["bucketing"] < result["padded_batch"] < 1


def test_decode_speed_benchmark_runs_at_toy_size(capsys):
    rows = decode_speed(["--preset", "tiny", "--batch", "2", "--lengths", "4", "8", "--vocab-size", "50"])
    assert [row["length"] for row in rows] == [4, 8] and all(row["speedup"] > 0 for row in rows)
    assert "speed-up" in capsys.readouterr().out
