"""`python -m benchmarks calibrate`: writes the calibration every forecast reads, and --check says whether the
committed one is a fresh fit."""

import json

from benchmarks.analysis.roofline import calibration_file
from benchmarks.commands.cli import main


def test_calibrate_writes_the_file_and_check_tells_a_stale_one(tmp_path, capsys):
    out = tmp_path / "calibration.json"
    assert main(["calibrate", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == calibration_file.CALIBRATION_FILE.read_text(encoding="utf-8")
    assert "published figures from" in said and "median |error|" in said and str(out) in said
    assert main(["calibrate", "--check", "--out", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    doc["figures"] += 1
    out.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["calibrate", "--check", "--out", str(out)]) == 1
    assert "differs from a fresh fit" in capsys.readouterr().out
