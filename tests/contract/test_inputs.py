"""The one bounded reader of input files: regular files only, a cap per kind, never blocked on a FIFO or a device."""

import os
import threading

import pytest

from benchmarks.analysis.published.measurements_file import PublishedDataError, read_published
from benchmarks.analysis.serving.arrivals import TraceError, trace_arrivals
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.commands.choices import Refused
from benchmarks.commands.serve_llm import parse_lengths
from benchmarks.contract.inputs import InputError, read_text_bounded
from benchmarks.contract.results import ResultsError, read_document


def finishes(call, seconds=5.0):
    """Run `call` in a thread; fail if it is still running after `seconds` (a read blocked on a FIFO)."""
    outcome = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the read blocked"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.fixture
def zeros(tmp_path):
    path = tmp_path / "zeros.json"
    path.symlink_to("/dev/zero")
    return path


def test_a_regular_file_and_a_symlink_to_one_are_read(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("1\n2\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    assert read_text_bounded(real, kind="trace", limit_bytes=100) == "1\n2\n"
    assert read_text_bounded(link, kind="trace", limit_bytes=100) == "1\n2\n"


def test_a_fifo_a_device_and_a_directory_are_refused_at_once(tmp_path, fifo, zeros):
    with pytest.raises(InputError, match=r"pipe.json: is a FIFO, not a regular file; a trace must be a regular"):
        finishes(lambda: read_text_bounded(fifo, kind="trace", limit_bytes=100))
    with pytest.raises(InputError, match=r"zeros.json: is a device, not a regular file"):
        finishes(lambda: read_text_bounded(zeros, kind="trace", limit_bytes=100))
    with pytest.raises(InputError, match=r"is a directory"):
        read_text_bounded(tmp_path, kind="trace", limit_bytes=100)
    with pytest.raises(InputError, match=r"missing.txt: cannot be read: No such file"):
        read_text_bounded(tmp_path / "missing.txt", kind="trace", limit_bytes=100)


def test_the_cap_of_the_kind_is_stated_and_binary_is_refused(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("x" * 101)
    with pytest.raises(InputError, match=r"is larger than the 100 bytes a trace may be"):
        read_text_bounded(big, kind="trace", limit_bytes=100)
    assert read_text_bounded(big, kind="trace", limit_bytes=101) == "x" * 101
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"12\n\xff\xfe\x00")
    with pytest.raises(InputError, match=r"binary.txt: is not UTF-8 text \(byte 3\)"):
        read_text_bounded(binary, kind="token-length file", limit_bytes=100)


def test_every_reader_refuses_a_fifo_and_dev_zero_in_one_line(fifo, zeros):
    for path in (fifo, zeros):
        with pytest.raises(ResultsError, match=rf"{path.name}: \(file\): is a (FIFO|device), not a regular file"):
            finishes(lambda path=path: read_document(path))
        with pytest.raises(TraceError, match=rf"{path.name}: is a (FIFO|device)"):
            finishes(lambda path=path: trace_arrivals(path))
        with pytest.raises(ValueError, match=rf"{path.name}: is a (FIFO|device)"):
            finishes(lambda path=path: Lengths.from_file(path))
        with pytest.raises(PublishedDataError, match=r"is a (FIFO|device)"):
            finishes(lambda path=path: read_published(path))


def test_a_binary_lengths_file_is_one_line(tmp_path):
    binary = tmp_path / "lengths.bin"
    binary.write_bytes(b"\x00\xff\xfe\x81" * 10)
    with pytest.raises(Refused, match=r"--prompt-tokens: .*lengths.bin: is not UTF-8 text"):
        parse_lengths(f"file:{binary}", "--prompt-tokens", 8192)
