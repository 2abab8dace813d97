"""The sweep's terminal table (also the report's) on SYNTHETIC sweeps: its 'found by' column says which step chose a
batch, and each row shows how many samples its timing rests on, so a row the final pass did not re-measure shows."""

from benchmarks.site.sweep_table import table_lines
from tests.synthetic import make_sweep


def test_each_row_says_which_step_found_it_and_how_many_samples_it_rests_on():
    doc = make_sweep(batches=(1, 2, 4))  # SYNTHETIC: 9 samples per point
    doc["points"][2]["timing"]["samples_s"] = doc["points"][2]["timing"]["samples_s"][:5]  # cut short
    lines = table_lines(doc)
    header = next(line for line in lines if "found by" in line)
    assert header.split()[:4] == ["batch", "found", "by", "samples"]
    rows = {int(line.split()[0]): line.split() for line in lines[lines.index(header) + 1 :]}
    assert rows[1][1:3] == ["search", "9"] and rows[4][1:3] == ["search", "5"]
