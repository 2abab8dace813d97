"""Every user error a command meets is raised as a UserError and printed once, by `run_command`, with its exit status:
no command prints its own "error:" line. (The sweep's measuring child, which reports to its parent over a pipe
when it dies, is the one writer of such a line, and it is not a command.)"""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.contract.errors import CommandFailed, UserError, run_command

COMMANDS = Path(__file__).resolve().parents[2] / "benchmarks" / "commands"
PRINTS_ERROR = re.compile(r"""(print|write)\([^)]*["']error:""")


def test_no_command_prints_its_own_error_line():
    found = [
        f"{path.name}:{number}"
        for path in sorted(COMMANDS.glob("*.py"))
        if path.name != "sweep_watch.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if PRINTS_ERROR.search(line)
    ]
    assert found == []


def test_a_command_failure_is_one_line_with_its_own_status(capsys):
    def failing() -> int:
        raise CommandFailed("writing the results failed: disk full\nsecond line", status=1)

    assert run_command(failing) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: writing the results failed") and err.count("\n") == 1


def test_bad_input_is_status_2(capsys):
    def bad() -> int:
        raise UserError("--batch 0: give a whole number of at least 1")

    assert run_command(bad) == 2
    assert capsys.readouterr().err == "error: --batch 0: give a whole number of at least 1\n"


def test_tensor_parallelism_is_checked_as_vllm_checks_it():
    from benchmarks.llm_models import LLAMA_3_3_70B, LLAMA_3_8B, tensor_parallel_split

    assert tensor_parallel_split(LLAMA_3_8B, 3) == "its 32 attention heads do not divide over 3 GPUs"
    assert tensor_parallel_split(LLAMA_3_8B, 8) is None  # 8 KV heads, one a GPU
    assert tensor_parallel_split(LLAMA_3_3_70B, 16) is None  # 8 KV heads, each replicated over 2 GPUs
    assert tensor_parallel_split(LLAMA_3_8B, 1) is None


def test_serve_llm_refuses_a_width_the_heads_do_not_divide_over(capsys):
    from benchmarks.commands.serve_llm import main

    assert main(["llm:Llama-3-8B", "--gpu", "H100", "--tp", "3", "--concurrency", "1"]) == 2
    err = capsys.readouterr().err
    assert "--tp 3" in err and "32 attention heads" in err and err.count("\n") == 1
