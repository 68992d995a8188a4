"""First-Fit-Decreasing bins, checked against hand-packed examples."""

import random

import pytest

from mara_bench.harness.binpack import first_fit_decreasing


def test_ffd_places_longest_first_into_first_bin_with_room():
    # sorted: 60(i0) 50(i1) 30(i2) 30(i3); 60 opens bin0, 50 opens bin1, 30 -> bin0 (90), 30 -> bin1 (80)
    assert first_fit_decreasing([60, 50, 30, 30], 100) == [[0, 2], [1, 3]]


def test_ffd_beats_next_fit_on_a_classic_case():
    # sizes 5,7,5,2,4,2,5,1,6 with capacity 10: sum 37 -> lower bound 4, FFD reaches it
    bins = first_fit_decreasing([5, 7, 5, 2, 4, 2, 5, 1, 6], 10)
    assert bins == [[1, 3, 7], [8, 4], [0, 2], [6, 5]]
    sizes = [5, 7, 5, 2, 4, 2, 5, 1, 6]
    assert all(sum(sizes[i] for i in b) <= 10 for b in bins)


def test_over_long_item_sits_alone_and_everything_is_placed_once():
    bins = first_fit_decreasing([30, 250, 80, 20], 100)
    assert bins == [[1], [2, 3], [0]]
    assert sorted(i for b in bins for i in b) == [0, 1, 2, 3]


def test_empty_and_zero_length_items():
    assert first_fit_decreasing([], 10) == []
    assert first_fit_decreasing([0, 0], 10) == [[0, 1]]
    # an empty page never joins an over-long one (whose bin must hold it alone to be truncated)
    assert first_fit_decreasing([0, 15, 3], 10) == [[1], [2, 0]]


@pytest.mark.parametrize(("lengths", "capacity", "message"), [([1], 0, "capacity"), ([3, -1], 5, "negative")])
def test_bad_input_is_named(lengths, capacity, message):
    with pytest.raises(ValueError, match=message):
        first_fit_decreasing(lengths, capacity)


def test_random_packings_keep_every_invariant_of_first_fit_decreasing():
    rng = random.Random(7)
    for _ in range(200):
        capacity = rng.randint(5, 60)
        lengths = [rng.randint(0, 80) for _ in range(rng.randint(0, 25))]
        bins = first_fit_decreasing(lengths, capacity)
        assert sorted(i for b in bins for i in b) == list(range(len(lengths)))
        loads = [sum(lengths[i] for i in b) for b in bins]
        for b, load in zip(bins, loads, strict=True):
            assert load <= capacity or (len(b) == 1 and lengths[b[0]] > capacity)
        # first fit: each item of a bin that fits would not have fitted in any earlier fitting bin when placed,
        # so any two fitting bins together exceed the capacity (else the later one's items went to the earlier)
        fitting = [load for b, load in zip(bins, loads, strict=True) if load <= capacity and b]
        assert all(a + b > capacity for i, a in enumerate(fitting) for b in fitting[i + 1 :] if b > 0)
