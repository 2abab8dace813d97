"""The nearest-rank percentile: always one of the samples, the one a budget is checked against."""

import pytest

from benchmarks.contract.percentiles import nearest_rank


def test_the_p90_of_ten_samples_is_the_ninth_smallest_whatever_their_order():
    assert nearest_rank([10, 3, 7, 1, 9, 2, 8, 4, 6, 5], 0.9) == 9


def test_the_median_of_an_even_count_is_the_upper_middle_sample():
    assert nearest_rank([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0
    assert nearest_rank([1, 2, 3, 4, 5], 0.5) == 3


def test_a_high_percentile_of_few_samples_is_the_slowest():
    assert nearest_rank([0.2, 0.5, 0.1], 0.99) == 0.5
    assert nearest_rank([7], 0.9) == 7


@pytest.mark.parametrize("share", [0, -0.1, 1.5, 90])
def test_a_share_outside_zero_to_one_is_refused(share):
    with pytest.raises(ValueError, match="share"):
        nearest_rank([1, 2, 3], share)


def test_no_samples_is_refused():
    with pytest.raises(ValueError, match="no values"):
        nearest_rank([], 0.5)
