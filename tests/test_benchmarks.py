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


def test_the_whole_benchmark_harness_runs_at_toy_size_and_stores_every_ratio(tmp_path, capsys):
    import json

    from benchmarks.__main__ import main as bench

    out = tmp_path / "results.json"
    results = bench(["--toy", "--out", str(out)])
    stored = json.loads(out.read_text())
    assert stored["table"] in capsys.readouterr().out  # the printed table is the stored one
    assert stored["ratios"] == results["ratios"]
    d = stored["throughput"][0]["sizes"]["d_model"]
    expected = {f"training_d{d}_end_to_end", f"training_d{d}_model_only_no_xla", f"training_d{d}_model_only_xla",
                "padding_fraction_padded_batch_over_bucketing", "beam_cost", "fraction_of_matmul_peak"}
    assert expected <= set(stored["ratios"]) and any(k.startswith("kv_cache_speedup") for k in stored["ratios"])
    assert all(value > 0 for value in stored["ratios"].values())
    assert stored["machine"] and stored["date"] and stored["versions"]["keras_hub"]
    assert stored["memory"]["peak_rss_bytes"] >= stored["memory"]["rss_after_build_bytes"] > 0


def test_the_flop_count_matches_the_models_own_matrix_weights():
    """Without the attention terms, a forward pass costs 2 FLOPs per matrix weight per position:
    checked against the kernels the model really holds (biases, norms and embeddings excluded)."""
    import transformer_lib as tl
    from benchmarks.limit import training_step_flops

    model = tl.Transformer(2, 32, 4, 64, 50, 40)
    tl.count_parameters(model)
    kernels = sum(int(w.shape[0]) * int(w.shape[1]) for w in model.trainable_weights if w.name == "kernel")
    B, L, d = 3, 5, 32
    flops = training_step_flops(2, d, 64, 40, B, L, L)
    attention = 2 * (2 * 2 * B * L * L * d) + 2 * (2 * 2 * B * L * L * d + 2 * 2 * B * L * L * d)  # 2 enc + 2 dec layers
    assert flops["forward"] - attention == 2 * B * L * kernels
    assert flops["step"] == 3 * flops["forward"]


def test_the_recipe_study_runs_at_toy_size_and_records_each_row(tmp_path, capsys):
    import json

    from benchmarks.recipe_study import RUNS, main as recipe_study

    out = tmp_path / "study.json"
    result = recipe_study(["--toy", "--epochs", "1", "--only", "center,dropout 0.1", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert [row["name"] for row in result["rows"]] == ["center", "dropout 0.1"]
    assert result["missing"] == [name for name in RUNS if name not in ("center", "dropout 0.1")]
    rates = {row["name"]: row["recipe"]["dropout_rate"] for row in result["rows"]}
    assert rates == {"center": 0.3, "dropout 0.1": 0.1}  # each row changes what it says
    assert all(0 <= row["val_bleu"] <= 100 and row["minutes"] > 0 and len(row["val_loss"]) == 1 for row in result["rows"])
    assert "center: val BLEU" in capsys.readouterr().out
