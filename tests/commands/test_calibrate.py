"""`python -m benchmarks calibrate`: writes the calibration every forecast reads, and --check says whether the
committed one is a fresh fit."""

import json

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import percent
from benchmarks.analysis.serving.llm.engine_comparison import forecast_against_engine
from benchmarks.commands.cli import main
from benchmarks.contract.engine_check import newest_engine_check


def test_calibrate_writes_the_file_and_check_tells_a_stale_one(tmp_path, capsys):
    out = tmp_path / "calibration.json"
    assert main(["calibrate", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == calibration_file.CALIBRATION_FILE.read_text(encoding="utf-8")
    assert "published figures from" in said and "median |error|" in said and str(out) in said
    check = newest_engine_check()
    if check is not None:  # beside the GPUs: the same forecast against the real engine measured here, not fitted
        found = forecast_against_engine(check)
        assert f"engine check {check.id}, not fitted): {found.loads} Poisson loads" in said
        assert f"median |error| {percent(found.median)}, p90 {percent(found.p90)}" in said
    assert main(["calibrate", "--check", "--out", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    doc["figures"] += 1
    out.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["calibrate", "--check", "--out", str(out)]) == 1
    assert "differs from a fresh fit" in capsys.readouterr().out
