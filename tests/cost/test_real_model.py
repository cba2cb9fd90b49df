"""rank() with the real performance model: one model call per distinct configuration, reasons from the model."""

from __future__ import annotations

from typing import Any

import pandas as pd
from factories import make_offer

from planner.api import rank
from planner.perf.model import estimate


def _regions_and_zones() -> pd.DataFrame:
    rows = [
        make_offer(region=region, zone=f"{region}-{zone}", spot_price_usd_per_hour=20.0 + i)
        for i, (region, zone) in enumerate((r, z) for r in ("us-east-1", "us-west-2", "eu-west-1") for z in "ab")
    ]
    rows.append(make_offer(instance_type="p3.16xlarge", gpu="V100-16GB", gpu_memory_gib=16.0, network_gbps=25.0,
                           interconnect="nvlink", price_usd_per_hour=24.48, spot_price_usd_per_hour=7.3))  # fmt: skip
    return pd.DataFrame(rows)


def test_one_model_call_per_distinct_configuration() -> None:
    calls: list[tuple[Any, ...]] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append((args[1:], tuple(sorted(kwargs.items()))))
        return estimate(*args, **kwargs)

    result = rank("llama-3-8b", catalog=_regions_and_zones(), estimator=counting, tokens=2e9, max_nodes=2)
    # Two hardware configurations (p5, p3) x two node counts, whatever the number of regions and zones.
    assert len(calls) == 4
    assert len(set(calls)) == 4
    p5 = result.table[result.table["instance_type"] == "p5.48xlarge"]
    assert set(p5["region"]) == {"us-east-1", "us-west-2", "eu-west-1"}
    # Zones collapse to the cheaper spot price of each region.
    spot = p5[(p5["pricing"] == "spot") & (p5["nodes"] == 1)].set_index("region")
    assert spot.loc["us-east-1", "zone"] == "us-east-1-a"
    assert spot.loc["us-east-1", "price_usd_per_hour"] == 20.0


def test_more_nodes_finish_sooner_with_the_real_model() -> None:
    result = rank("llama-3-8b", catalog=_regions_and_zones(), tokens=2e9, max_nodes=2, region="us-east-1")
    on_demand = result.table[(result.table["pricing"] == "on-demand") & (result.table["gpu"] == "H100-SXM")]
    by_nodes = on_demand.set_index("nodes")["time_to_solution_hours"]
    assert by_nodes[2] < by_nodes[1]


def test_model_reasons_reach_the_exclusions() -> None:
    result = rank("llama-3-8b", catalog=_regions_and_zones(), tokens=2e9, precision="fp8")
    reasons = result.excluded.set_index("instance_type")["reason"]
    assert "fp8 is not supported on V100-16GB" in reasons["p3.16xlarge"]
    big = rank("llama-3-70b", catalog=_regions_and_zones(), tokens=1e9, gpu="V100")
    assert big.empty
    assert big.message is not None and big.message.startswith(
        "no offering can run this job on up to 1 instance; the closest, aws p3.16xlarge (8 x V100-16GB each), would "
        "hold it on 12 instances. On 1 instance: needs "
    )


def test_a_given_batch_is_stated_in_the_ranking_and_changes_its_times() -> None:
    catalog = _regions_and_zones()
    chosen = rank("resnet50", catalog=catalog, precision="fp16", region="us-east-1", pricing="on-demand")
    given = rank(
        "resnet50", catalog=catalog, precision="fp16", region="us-east-1", pricing="on-demand", global_batch=64
    )
    assert not any(line.startswith("batch:") for line in chosen.assumptions)
    assert "batch: global batch 64 samples per step, as given" in "\n".join(given.assumptions)
    # 64 images over 8 GPUs is 8 per GPU: a smaller batch than the search would choose, so a slower run.
    hours = {
        name: r.table.set_index("instance_type")["time_to_solution_hours"] for name, r in (("c", chosen), ("g", given))
    }
    assert hours["g"]["p5.48xlarge"] > hours["c"]["p5.48xlarge"]
