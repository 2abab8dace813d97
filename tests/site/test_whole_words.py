"""Table cells keep words with hyphens, dashes and slashes on one line (benchmarks/site/whole_words.py)."""

from __future__ import annotations

from benchmarks.site.whole_words import keep_table_words_whole

WHOLE = '<span class="whole">{}</span>'


def test_a_hyphenated_word_in_a_cell_is_kept_whole():
    html = "<table><tr><td>TensorRT-LLM on two GPUs</td><th>(116–151)</th></tr></table>"
    assert keep_table_words_whole(html) == (
        f"<table><tr><td>{WHOLE.format('TensorRT-LLM')} on two GPUs</td>"
        f"<th>{WHOLE.format('(116–151)')}</th></tr></table>"
    )


def test_text_outside_cells_and_words_without_breaks_are_left_alone():
    html = "<p>TensorRT-LLM</p><table><tr><td>plain words, 1,024</td></tr></table><p>a/b</p>"
    assert keep_table_words_whole(html) == html


def test_code_math_and_svg_inside_a_cell_are_left_alone():
    html = "<td><code>--max-num-seqs</code> <math><mi>a-b</mi></math> <svg><text>x-y</text></svg> train/decode</td>"
    assert keep_table_words_whole(html) == (
        "<td><code>--max-num-seqs</code> <math><mi>a-b</mi></math> <svg><text>x-y</text></svg> "
        f"{WHOLE.format('train/decode')}</td>"
    )


def test_tags_attributes_and_entities_are_never_split():
    html = '<td><a href="runs/cpu-x.json" title="a-b">run-1</a> &amp;-ok<br/>x-y<!-- a-b --></td>'
    assert keep_table_words_whole(html) == (
        f'<td><a href="runs/cpu-x.json" title="a-b">{WHOLE.format("run-1")}</a> {WHOLE.format("&amp;-ok")}<br/>'
        f"{WHOLE.format('x-y')}<!-- a-b --></td>"
    )


def test_a_lone_dash_or_a_leading_minus_is_not_wrapped():
    html = "<td>— -5 –</td>"
    assert keep_table_words_whole(html) == html
