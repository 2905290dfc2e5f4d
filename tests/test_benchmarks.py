"""The benchmark scripts at toy size, so that they cannot rot (their real runs are not tests)."""

import json
from pathlib import Path

import pytest

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


def test_the_time_to_quality_row_says_how_much_sooner_or_gives_a_bound():
    from benchmarks.__main__ import ratios, time_to_quality_row

    def record(ours, theirs):
        return {"budget_minutes": 60.0, "target_bleu": 20.0, "date": "2026-11-23T18:00:00+00:00",
                "measured_separately": True,
                "runs": {"ours": {"minutes_to_target": ours}, "TF tutorial": {"minutes_to_target": theirs}}}

    name, ours, theirs, ratio = time_to_quality_row(record(40.0, 50.0))
    assert (ours, theirs, ratio) == ("40.0 min", "50.0 min", "1.25x sooner")
    assert time_to_quality_row(record(50.0, 40.0))[1:] == ("50.0 min", "40.0 min", "1.25x later")
    assert name == "minutes of training to validation BLEU 20 vs TF tutorial recipe, measured 2026-11-23"
    assert time_to_quality_row(record(40.0, None))[1:] == ("40.0 min", "not in 60 min", "> 1.5x sooner")
    assert time_to_quality_row(record(None, None))[1:] == ("not in 60 min", "not in 60 min", "")
    base = {"throughput": [], "padding": {"padded_batch": 0.6, "bucketing": 0.1},
            "decode": {"kv_cache": [{"length": 4, "speedup": 2.0, "speedup_xla": 3.0}],
                       "beam": {"beam_cost": 1.5, "beam_cost_xla": 4.0}}, "limit": {"fraction_of_peak": 0.5}}
    assert ratios({**base, "time_to_quality": record(40.0, None)})["time_to_quality_tutorial_over_ours"] == 1.5
    assert "time_to_quality_tutorial_over_ours" not in ratios({**base, "time_to_quality": record(None, 30.0)})


def test_stored_results_take_the_last_time_to_quality_record_and_nothing_else_changes(tmp_path, monkeypatch):
    import json

    from benchmarks import __main__ as bench
    from benchmarks import time_to_quality

    record = {"date": "2026-11-24T20:00:00+00:00", "budget_minutes": 40.0, "target_bleu": 20.0, "targets": [20.0, 25.0],
              "runs": {"ours": {"minutes_to_target": 10.0, "minutes_to": {"20": 10.0, "25": 16.0}},
                       "TF tutorial": {"minutes_to_target": 30.0, "minutes_to": {"20": 30.0, "25": None}}}}
    monkeypatch.setattr(time_to_quality, "DEFAULT_OUT", tmp_path / "quality.json")
    (tmp_path / "quality.json").write_text(json.dumps(record))
    results = {"throughput": [], "padding": {"padded_batch": 0.6, "bucketing": 0.1},
               "decode": {"kv_cache": [{"length": 4, "speedup": 2.0, "speedup_xla": 3.0, "cached_tokens_per_s": 1,
                                        "full_tokens_per_s": 1, "cached_xla_tokens_per_s": 1}],
                          "beam": {"beam_cost": 1.5, "beam_cost_xla": 4.0, "beam_size": 4, "max_length": 8,
                                   "beam_seconds_per_sentence": 0.1, "greedy_seconds_per_sentence": 0.05,
                                   "beam_seconds_per_sentence_xla": 0.1, "greedy_seconds_per_sentence_xla": 0.05}},
               "limit": {"fraction_of_peak": 0.5}, "ratios": {"beam_cost": 1.5, "time_to_quality_tutorial_over_ours": 0.7},
               "table": "old"}
    monkeypatch.setattr(bench, "format_table", lambda results: "table with " + bench.time_to_quality_row(
        results["time_to_quality"])[3])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    bench.main(["--quality-from-record", "--out", str(path)])
    updated = json.loads(path.read_text())
    assert updated["ratios"] == {"beam_cost": 1.5, "time_to_quality_tutorial_over_ours": 3.0,
                                 "time_to_quality_bleu_25_tutorial_over_ours": 2.5}  # 40-min budget / 16: a lower bound
    assert updated["table"] == "table with 3.00x sooner" and updated["time_to_quality"]["measured_separately"]
    assert {k: v for k, v in updated.items() if k not in ("ratios", "table", "time_to_quality")} == {
        k: v for k, v in results.items() if k not in ("ratios", "table")}


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


def test_the_training_clock_leaves_the_scoring_out_and_stops_at_the_target(monkeypatch):
    from benchmarks import time_to_quality as ttq

    now = [0.0]
    monkeypatch.setattr(ttq.time, "perf_counter", lambda: now[0])
    scores = iter([5.0, 12.0, 21.0])

    def bleu(model):
        now[0] += 100.0  # scoring takes 100 s, which the clock must not count
        return next(scores)

    clock = ttq.TrainingClock(bleu, targets=[20.0], budget_seconds=3600)
    now[0] += 60.0  # the first epoch trains for one minute
    assert clock(None) == 5.0
    now[0] += 120.0
    assert clock(None) == 12.0
    now[0] += 60.0
    with pytest.raises(ttq._Reached):
        clock(None)
    assert clock.reached == {20.0: 4.0}  # 1 + 2 + 1 minutes of training; 300 s of scoring left out
    assert [point["minutes"] for point in clock.curve] == [1.0, 3.0, 4.0]
    assert [point["bleu"] for point in clock.curve] == [5.0, 12.0, 21.0]


def test_the_training_clock_stops_at_the_budget_without_a_time_to_target(monkeypatch):
    from benchmarks import time_to_quality as ttq

    now = [0.0]
    monkeypatch.setattr(ttq.time, "perf_counter", lambda: now[0])
    clock = ttq.TrainingClock(lambda model: 1.0, targets=[20.0], budget_seconds=90)
    now[0] += 60.0
    assert clock(None) == 1.0
    now[0] += 60.0
    with pytest.raises(ttq._Reached):
        clock(None)
    assert clock.reached == {} and clock.curve[-1]["minutes"] == 2.0


def test_the_training_clock_goes_on_from_the_first_target_to_the_second(monkeypatch):
    from benchmarks import time_to_quality as ttq

    now = [0.0]
    monkeypatch.setattr(ttq.time, "perf_counter", lambda: now[0])
    scores = iter([21.0, 24.0, 26.0])
    clock = ttq.TrainingClock(lambda model: next(scores), targets=[25.0, 20.0], budget_seconds=3600)
    now[0] += 60.0
    assert clock(None) == 21.0 and clock.reached == {20.0: 1.0}  # 20 reached: the run goes on to 25
    now[0] += 60.0
    assert clock(None) == 24.0
    now[0] += 60.0
    with pytest.raises(ttq._Reached):
        clock(None)
    assert clock.reached == {20.0: 1.0, 25.0: 3.0}


def test_time_to_quality_runs_both_recipes_at_toy_size(tmp_path, capsys):
    import json

    from benchmarks.time_to_quality import COMPARED, main as time_to_quality

    out = tmp_path / "quality.json"
    result = time_to_quality(["--toy", "--minutes", "0.01", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert list(result["runs"]) == list(COMPARED)  # what a run measures by default
    tutorial, ours = result["runs"]["TF tutorial"], result["runs"]["ours"]
    assert tutorial["changes"]["batch_size"] == 64 and tutorial["recipe"]["bucketing"] is False
    assert tutorial["recipe"]["label_smoothing"] == 0.0 and ours["changes"] == {}
    assert ours["recipe"] == {**result["default_recipe"]} and ours["recipe"]["shuffle_batches"] is True
    assert tutorial["padding"] > ours["padding"] and tutorial["minutes_to"] == {"20": tutorial["minutes_to_target"]}
    for run in (tutorial, ours):  # a budget of 0.6 s: one epoch each, then the clock stops it
        assert len(run["curve"]) == 1 and run["curve"][0]["minutes"] > 0 and 0 <= run["curve"][0]["bleu"] <= 100
    assert result["verdict"] in capsys.readouterr().out


def test_the_gpu_runs_batches_are_full_bucket_shaped_and_teacher_forced():
    import numpy as np

    from benchmarks import gpu_run

    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 140, size=500)
    sources = [list(range(1, n + 1)) for n in lengths]  # token ids 1..n: no padding id inside
    targets = [list(range(5, n + 7)) for n in lengths]
    batches = gpu_run.batches(sources, targets, batch_tokens=512, rng=np.random.default_rng(1))
    seen = 0
    for (source, target_in), target_out in batches:
        length = source.shape[1]
        assert length in gpu_run.BUCKETS and source.shape[0] == 512 // length  # full batches only
        assert target_in.shape == target_out.shape == source.shape
        assert np.array_equal(target_in[:, 1:], target_out[:, :-1])  # shifted by one token
        real = (source != 0).sum(axis=1)
        assert real.max() <= length and (length == gpu_run.BUCKETS[0] or real.min() > length // 2 - 2)
        seen += source.shape[0]
    longest = sum(max(len(s), len(t)) <= gpu_run.MAX_LENGTH for s, t in zip(sources, targets))
    assert longest - len(gpu_run.BUCKETS) * 512 // gpu_run.BUCKETS[0] <= seen <= longest


def test_the_gpu_precision_benchmarks_batches_are_real_tokens_shifted_by_one():
    import numpy as np

    from benchmarks.gpu_precision import full_batch

    (source, target_in), target_out = full_batch(batch=5, length=7, vocab_size=20)
    assert source.shape == target_in.shape == target_out.shape == (5, 7) and source.dtype == np.int32
    assert np.array_equal(target_in[:, 1:], target_out[:, :-1])  # teacher forcing: the same sentence, one step on
    for ids in (source, target_in, target_out):  # no padding (0), start (1) or end (2): every position is real
        assert ids.min() >= 3 and ids.max() < 20


def test_the_gpu_precision_benchmark_builds_each_policy_and_restores_float32(tmp_path, capsys):
    import json

    import keras

    from benchmarks import gpu_precision

    record = gpu_precision.main([str(tmp_path / "precision.json"), "--toy"])
    assert keras.mixed_precision.global_policy().name == "float32"  # as it was before the run
    try:
        model_module, _, _, objective = gpu_precision.import_model_modules()
        mixed = gpu_precision.build(model_module, objective, "tiny", 50, "mixed_bfloat16")
        assert mixed.dtype_policy.name == "mixed_bfloat16"
        assert {v.dtype for v in mixed.trainable_variables} == {"float32"}  # weights stay float32
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert json.loads((tmp_path / "precision.json").read_text())["steps"] == record["steps"]
    toy = gpu_precision.TOY
    assert [(step["batch"], step["policy"]) for step in record["steps"]] == [
        (batch, policy) for batch in toy["batches"] for policy in ("float32", "mixed_bfloat16")]
    for step in record["steps"]:
        assert step["tokens"] == step["batch"] * toy["length"] and len(step["seconds"]) == toy["steps"]
        assert min(step["seconds"]) - 1e-5 <= step["median_seconds"] <= max(step["seconds"]) + 1e-5
        assert step["hyperparameters"]["target_vocab_size"] == toy["vocab_size"]
    assert [(run["policy"], run["batch"]) for run in record["fit"]] == [
        ("float32", toy["batches"][0]), ("mixed_bfloat16", toy["batches"][0])]
    assert all(run["seconds_per_step"] > 0 for run in record["fit"])
    peak = record["matmul_peak"]["bfloat16"]
    assert peak["flops_per_s"] == pytest.approx(2 * toy["n"] ** 3 / peak["seconds"])
    assert record["device"] in capsys.readouterr().out


def test_the_time_to_quality_verdict_names_the_first_recipe_and_bounds_the_others():
    from benchmarks.time_to_quality import compare

    def runs(**minutes):
        return {name.replace("_", " "): {"minutes_to_target": m} for name, m in minutes.items()}

    assert compare(runs(ours=40.0, TF_tutorial=30.0), 20, 60) == (
        "TF tutorial reached BLEU 20 first, in 30.0 min; 1.33x as fast as ours")
    assert compare(runs(ours=30.0, TF_tutorial=None), 20, 60) == (
        "ours reached BLEU 20 first, in 30.0 min; more than 2.00x as fast as TF tutorial (not within 60 min)")
    assert compare(runs(ours=None, TF_tutorial=None), 20, 60) == "none reached BLEU 20 within 60 min"
    assert compare(runs(ours=12.5), 20, 60) == "ours reached BLEU 20 in 12.5 min"
    assert compare(runs(ours=None), 20, 45) == "ours did not reach BLEU 20 within 45 min"


def test_time_to_quality_refuses_an_unknown_recipe_and_names_the_known_ones(capsys):
    from benchmarks.time_to_quality import main

    with pytest.raises(SystemExit):
        main(["--toy", "--recipes", "ours,mine"])
    message = capsys.readouterr().err
    assert "unknown recipe(s) 'mine'" in message and "ours without label smoothing" in message


def test_the_small_data_study_runs_at_toy_size_records_each_row_and_keeps_earlier_rows(tmp_path, capsys, monkeypatch):
    import json

    from benchmarks import small_data_study as study

    out = tmp_path / "study.json"
    first = study.main(["--toy", "--epochs", "1", "--only", "sampling 0.1", "--out", str(out)])  # a real row
    assert json.loads(out.read_text()) == first
    assert [row["name"] for row in first["rows"]] == ["sampling 0.1"]
    row = first["rows"][0]
    assert 0 <= row["val_beam_bleu"] <= 100 and 0 <= row["val_beam_chrf"] <= 100
    assert len(row["val_greedy_bleu"]) == len(row["val_loss"]) == 1 and row["seconds_per_epoch"] > 0
    assert row["recipe"]["sampling_alpha"] == 0.1 and "sampling 0.1: val beam BLEU" in capsys.readouterr().out

    def another_row(module, names, epochs, workers, toy, finished, summary):  # a second call's row, not trained
        rows = {name: {**row, "name": name, "recipe": study.row_recipe(name, toy)[0].to_dict()} for name in names}
        finished(rows, {})
        return rows, {}

    monkeypatch.setattr(study, "run_rows", another_row)
    second = study.main(["--toy", "--epochs", "1", "--only", "smoothing 0.2", "--out", str(out)])
    assert [row["name"] for row in second["rows"]] == ["sampling 0.1", "smoothing 0.2"]  # earlier rows kept
    assert second["rows"][0] == row and json.loads(out.read_text()) == second
    # at one epoch the first stage is planned: every row but the second stage's "4k + ..." ones
    assert second["not_run"] == [name for name in study.RUNS
                                 if name not in ("sampling 0.1", "smoothing 0.2") and not name.startswith("4k + ")]
    assert "4k + sampling 0.1" in study.planned(20) and "sampling 0.1" not in study.planned(20)
    sampled, smoothed = (study.row_recipe(name, toy=True)[0] for name in ("sampling 0.1", "smoothing 0.2"))
    assert (sampled.sampling_alpha, smoothed.sampling_alpha) == (0.1, None)  # each row changes what it says
    assert smoothed.label_smoothing == 0.2 != sampled.label_smoothing
    third = study.main(["--toy", "--epochs", "2", "--only", "smoothing 0.2", "--out", str(out)])
    assert [row["name"] for row in third["rows"]] == ["smoothing 0.2"]  # other epochs: another study
    assert (row["cpu"], row["date"]) == (first["cpu"], first["date"])  # each row names its machine and date
    older = {"epochs": 1, "cpu": "an older CPU", "date": "2026-11-26", "rows": [{"name": "center"}]}
    assert study.write(out, 1, 1, 0.0, {}, {}, older)["rows"] == [{"cpu": "an older CPU", "date": "2026-11-26",
                                                                 "name": "center"}]  # from its call's header


def test_the_imdb_classifier_study_runs_at_toy_size_and_each_row_changes_what_it_says(tmp_path, capsys, monkeypatch):
    import json

    from benchmarks import imdb_classifier_study as study
    from benchmarks.imdb_classifier_study import CENTER, RUNS, main as imdb_study, row_settings

    for name, (_, change) in RUNS.items():  # at full size: the center with exactly the row's change
        settings = row_settings(name)
        assert {k: v for k, v in settings.items() if CENTER[k] != v} == {k: v for k, v in change.items() if CENTER[k] != v}
        assert name == "center" or settings != CENTER
    out = tmp_path / "study.json"
    first = imdb_study(["--toy", "--epochs", "2", "--only", "center,256 head+tail", "--out", str(out)])
    assert json.loads(out.read_text()) == first
    assert [row["name"] for row in first["rows"]] == ["center", "256 head+tail"]
    assert [row["settings"]["truncate"] for row in first["rows"]] == ["head", "head+tail"]
    for row in first["rows"]:
        assert len(row["val_accuracy"]) == 2 and all(0 <= a <= 1 for a in row["val_accuracy"])
        assert row["best_val_accuracy"] == max(row["val_accuracy"]) == row["val_accuracy"][row["best_epoch"] - 1]
        assert row["training_reviews"] > row["validation_reviews"] > 0 and row["seconds_per_epoch"] > 0
    assert "center: best val accuracy" in capsys.readouterr().out

    def another_row(module, names, epochs, workers, toy, finished, summary):  # a second call's row, not trained
        rows = {name: {**first["rows"][0], "name": name, "settings": row_settings(name)} for name in names}
        finished(rows, {})
        return rows, {}

    monkeypatch.setattr(study, "run_rows", another_row)
    second = imdb_study(["--toy", "--epochs", "2", "--only", "dropout 0.3", "--out", str(out)])
    assert [row["name"] for row in second["rows"]] == ["center", "256 head+tail", "dropout 0.3"]  # earlier rows kept
    assert second["rows"][:2] == first["rows"] and second["rows"][2]["settings"]["dropout_rate"] == 0.3


def test_the_bert_screens_rows_keep_a_long_reviews_head_and_tail_between_start_and_end():
    import numpy as np

    from benchmarks.bert_labels_gpu import END, START, rows_head_tail

    reviews = [list(range(10, 20)), [7, 8, 9]]  # a review of 10 pieces, one of 3
    ids = np.array([i for review in reviews for i in review], np.uint16)
    rows = rows_head_tail(ids, np.array([0, 10, 13]), length=8)  # room for 6 pieces
    assert rows.tolist() == [[START, 10, 11, 12, 17, 18, 19, END], [START, 7, 8, 9, END, 0, 0, 0]]


def test_the_cpu_bert_screens_windows_hold_every_piece_of_every_review_once():
    """The screen's windows are the library's (`tl.data.imdb.review_windows`, `batch_rows`)."""
    from benchmarks.bert_labels_cpu import window_batches
    from transformer_lib.data.tokenizer import END_ID, START_ID

    ids = [list(range(10, 10 + n)) for n in (1, 5, 6, 13)]  # window 7: 5 pieces per window
    windows = [row[row > 0] for batch, _ in window_batches(ids, 7, 64, shuffle=True).as_numpy_iterator() for row in batch]
    assert all(w[0] == START_ID and w[-1] == END_ID and len(w) <= 7 for w in windows)
    assert sorted(piece for w in windows for piece in w[1:-1]) == sorted(piece for row in ids for piece in row)
    assert len(windows) == 1 + 1 + 2 + 3


def test_the_cpu_bert_screen_runs_at_toy_size_and_chooses_each_learning_rate_on_validation(tmp_path, capsys):
    import json

    import numpy as np

    from benchmarks.bert_labels_cpu import FINETUNE_LRS, main as screen

    out = tmp_path / "screen.json"
    record = screen(["--toy", "--size", "1,16,2,32", "--seeds", "1", "--labels", "40", "--warmup", "10", "--out", str(out)])
    assert json.loads(out.read_text()) == record
    assert record["pretraining"][0]["updates"] > 0 and 0 <= record["pretraining"][0]["val_masked_accuracy"] <= 1
    for name in ("pretrained", "scratch"):
        result = record["comparison"][name]
        means = {lr: np.mean([r["val_accuracy"] for r in result["runs"] if r["lr"] == lr]) for lr in FINETUNE_LRS}
        assert result["chosen_lr"] == max(means, key=means.get) and len(result["runs"]) == len(FINETUNE_LRS)
        chosen = [r["test_accuracy"] for r in result["runs"] if r["lr"] == result["chosen_lr"]]
        assert result["mean_test"] == pytest.approx(np.mean(chosen), abs=1e-4)
    assert record["gain_at_labels"] == pytest.approx(
        record["comparison"]["pretrained"]["mean_test"] - record["comparison"]["scratch"]["mean_test"], abs=1e-4)
    assert "gain" in capsys.readouterr().out


def test_the_cpu_bert_screen_keeps_its_pretrained_model_and_reads_all_labels_when_asked(tmp_path):
    """--pretrain-epochs, --scratch-lrs, --all-labels and --save (the run chapter 9 can start from)."""
    import json

    import keras
    import numpy as np

    import transformer_lib as tl
    from benchmarks.bert_labels_cpu import main as screen

    out, kept = tmp_path / "screen.json", tmp_path / "bert"
    record = screen(["--toy", "--size", "1,16,2,32", "--seeds", "1", "--labels", "40", "--warmup", "10",
                     "--pretrain-epochs", "2", "--finetune-lrs", "1e-3", "--scratch-lrs", "3e-4,1e-3",
                     "--all-labels", "--all-labels-lr", "2e-4", "--windows", "random", "--pretrain-clip", "global",
                     "--save", str(kept), "--out", str(out)])
    assert [row["epoch"] for row in record["pretraining"]] == [1, 2]
    assert (record["settings"]["windows"], record["settings"]["pretrain_clip"]) == ("random", "global")
    reviews = len(tl.load_imdb("train", sample=True))  # random windows: one of each review an epoch, 8192 // 128 a batch
    assert record["pretraining"][1]["updates"] == 2 * -(-reviews // (8192 // 128))
    assert [run["lr"] for run in record["comparison"]["scratch"]["runs"]] == [3e-4, 1e-3]
    assert [run["lr"] for run in record["comparison"]["pretrained"]["runs"]] == [1e-3]
    every = record["all_labels"]
    assert every["labels"] == len(tl.load_imdb("train", sample=True)) and every["test_reviews"] == len(tl.load_imdb("test", sample=True))
    assert 0 <= every["test_accuracy"] <= 1 and every["lr"] == 2e-4
    assert json.loads((kept / "pretraining.json").read_text())["curve"] == record["pretraining"]
    tokenizer = tl.SubwordTokenizer.load(kept / "tokenizer.model")
    again = tl.MaskedLanguageModel(tokenizer.vocab_size + 1, num_layers=1, d_model=16, num_heads=2, dff=32, max_length=256,
                                   activation="gelu")
    again.build((None, 8))
    fresh = [keras.ops.convert_to_numpy(w).copy() for w in again.weights]
    again.load_weights(kept / "bert.weights.h5")  # the same shapes: a model the chapter can rebuild and load
    assert any(not np.array_equal(before, keras.ops.convert_to_numpy(w)) for before, w in zip(fresh, again.weights))


def test_the_finetune_protocol_screen_fine_tunes_a_saved_bert_each_way_and_appends_its_rows(tmp_path):
    """benchmarks/bert_finetune_protocol: a saved model, each batching protocol and clipping, one row per run."""
    import json

    import numpy as np

    import transformer_lib as tl
    from benchmarks.bert_finetune_protocol import main as protocol

    saved, out = tmp_path / "bert", tmp_path / "protocol.json"
    with pytest.raises(FileNotFoundError, match="bert_labels_cpu"):
        protocol([str(saved), "--model", "scratch", "--protocol", "reviews", "--toy", "--out", str(out)])
    saved.mkdir()
    tokenizer = tl.data.imdb.train_review_tokenizer(tl.load_imdb("train", sample=True), 400)
    tokenizer.save(saved / "tokenizer.model")
    bert = tl.MaskedLanguageModel(tokenizer.vocab_size + 1, num_layers=1, d_model=16, num_heads=2, dff=32,
                                  max_length=256, activation="gelu", norm_first=True)
    bert.build((None, 8))
    bert.compile(optimizer="adam")
    bert.optimizer.build(bert.trainable_variables)  # as after pretraining: the file holds the optimizer's state too
    bert.save_weights(saved / "bert.weights.h5")
    common = [str(saved), "--toy", "--size", "1,16,2,32", "--norm-first", "--labels", "40", "--epochs", "1",
              "--out", str(out)]
    rows = [protocol([*common, "--model", "pretrained", "--protocol", "reviews", "--seeds", "0,1"]),
            protocol([*common, "--model", "scratch", "--protocol", "buckets", "--seeds", "2"]),
            protocol([*common, "--model", "pretrained", "--protocol", "reviews", "--clip", "weight", "--seeds", "0"])]
    assert json.loads(out.read_text())["rows"] == rows  # appended, none overwritten
    assert [(r["model"], r["protocol"], r["clip"]) for r in rows] == [
        ("pretrained", "reviews", "global"), ("scratch", "buckets", "weight"), ("pretrained", "reviews", "weight")]
    assert [[run["seed"] for run in r["runs"]] for r in rows] == [[0, 1], [2], [0]]
    for row in rows:
        assert row["labels"] == 40 and row["size"] == [1, 16, 2, 32] and row["norm_first"]
        assert row["mean_test"] == pytest.approx(np.mean([run["test_accuracy"] for run in row["runs"]]), abs=1e-4)
        assert all(0 <= run["val_accuracy"] <= 1 and run["best_epoch"] == 1 for run in row["runs"])
    with pytest.raises(ValueError, match="give the --size and --norm-first"):  # pre-LN weights, a post-LN model
        protocol([*common[:4], *common[5:], "--model", "pretrained", "--protocol", "reviews", "--seeds", "0"])


def test_the_chapter9_budget_times_every_part_in_each_precision(tmp_path):
    """The plan of chapter 9's minutes rests on these speeds: each part is measured and written down."""
    import json

    import keras

    from benchmarks.chapter9_budget import main as budget

    out = tmp_path / "budget.json"
    record = budget(["--toy", "--seconds", "0.2", "--precisions", "float32", "--out", str(out)])
    assert json.loads(out.read_text()) == record
    speeds = record["tokens_per_second"]["float32"]
    assert set(speeds) == {"mlm", "classifier_train", "classifier_read", "lm_train"}
    assert all(speed > 0 for speed in speeds.values())
    assert speeds["classifier_read"] > speeds["classifier_train"]  # reading skips the backward pass
    assert keras.mixed_precision.global_policy().name == "float32"  # left as it was found


def test_the_since_2017_study_trains_every_variant_on_the_same_data_and_records_the_table(tmp_path):
    from benchmarks import since_2017

    chosen = ["2017", "RMSNorm", "GQA", "2024"]  # four of the seven: the same code, less time
    record = since_2017.main(["--toy", "--seeds", "0", "--variants", *chosen, "--out", str(tmp_path / "since.json")])
    assert json.loads((tmp_path / "since.json").read_text()) == record
    rows = {row["variant"]: row for row in record["rows"]}
    assert list(rows) == chosen and {row["seed"] for row in record["rows"]} == {0}
    assert all(row["switches"] == since_2017.VARIANTS[name] for name, row in rows.items())
    assert rows["GQA"]["cache_bytes_per_token"] * 2 == rows["2017"]["cache_bytes_per_token"]  # 2 of 4 heads
    assert rows["2024"]["cache_bytes_per_token"] == rows["GQA"]["cache_bytes_per_token"]
    assert rows["RMSNorm"]["parameters"] < rows["2017"]["parameters"]  # no bias in the norms
    assert all(row["val_perplexity"] > 1 and row["tokens_per_second"] > 0 for row in rows.values())
    assert set(record["greedy_samples"]) == {"2017", "2024"}
    assert all(sample.lower().startswith("this movie was") for sample in record["greedy_samples"].values())
    assert record["machine"] and record["settings"] == since_2017.TOY


def test_the_back_translation_study_runs_its_steps_once_and_each_row_trains_on_what_it_says(tmp_path, monkeypatch):
    import json

    from benchmarks import back_translation_study as study
    from transformer_lib.data.back_translations import read_back_translations

    monkeypatch.setattr(study, "FOLDER", tmp_path / "runs" / "back-translation")
    out = tmp_path / "study.json"
    record = study.main(["--toy", "--only", "sampled tagged,beam", "--out", str(out)])
    assert json.loads(out.read_text()) == record and set(record["steps"]) == {"reverse", "beam", "sampled"}
    reverse = record["steps"]["reverse"]
    assert 0 <= reverse["val_beam_bleu"] <= 100 and reverse["minutes"] >= 0 and reverse["epochs"] == 1
    for method in ("beam", "sampled"):
        step = record["steps"][method]
        pairs = read_back_translations(study.folder(True) / step["file"])
        assert step["english"] == 12 and step["pairs"] == len(pairs) <= 12
    again = study.main(["--toy", "--only", "beam", "--out", str(out)])  # the steps are kept, not run again
    assert again["steps"] == record["steps"]
    beam = read_back_translations(study.folder(True) / "beam.tsv")
    sampled = read_back_translations(study.folder(True) / "sampled.tsv")
    assert study.row_file("center", True) is None
    assert read_back_translations(study.row_file("beam", True)) == beam
    assert read_back_translations(study.row_file("sampled tagged", True)) == [(f"<bt> {ru}", en) for ru, en in sampled]
    half = read_back_translations(study.row_file("beam tagged half", True))
    tagged = [(f"<bt> {ru}", en) for ru, en in beam]
    assert len(half) == round(len(beam) / 2) and all(pair in tagged for pair in half)
    assert study.row_file("center 1.5x epochs", True) is None


def test_the_back_translation_studys_longer_center_trains_half_as_many_epochs_again(monkeypatch):
    from benchmarks import back_translation_study as study

    trained = {}
    monkeypatch.setattr(study, "train_and_score", lambda name, change, recipe, sizes, epochs, threads:
                        trained.setdefault(name, (recipe.corpus, epochs)))
    study.run_one("center 1.5x epochs", 8, 1)
    study.run_one("center", 8, 1)
    assert trained == {"center 1.5x epochs": ("tatoeba+smartool/rus-eng", 12),
                       "center": ("tatoeba+smartool/rus-eng", 8)}


def test_a_back_translation_row_run_again_keeps_its_earlier_run_in_the_record(tmp_path):
    import time

    from benchmarks import back_translation_study as study

    out, first, second = tmp_path / "study.json", {"name": "beam", "val_beam_bleu": 27.0}, {"name": "beam", "val_beam_bleu": 28.0}
    study.write(out, 8, time.perf_counter(), {}, {"beam": first, "center": {"name": "center"}}, {})
    record = study.write(out, 8, time.perf_counter(), {}, {"beam": second}, {})
    record = study.write(out, 8, time.perf_counter(), {}, {"beam": second}, {})  # written again after each row
    assert record["rows"] == [{"name": "center"}, second]
    assert [{k: v for k, v in row.items() if k != "replaced"} for row in record["replaced_rows"]] == [first]
    assert study.write(out, 12, time.perf_counter(), {}, {}, {})["rows"] == []  # other epochs: other rows


def test_the_back_translation_confirmations_baseline_is_the_recorded_run_of_that_recipe():
    import json

    from benchmarks.back_translation_confirm import BASELINE_RUN, SMALL, baseline

    BASELINE = baseline()

    root = Path(__file__).resolve().parent.parent
    run = json.loads((root / "benchmarks" / "whole_runs.json").read_text())["runs"][BASELINE_RUN]
    assert run["recipe"]["preset"] == SMALL["preset"] and run["recipe"]["corpus"] == "tatoeba+smartool/rus-eng"
    assert BASELINE["val_beam_bleu"] == run["val_beam_bleu"] and BASELINE["val_greedy_bleu"] == run["val_greedy_bleu"]
    assert BASELINE["train_minutes"] == run["train_minutes"] and BASELINE["updates"] == run["updates"]
    assert run["updates"] == run["recipe"]["epochs"] * run["batches_per_epoch"] == 29 * 362
    assert len(run["val_greedy_bleu"]) == len(run["seconds_per_epoch"]) == len(run["val_loss"]) == run["recipe"]["epochs"]
    assert run["val_beam_bleu"][run["chosen"]] == max(run["val_beam_bleu"].values())  # it kept the best of its candidates
    for weights in ("last (epoch 29)", "average of epochs 25-29"):  # the other runs' shape holds the same scores
        assert run["val_beam"][weights]["bleu"] == run["val_beam_bleu"][weights]
    assert {name: found["bleu"] for name, found in run["val_beam"].items()} == {
        "last (epoch 29)": 35.06, "average of epochs 25-29": 35.66, "average of epochs 20-29": 35.08,
        "average of epochs 15-29": 34.88}
    recorded = json.loads((root / "benchmarks" / "back_translation_confirm.json").read_text())
    assert recorded["baseline"] == BASELINE and all(entry["recipe"]["preset"] == "small" for entry in recorded["runs"].values())


def test_a_whole_run_is_trained_once_scored_and_recorded_with_its_translations(tmp_path, capsys):
    import json

    import transformer_lib as tl
    from benchmarks.whole_runs import whole_run

    toy = dict(corpus="synthetic/small", preset="tiny", epochs=3, vocab_size=400, batch_tokens=4096, max_length=24,
               warmup_steps=20, average_last=3)
    folder, out = tmp_path / "run", tmp_path / "whole_runs.json"
    entry = whole_run("toy", folder, keep=3, out=out, **toy)
    trained = json.loads((folder / "training.json").read_text())
    # the scores are chapter 7's way of choosing weights: train_translator's own scores of the same candidates
    assert entry["val_beam"]["last (epoch 3)"]["bleu"] == trained["weights"]["scores"]["last (epoch 3)"]
    assert entry["val_beam"]["average of epochs 1-3"]["bleu"] == trained["weights"]["scores"]["average of epochs 1-3"]
    sources = {source for source, _ in tl.load_parallel_corpus("synthetic/small", "validation")}
    assert len(entry["val_translations"]) == len(sources) and all(isinstance(t, str) for t in entry["val_translations"])
    assert entry["updates"] == 3 * entry["batches_per_epoch"] and len(entry["val_greedy_bleu"]) == 3
    assert entry["changes"]["preset"] == "tiny" and entry["sizes"]["d_model"] == tl.PRESETS["tiny"].d_model
    assert json.loads(out.read_text())["runs"]["toy"] == entry
    again = whole_run("toy", folder, keep=3, out=out, **toy)  # finished: scored again, not trained again
    assert "nothing left to train" in capsys.readouterr().out.lower() or again["seconds_per_epoch"] == entry["seconds_per_epoch"]
    assert again["val_beam"] == entry["val_beam"] and len(json.loads(out.read_text())["runs"]) == 1


def test_every_recorded_whole_run_fits_chapter_7s_budget_and_can_be_compared():
    import json

    import transformer_lib as tl
    from transformer_lib.decoding.bleu import group_references

    record = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "whole_runs.json").read_text())
    sources, _ = group_references(tl.load_parallel_corpus("tatoeba+smartool/rus-eng", "validation"))
    assert sum(run["val_translations"] is not None for run in record["runs"].values()) >= 2
    for name, run in record["runs"].items():
        assert run["train_minutes"] <= 40, name  # chapter 7's budget of training time
        assert len(run["val_greedy_bleu"]) == len(run["seconds_per_epoch"]) == run["recipe"]["epochs"], name
        assert run["updates"] == run["batches_per_epoch"] * run["recipe"]["epochs"], name
        if run["val_translations"] is not None:  # one per distinct validation source, for a paired bootstrap
            assert len(run["val_translations"]) == len(sources), name


def test_the_smollm2_speed_benchmark_runs_on_a_tiny_gguf_file_and_records_its_ratios(tmp_path, rng):
    """At toy size on a one-layer GGUF file, without llama.cpp (not installed here: `--llama-python` is optional)."""
    from conftest import tiny_gguf_tensors, write_tiny_gguf

    from benchmarks.smollm2_speed import main as smollm2_speed

    path = write_tiny_gguf(tmp_path / "tiny.gguf", tiny_gguf_tensors(rng), context=512)
    record = smollm2_speed(["--gguf", str(path), "--new-tokens", "3", "--repeats", "1", "--out", str(tmp_path / "r.json")])
    assert json.loads((tmp_path / "r.json").read_text()) == record
    assert record["prompt_tokens"] > 30 and record["new_tokens"] == 3 and "llama_cpp" not in record
    library = record["library"]
    assert library["tokens_per_second"] > 0 and library["prompt_tokens_per_second"] > 0
    assert record["cache_speedup"] == pytest.approx(library["tokens_per_second"] / library["uncached_tokens_per_second"])
