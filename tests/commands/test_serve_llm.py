"""`serve llm:MODEL`: its answer, and one line with exit status 2 for every request it cannot serve."""

import json

import pytest

from benchmarks.commands.serve_llm import main, parser

BASE = ["llm:Llama-3-8B", "--gpu", "H100", "--prompt-tokens", "1000", "--output-tokens", "200"]


def test_it_answers_with_the_runs_the_front_and_the_budget(capsys):
    assert main([*BASE, "--concurrency", "1,16,128", "--requests", "200", "--tpot-budget-ms", "50", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["concurrency"] for r in found["runs"]] == [1, 16, 128]
    run = found["runs"][1]
    for key in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p90_ms", "itl_p99_ms", "tokens_per_s", "tokens_per_s_per_user",
                "requests_per_s", "mean_running", "kv_peak_share"):  # fmt: skip
        assert run[key] > 0
    assert found["front"] == [1, 16, 128]
    assert found["assumptions"]["notes"] == ["'H100' taken as the NVIDIA H100 SXM (name another part to choose it)"]
    budget = found["budget"]
    assert budget["at"]["tpot_p99_ms"] <= 50 and budget["max_num_seqs"] == budget["concurrency"] > 1
    assert budget["binds"] in ("kv-memory", "step-time", "prefills", "time-to-first-token")
    assert str(budget["concurrency"]) in budget["explanation"]
    missed = budget["missed_at_concurrency"]
    assert missed is None if budget["binds"] == "kv-memory" else missed > budget["concurrency"]


def test_the_table_marks_the_front_and_states_its_assumptions(capsys):
    assert main([*BASE, "--rate", "2,5", "--requests", "100", "--chunked-prefill"]) == 0
    out = capsys.readouterr()
    assert "Step times: the forecast: the datasheet roofline divided by efficiencies fitted" in out.out
    assert "rate/s" in out.out
    assert "simulating rate 2/s (1/2)" in out.err
    assert main([*BASE, "--rate", "2", "--requests", "100", "--ceiling"]) == 0
    assert "Step times: datasheet roofline, nothing measured." in capsys.readouterr().out


def test_a_custom_decoder_is_served(capsys):
    params = ["--param", "layers=4", "--param", "d_model=512", "--param", "heads=8", "--param", "kv_heads=2",
              "--param", "d_ff=1024", "--param", "context=2048"]  # fmt: skip
    assert main(["llm:custom", *params, "--gpu", "L4", "--concurrency", "4", "--requests", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["assumptions"]["model"] == "custom decoder"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["llm:GPT-9", "--gpu", "H100"], "unknown model 'GPT-9'"),
        (["Llama-3-8B", "--gpu", "H100"], "write llm:MODEL"),
        (["llm:Llama-3-8B", "--gpu", "Z9000"], "unknown GPU"),
        (["llm:Llama-3-8B", "--gpu", "T4"], "gives no bfloat16 rate"),
        (["llm:Llama-3.3-70B", "--gpu", "H100"], "does not fit"),
        (["llm:Mixtral-8x7B", "--gpu", "H100"], "it needs at least 2 of them (--tp 2)"),
        (["llm:Llama-3.3-70B", "--gpu", "H100", "--dtype", "fp4"], "gives no float4 rate"),
        (["llm:Llama-3-8B", "--gpu", "H100", "--kv-dtype", "fp7"], "unknown dtype 'fp7'"),
        (["llm:Llama-3-8B", "--gpu", "H100", "--routing-skew", "1"], "is for a mixture of experts"),
        (
            ["llm:Llama-2-70B", "--gpu", "H200", "--dtype", "fp8", "--prompt-tokens", "4000"],
            "beyond Llama-2-70B's context",
        ),
        (["llm:Llama-3-8B", "--gpu", "H100", "--prompt-tokens", "9000"], "context is 8,192 tokens"),
        ([*BASE, "--tpot-budget-ms", "1"], "no concurrency meets"),
        ([*BASE, "--ttft-budget-ms", "100"], "needs --tpot-budget-ms"),
        ([*BASE, "--concurrency", "0"], "--concurrency '0'"),
        ([*BASE, "--rate", "fast"], "--rate 'fast'"),
        ([*BASE, "--efficiency", "2"], "--efficiency '2'"),
        ([*BASE, "--prompt-tokens", "uniform:9-3"], "LOW must not exceed HIGH"),
        ([*BASE, "--prompt-tokens", "file:/nonexistent/lengths"], "lengths: cannot be read"),
        ([*BASE, "--chunked-prefill", "--max-batched-tokens", "16"], "at least max_num_seqs"),
        (["llm:custom", "--gpu", "H100", "--param", "layers=2"], "needs --param for d_model"),
        (["llm:Llama-3-8B", "--gpu", "L4", "--memory-fraction", "0.5"], "does not fit"),
        (["llm:Llama-3-8B"], "one of the arguments --gpu --run is required"),
        ([*BASE, "--concurrency", "4", "--rate", "2"], "not allowed with argument"),
    ],
)
def test_every_bad_request_is_one_line_and_exit_status_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_a_lengths_file_is_read(tmp_path, capsys):
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("# prompt lengths\n100\n300\n\n200\n", encoding="utf-8")
    assert main([*BASE[:3], "--prompt-tokens", f"file:{lengths}", "--concurrency", "2", "--requests", "10",
                 "--json"]) == 0  # fmt: skip
    assert "3 listed lengths, mean 200" in json.loads(capsys.readouterr().out)["assumptions"]["prompt_tokens"]
    lengths.write_text("100\nten\n", encoding="utf-8")
    assert main([*BASE[:3], "--prompt-tokens", f"file:{lengths}"]) == 2
    assert "line 2" in capsys.readouterr().err


def test_the_serve_verb_hands_an_llm_source_to_this_command(capsys):
    from benchmarks.commands.cli import main as cli_main

    assert cli_main(["serve", *BASE, "--concurrency", "2", "--requests", "10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["assumptions"]["model"] == "Llama-3-8B"
    assert cli_main(["serve", "llm:GPT-9", "--gpu", "H100"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: unknown model 'GPT-9'; choose from Llama-3-8B, Llama-3.1-8B, Mistral-7B, Llama-2-70B, Llama-3.3-70B, "
        "Llama-3.1-405B, Mixtral-8x7B, Qwen1.5-MoE-A2.7B, Tiny-Llama, or llm:custom"
    )


RUN = "benchmarks/results/cpu-amd-epyc/20261130T100513Z-quick-084f0a.json"


def test_a_committed_runs_decode_and_prefill_points_give_the_step_times(capsys):
    argv = ["llm:run", "--run", RUN, "--prompt-tokens", "128", "--output-tokens", "64", "--concurrency", "1,8",
            "--requests", "40", "--json"]  # fmt: skip
    assert main(argv) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["assumptions"]["source"] == "measured decode and prefill points of a committed run, interpolated"
    assert "kv_heads 2" in found["assumptions"]["step_time"] and "AMD EPYC (cpu" in found["assumptions"]["step_time"]
    one = found["runs"][0]
    # one sequence at context 128 to 191: between the measured batch-1 steps at contexts 128 and 2,048 (2.25, 2.77 ms)
    assert 2.2 < one["tpot_p50_ms"] < 2.3
    assert one["ttft_p50_ms"] == pytest.approx(23.36, abs=0.01)  # the measured 128-token prefill at batch 1


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["llm:Llama-3-8B", "--run", RUN], "with --run, SOURCE is llm:run"),
        (["llm:run", "--run", RUN, "--efficiency", "0.5"], "--efficiency is for --gpu"),
        (["llm:run", "--run", RUN, "--param", "kv_heads=8"], "measured no decode step and prefill of a decoder"),
        (["llm:run", "--run", "/nonexistent.json"], "/nonexistent.json"),
        (["llm:run", "--gpu", "H100", "--run", RUN], "not allowed with argument"),
    ],
)
def test_a_run_that_cannot_serve_is_one_line_and_exit_status_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_reserving_the_kv_cache_admits_fewer_and_preempts_none(capsys):
    argv = ["llm:Llama-3-8B", "--gpu", "L4", "--prompt-tokens", "1000", "--output-tokens", "1000", "--concurrency",
            "64", "--requests", "128", "--json"]  # fmt: skip
    assert main(argv) == 0
    greedy = json.loads(capsys.readouterr().out)["runs"][0]
    assert main([*argv, "--reserve-kv"]) == 0
    found = json.loads(capsys.readouterr().out)
    reserved = found["runs"][0]
    assert found["assumptions"]["engine"]["reserve_kv"] is True
    assert reserved["preemptions"] == 0 < greedy["preemptions"]
    assert reserved["max_running"] < greedy["max_running"]


def test_the_answer_is_the_forecast_and_ceiling_gives_the_roofline(capsys):
    args = [*BASE, "--concurrency", "1", "--requests", "50", "--json"]
    assert main(args) == 0
    forecast = json.loads(capsys.readouterr().out)
    assert main([*args, "--ceiling"]) == 0
    ceiling = json.loads(capsys.readouterr().out)
    assert forecast["assumptions"]["answer"] == "forecast" and ceiling["assumptions"]["answer"] == "ceiling"
    assert "expected error ±" in forecast["assumptions"]["expected_error"]["decode"]
    assert "decode figures on one GPU" in forecast["assumptions"]["expected_error"]["decode"]
    assert ceiling["assumptions"]["expected_error"] is None
    # the forecast's steps are slower than the ceiling's, never faster
    assert forecast["runs"][0]["tpot_p50_ms"] > ceiling["runs"][0]["tpot_p50_ms"]
    assert main([*BASE, "--ceiling", "--efficiency", "0.5"]) == 2
    assert "--ceiling is the bare roofline" in capsys.readouterr().err


def test_mixtral_on_two_h100s_counts_its_all_reduces_and_the_experts_it_reads(capsys):
    argv = ["llm:Mixtral-8x7B", "--gpu", "H100", "--tp", "2", "--concurrency", "1,64", "--requests", "80", "--json"]
    assert main(argv) == 0
    found = json.loads(capsys.readouterr().out)
    step = found["assumptions"]["step_time"]
    assert "× 2 (tensor parallel: 2 ring all-reduces a layer over NVLink 4" in step and "assumed" in step
    assert "top-2 of 8" in step and found["assumptions"]["weights_bytes"] == pytest.approx(93.4e9, rel=1e-3)


def test_a_kv_cache_of_its_own_dtype_holds_twice_the_tokens(capsys):
    assert main([*BASE, "--concurrency", "1", "--requests", "10", "--json"]) == 0
    bf16 = json.loads(capsys.readouterr().out)["assumptions"]
    assert main([*BASE, "--kv-dtype", "fp8", "--concurrency", "1", "--requests", "10", "--json"]) == 0
    fp8 = json.loads(capsys.readouterr().out)["assumptions"]
    assert fp8["kv_bytes_per_token"] == bf16["kv_bytes_per_token"] / 2
    assert fp8["kv_blocks"] == pytest.approx(2 * bf16["kv_blocks"], abs=1)
    assert "KV cache in float8" in fp8["step_time"]


def test_prefix_caching_flags_report_the_share_found_cached(capsys):
    from benchmarks.commands.serve_llm import main

    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--rate", "20", "--requests", "200", "--prefix-tokens", "800",
                 "--prefix-hit", "0.5", "--json"]) == 0  # fmt: skip
    import json

    found = json.loads(capsys.readouterr().out)
    assert found["assumptions"]["engine"]["prefix_tokens"] == 800
    assert found["runs"][0]["prefix_hit_share"] > 0.9
    run = found["runs"][0]  # lengthened past 200 requests where 200 do not reach steady state
    assert run["prefilled_tokens"] < run["requests"] * 1000 * 0.7
    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--prefix-hit", "0.5"]) == 2
    assert "--prefix-hit needs --prefix-tokens" in capsys.readouterr().err
    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--prefix-tokens", "8", "--prefix-hit", "1.5"]) == 2
    assert "share from 0 to 1" in capsys.readouterr().err


def test_disaggregate_compares_with_aggregated_serving_on_the_same_gpus(capsys):
    args = ["llm:Llama-3-8B", "--gpu", "H100", "--prompt-tokens", "2000", "--output-tokens", "100", "--requests",
            "300", "--disaggregate", "1:3", "--rate", "5", "--tpot-budget-ms", "10", "--ceiling", "--json"]  # fmt: skip
    assert main(args) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["assumptions"]["deployment"].startswith("1 prefill and 3 decode engines")
    assert found["runs"][0]["rate_per_s"] == 5
    c = found["comparison"]
    assert c["gpus"] == 4 and c["aggregated"]["replicas"] == 4
    assert c["more_tokens_per_gpu"] == "disaggregated"
    assert "Disaggregated serving meets it with more tokens/s per GPU" in c["explanation"]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--disaggregate", "1", "--rate", "1"], "write P:D"),
        (["--disaggregate", "1:1", "--gpus", "3", "--rate", "1"], "uses 2 GPUs, not --gpus 3"),
        (["--disaggregate", "1:1"], "give --rate or --tpot-budget-ms"),
        (["--disaggregate", "1:1", "--concurrency", "4", "--tpot-budget-ms", "50"], "not --concurrency"),
        (["--tune", "--tpot-budget-ms", "50", "--rate", "3"], "--tune answers the budget alone"),
        (["--kv-link-gbps", "400"], "--kv-link-gbps is for --disaggregate"),
        (["--disaggregate", "1:1", "--rate", "1", "--kv-link-gbps", "-4"], "--kv-link-gbps"),
    ],
)
def test_disaggregate_refuses_what_makes_no_sense(capsys, extra, said):
    assert main(["llm:Llama-3-8B", "--gpu", "H100", *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_tune_names_the_setting_it_picked(capsys):
    args = ["llm:Llama-3-8B", "--gpu", "H100", "--gpus", "1", "--tune", "--tpot-budget-ms", "30", "--requests", "100",
            "--output-tokens", "100"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "picked" in out and "with the most output tokens/s per GPU is TP 1" in out
    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--tune"]) == 2
    assert "--tune needs --gpu and --tpot-budget-ms" in capsys.readouterr().err


def test_log_normal_lengths_are_served_each_request_clipped_to_the_context(capsys):
    argv = [*BASE[:3], "--prompt-tokens", "lognormal:1500,1.2", "--output-tokens", "lognormal:300,1,4000",
            "--concurrency", "4", "--requests", "200", "--chunked-prefill", "--json"]  # fmt: skip
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    found = json.loads(out)["assumptions"]
    assert found["prompt_tokens"] == "log-normal, mean 1,500, σ 1.2 (at most 8,192)"
    assert found["output_tokens"] == "log-normal, mean 300, σ 1 (at most 4,000)"
    assert main([*BASE[:3], "--prompt-tokens", "lognormal:100,1,99999"]) == 2
    assert "give a whole number from 1 to 8,192" in capsys.readouterr().err


def test_pairs_are_clipped_answer_first_and_the_simulator_serves_the_clipped_requests():
    import numpy as np

    from benchmarks.analysis.serving.llm.engine_config import Engine
    from benchmarks.analysis.serving.llm.request_lengths import Lengths, clip_pairs
    from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
    from benchmarks.analysis.serving.llm.simulation import simulate
    from benchmarks.gpus import gpus_matching
    from benchmarks.llm_models import MODELS

    assert clip_pairs([10, 8000, 9000], [5, 500, 9000], 8192) == ([10, 8000, 8191], [5, 192, 1])
    model = next(m for m in MODELS if m.name == "Llama-3-8B")
    step = RooflineStep(model, gpus_matching("H100 SXM")[0], "bfloat16")
    lengths = Lengths.lognormal(3000, 1.5, 8192)
    engine = Engine(chunked_prefill=True, max_batched_tokens=2048, max_model_len=8192)
    result = simulate(step, engine, lengths, lengths, n_requests=300, clients=8, seed=1)
    rng = np.random.default_rng(1)  # the lengths simulate drew, in its order
    prompts, outputs = [int(x) for x in lengths.sample(300, rng)], [int(x) for x in lengths.sample(300, rng)]
    assert any(p + o > 8192 for p, o in zip(prompts, outputs))  # the clipping has work to do
    prompts, outputs = clip_pairs(prompts, outputs, 8192)
    assert result.requests == 300 and result.output_tokens == sum(outputs)
    assert result.prompt_mean == pytest.approx(sum(prompts) / 300)


def test_ctrl_c_during_the_simulations_is_one_line_and_exit_130(capsys, monkeypatch):
    from benchmarks.commands import serve_llm
    from benchmarks.commands.cli import main as cli_main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(serve_llm, "simulate", interrupted)
    assert cli_main(["serve", *BASE, "--concurrency", "4", "--requests", "100"]) == 130
    out, err = capsys.readouterr()
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err + out


def test_per_user_tokens_per_second_is_defined_with_and_without_the_first_token(capsys):
    assert main([*BASE, "--concurrency", "1,16", "--requests", "64"]) == 0
    out = capsys.readouterr().out
    assert "per user  user e2e" in out
    assert "'per user' is 1 ÷ the median time per output token" in out and "'user e2e' counts that wait" in out


def test_the_help_names_the_kernels_it_counts_and_defines_per_user():
    said = " ".join(parser().format_help().split())
    assert "8 kernels a layer: attention norm, QKV projection" in said
    assert "'user e2e' counts that wait" in said


def test_a_rate_row_is_measured_at_steady_state_and_says_when_its_run_was_lengthened(capsys):
    from benchmarks.commands.serve_llm import main

    # 20 requests/s of 1,000 + 200 tokens: 400 requests end before the engine fills, so the run is lengthened
    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--rate", "5,20", "--requests", "400", "--json"]) == 0
    import json

    light, heavy = json.loads(capsys.readouterr().out)["runs"]
    assert light["requests"] == 400 and heavy["requests"] > 400 and light["steady"] and heavy["steady"]
    assert heavy["steady_tokens_per_s"] == pytest.approx(200 * heavy["steady_requests_per_s"], rel=0.05)
    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--rate", "5,20", "--requests", "400"]) == 0
    said = capsys.readouterr().out
    assert f"requests run: 20/s: {heavy['requests']:,}" in said and "warm-up and drain left out" in said
    row = next(line for line in said.splitlines() if line.strip().startswith("20 "))
    assert f"{heavy['steady_tokens_per_s']:,.0f}" in row and "not steady" not in row


def test_expert_parallel_is_refused_where_it_cannot_apply_and_said_where_it_does(capsys):
    from benchmarks.commands.serve_llm import main

    assert main(["llm:Mixtral-8x7B", "--gpu", "H100", "--expert-parallel"]) == 2
    assert "--expert-parallel is for a mixture of experts on --tp 2 or more GPUs" in capsys.readouterr().err
    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--tp", "2", "--expert-parallel"]) == 2
    capsys.readouterr()
    assert main(["llm:Qwen1.5-MoE-A2.7B", "--gpu", "H100", "--tp", "8", "--expert-parallel"]) == 2
    assert "60 experts do not split evenly over 8 GPUs" in capsys.readouterr().err
    assert main(["llm:Mixtral-8x7B", "--gpu", "H100", "--tp", "2", "--expert-parallel", "--concurrency", "1",
                 "--requests", "20"]) == 0  # fmt: skip
    assert "expert parallel: 4 whole experts on each of the 2 GPUs" in capsys.readouterr().out
