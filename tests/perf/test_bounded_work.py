"""Inputs that cannot change the answer past a point are refused, and the layout search stays fast near the cap."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.api import estimate
from planner.errors import InputError
from planner.perf.layout import _all_divisors, _micro_batches
from planner.perf.workloads import MAX_GLOBAL_BATCH, get_workload


def _old_micro_batches(share: int, wanted: int) -> list[int]:
    # The scan the divisor list replaced (it took minutes for a global batch of 1e9).
    sizes = [m for m in range(min(wanted, share), 0, -1) if share % m == 0]
    if share > wanted and sizes[0] * 2 <= wanted:
        sizes.insert(0, min(m for m in range(wanted + 1, share + 1) if share % m == 0))
    return sizes


@given(st.integers(min_value=1, max_value=20_000))
def test_all_divisors_are_the_divisors(value: int) -> None:
    assert _all_divisors(value) == [d for d in range(1, value + 1) if value % d == 0]


@given(st.integers(min_value=1, max_value=5_000), st.integers(min_value=1, max_value=64), st.integers(1, 512))
def test_micro_batches_are_those_of_the_scan(global_batch: int, dp: int, wanted: int) -> None:
    job = dataclasses.replace(get_workload("bert-large"), global_batch=max(global_batch, dp))
    share = max(1, job.global_batch // dp)  # type: ignore[operator]
    assert _micro_batches(job, dp, wanted) == _old_micro_batches(share, wanted)


def test_a_global_batch_past_any_layout_is_one_line() -> None:
    with pytest.raises(InputError, match=r"^global_batch must be at most 1,048,576, got 999999999$"):
        estimate("llama-3-8b", "H100", gpus=8, global_batch=999_999_999)
    at_cap = estimate("llama-3-8b", "H100", gpus=8, global_batch=MAX_GLOBAL_BATCH)
    assert at_cap.throughput is not None
