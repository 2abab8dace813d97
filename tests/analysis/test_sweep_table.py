"""The sweep's terminal table (also the report's) on SYNTHETIC sweeps: its 'found by' column says which step chose a
batch, and a row whose timing the final pass did not replace says so."""

from benchmarks.site.sweep_table import table_lines
from tests.synthetic import make_sweep


def test_the_table_says_every_timing_is_the_final_pass_s_and_names_the_exceptions():
    doc = make_sweep(batches=(1, 2, 4))  # SYNTHETIC: 9 samples per point, as its settings ask
    doc["points"][2]["timing"]["samples_s"] = doc["points"][2]["timing"]["samples_s"][:5]  # cut short
    lines = table_lines(doc)
    assert "every timing is from the final pass, 9 samples each, unless its row says otherwise" in lines[1]
    assert lines[2].split()[:3] == ["batch", "found", "by"]
    rows = {int(line.split()[0]): line for line in lines[3:]}
    assert "final pass did not reach it" not in rows[1] + rows[2]
    assert rows[4].endswith("(5 samples: the final pass did not reach it)")
