"""The reader's names for a dtype and a GPU: one set of names and one wording for every command that takes them."""

import pytest

from benchmarks.commands import predict, serve, serve_llm
from benchmarks.commands.choices import Refused, check_rate, dtype_named, gpu_named


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        ("bf16", "bfloat16"),
        (" BF16 ", "bfloat16"),
        ("half", "float16"),
        ("tf32", "tfloat32"),
        ("float8", "float8"),
        ("fp8_e4m3", "float8"),
        ("INT8", "int8"),
        ("nvfp4", "float4"),
        ("mxfp4", "float4"),
        ("fp4", "float4"),
    ],
)
def test_dtype_names(name, dtype):
    assert dtype_named(name) == dtype


def test_an_unknown_dtype_says_what_to_choose():
    with pytest.raises(Refused, match=r"unknown dtype 'fp7'; choose from float64, float32"):
        dtype_named("fp7")


def test_gpu_names():
    assert gpu_named("h200")[0].name == "NVIDIA H200"
    with pytest.raises(Refused, match="ambiguous GPU 'A100'; choose from NVIDIA A100 SXM4 80GB, NVIDIA A100 SXM4 40GB"):
        gpu_named("A100")  # two SXM parts: nothing to prefer
    with pytest.raises(Refused, match="unknown GPU 'TPU'; choose from NVIDIA T4"):
        gpu_named("TPU")
    gpu, note = gpu_named("H100")
    assert (
        gpu.name == "NVIDIA H100 SXM" and note == "'H100' taken as the NVIDIA H100 SXM (name another part to choose it)"
    )


def test_a_dtype_the_datasheet_has_no_rate_for_is_refused():
    t4, _ = gpu_named("T4")
    check_rate(t4, "float16")
    with pytest.raises(Refused, match="the NVIDIA T4 datasheet gives no bfloat16 rate; it gives float32, float16"):
        check_rate(t4, "bfloat16")


def test_fp4_is_refused_before_blackwell_in_one_line():
    check_rate(gpu_named("B200")[0], "float4")
    with pytest.raises(Refused, match=r"^the NVIDIA H100 SXM datasheet gives no float4 rate; it gives .*int8$"):
        check_rate(gpu_named("H100 SXM")[0], "float4")
    with pytest.raises(Refused, match="the NVIDIA V100 SXM2 32GB datasheet gives no int8 rate"):
        check_rate(gpu_named("V100")[0], "int8")


def test_every_command_refuses_with_the_same_class():
    assert predict.Refused is serve.Refused is serve_llm.Refused is Refused


def test_params_complete_or_only_those_given():
    from benchmarks.commands.choices import workload_named, workload_params

    mlp = workload_named(" MLP ")
    assert workload_params(mlp, ["width=512"], complete=False) == {"width": 512}
    assert workload_params(mlp, ["width=512"])["width"] == 512 and "depth" in workload_params(mlp, [])
    with pytest.raises(Refused, match=r"--param 'width=wide': width must be a whole number"):
        workload_params(mlp, ["width=wide"], complete=False)
    with pytest.raises(Refused, match="unknown workload 'gpt'"):
        workload_named("gpt")
