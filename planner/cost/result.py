"""The result of a ranking: the options table, what was left out and why, the assumptions, the cost lines."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planner.cost.lines import CostLine
from planner.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

# What the catalog flag spot_at_floor means where an option's number stands (rank's notes, the headline).
SPOT_FLOOR_NOTE = "spot price at the 90%-off floor in its zone: little spot capacity may trade there"
# An option whose GPU has no published measurements of this kind of model (CNN, encoder, decoder) in the calibration
# data: its time is the model's extrapolation.
UNCALIBRATED_NOTE = "GPU not calibrated for this kind of model (wider band)"
# A spot price this far under its type's median across regions has no second source behind it (Google's europe-north1
# A3 at 0.27x its regions' median, 2026): shown, marked, and never the headline unremarked.
SPOT_FAR_BELOW_SHARE = 0.5
SPOT_FAR_BELOW_MIN_REGIONS = 3
SPOT_FAR_BELOW_NOTE = "spot price under half its type's median across regions: unconfirmed, check it before buying"
RISKY_NOTE = "RISKY: the high scenario more than doubles time or cost"
# A buyer acting on the headline is told when its price is older than this (issue 38): spot prices move within
# days, and on-demand list prices change a few times a year; the catalog's own stale mark (STALE_AFTER_DAYS) is later.
HEADLINE_PRICE_AGE_DAYS = 14.0
# How many spot options the headline judges at a time when looking for the first actionable one.
PAIR_BLOCK = 256
# How many of the options passed over for the headline are named in its one line.
PASSED_OVER_NAMED = 2

# The columns of RankResult.table, in order; names are stable (scripts read them), units last.
TABLE_COLUMNS: tuple[str, ...] = (
    "rank",
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpus_per_node",
    "nodes",
    "pricing",
    "price_usd_per_hour",
    "price_per_gpu_usd_per_hour",
    "price_basis",
    "time_to_solution_hours",
    "time_low_hours",
    "time_high_hours",
    "cost_usd",
    "cost_low_usd",
    "cost_high_usd",
    "expected_interruptions",
    "p_no_interruption",
    "checkpoint_every_hours",
    "spot_risky",
    "energy_kwh",
    "energy_low_kwh",
    "energy_high_kwh",
    "co2_kg",
    "pareto",
    "price_as_of",
    "price_age_days",
    "price_stale",
    "available_now",
    "notes",
)
# The dtype of each table column that is not text: an empty table has them too, so results concatenate alike.
TABLE_DTYPES: dict[str, str] = {
    "rank": "int64",
    "nodes": "int64",
    "gpus_per_node": "int64",
    "spot_risky": "bool",
    "pareto": "bool",
    "price_stale": "bool",
    **{
        name: "float64"
        for name in TABLE_COLUMNS
        if name.endswith(("_usd", "_hours", "_kwh", "_per_hour", "_days"))
        or name in ("expected_interruptions", "p_no_interruption", "co2_kg")
    },
}


def empty_table() -> pd.DataFrame:
    """A table with no options and every column's dtype."""
    import pandas as pd

    return pd.DataFrame({name: pd.Series(dtype=TABLE_DTYPES.get(name, "object")) for name in TABLE_COLUMNS})


EXCLUDED_COLUMNS: tuple[str, ...] = (
    "provider",
    "instance_type",
    "gpu",
    "gpus_per_node",
    "nodes",
    "pricing",
    "offerings",
    "reason",
)
PRICING_NAMES = ("on-demand", "spot")


@dataclass(frozen=True, eq=False)
class RankResult:
    """Ranked options for one workload, what was left out and why, and the assumptions behind the numbers.

    ``table`` has one row per option (offering x nodes x pricing; zones of a region collapse to the cheapest),
    ``details`` the same rows' cost-line quantities, ``message`` says why ``table`` is empty when it is.
    """

    table: pd.DataFrame
    excluded: pd.DataFrame
    assumptions: list[str]
    catalog_as_of: str | None
    details: pd.DataFrame
    message: str | None = None
    notes: list[str] = field(default_factory=list)
    # Set when the best option takes over a year: that no option finishes within one, and what would.
    year_note: str | None = None
    # The stored snapshots the prices come from (provider, snapshot_id, as_of, kind, source); empty for a catalog
    # passed in as a DataFrame.
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    # What was asked, in words: workload, work, constraints and filters (the HTML report's first lines).
    question: dict[str, Any] = field(default_factory=dict)
    # Per provider, the catalog's price_source of the offerings ranked.
    price_sources: dict[str, list[str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """No option met the constraints (``message`` says why). A comparison whose every choice has only a row of
        blanks (its ``notes`` say why) is empty too."""
        return len(self.table) == 0 or bool(self.table["rank"].isna().all())

    def records(self) -> list[dict[str, Any]]:
        """The options as plain Python values (float, int, str, bool, None): one dict per row of ``table``."""
        import math

        return [
            {str(k): None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
            for row in self.table.to_dict("records")
        ]

    def _options(self) -> pd.DataFrame:
        # compare's table also holds a row per choice without an option (no rank): never a headline.
        return self.table[self.table["rank"].notna()]

    def headline(self) -> tuple[pd.Series | None, pd.Series | None]:
        """The headline pair: the best on-demand option beside the best spot option (None where there is none).

        "Best" follows the table's order; a spot option a buyer can act on (``actionable``) is preferred over one
        that is not.
        """
        return self._pair

    @functools.cached_property
    def _pair(self) -> tuple[pd.Series | None, pd.Series | None]:
        # Once per result: every face asks for it several times (headline, best, passed over), on thousands of rows.
        if self.empty:
            return None, None
        options = self._options()
        # Positions, not filtered copies of the whole table; the first actionable spot option is looked for a block
        # at a time (it is almost always among the first): judging every row's notes cost a tenth of the ranking.
        on_demand = (options["pricing"] == "on-demand").to_numpy().nonzero()[0]
        spot = (options["pricing"] == "spot").to_numpy().nonzero()[0]
        judged = options[["pricing", "notes", "spot_risky"]]
        best_spot = spot[:1]
        for start in range(0, len(spot), PAIR_BLOCK):
            block = spot[start : start + PAIR_BLOCK]
            safe = block[actionable(judged.iloc[block]).to_numpy()]
            if len(safe):
                best_spot = safe[:1]
                break
        return (
            options.iloc[on_demand[0]] if len(on_demand) else None,
            options.iloc[best_spot[0]] if len(best_spot) else None,
        )

    def best(self) -> pd.Series | None:
        """The answer: the best option a buyer can act on (``actionable``), else the best there is (None if none)."""
        pair = [row for row in self.headline() if row is not None]
        if not pair:
            return None
        usable = [row for row in pair if not caveats(row)[0]]
        return min(usable or pair, key=lambda row: int(row["rank"]))

    def passed_over(self) -> str | None:
        """One line naming the options ranked above ``best`` and why none of them is the answer (None if none)."""
        best = self.best()
        if best is None:
            return None
        options = self._options()
        above = options[options["rank"] < best["rank"]]
        if not len(above):
            return None
        named = [
            f"#{int(row['rank'])} {row['provider']} {row['instance_type']} {row['pricing']} ({row['region']}) "
            f"${row['cost_usd']:,.0f}: {', '.join(caveats(row)[0])}"
            for _, row in above.head(PASSED_OVER_NAMED).iterrows()
        ]
        more = f"; and {len(above) - len(named)} more like them" if len(above) > len(named) else ""
        return f"passed over {'; '.join(named)}{more}"

    def headline_lines(self) -> list[str]:
        """The answer in words: what stops every option finishing within a year (if anything), the best option
        (``best``) and what was passed over to reach it, then the best of the other pricing."""
        best = self.best()
        if best is None:
            return [self.year_note] if self.year_note else []
        others = [row for row in self.headline() if row is not None and int(row["rank"]) != int(best["rank"])]
        lines = [self.year_note, self.option_line(best), self.passed_over(), *map(self.option_line, others)]
        return [line for line in lines if line]

    def option_line(self, row: pd.Series) -> str:
        """One option in words: what stops a buyer first (risk, floor price, uncalibrated GPU), then what it costs,
        how long it takes, how risky a spot run is, and how old its price is."""
        warnings, explained = caveats(row)
        label = f"best {row['pricing']}" + "".join(f", {word.upper()}" for word in warnings)
        count = int(row["gpus_per_node"]) * int(row["nodes"])
        text = (
            f"{label}: {row['provider']} {int(row['nodes'])} x {row['instance_type']} ({row['region']}), "
            f"{count} {row['gpu']}, ${row['cost_usd']:,.0f} in {row['time_to_solution_hours']:,.1f} h"
        )
        if row["pricing"] == "spot":
            high = row["cost_high_usd"]
            band = f"${row['cost_low_usd']:,.0f}-{high:,.0f}" if high == high else "no upper bound"
            text += (
                f" (cost {band}; {row['expected_interruptions']:.2g} interruptions expected, "
                f"P(none) {row['p_no_interruption']:.0%})"
            )
        if row.get("available_now") == "false":
            # A capacity reading (Lambda) that says no: the best option may not start now.
            table = self.table
            others = table[(table["pricing"] == row["pricing"]) & (table["available_now"] != "false")]
            then = f"; the best that may have capacity is #{int(others.iloc[0]['rank'])}" if len(others) else ""
            text += f"; NO CAPACITY NOW in {row['region']} at the last refresh{then}"
        for reason in explained:
            text += f"; {reason}"
        age = price_age_text(row)
        return f"{text}; {age}" if age else text

    def to_html(self, *, top: int = 20) -> str:
        """The ranking as one self-contained HTML page (no network reference): question, answer, a cost-vs-time
        chart, the best ``top`` options, assumptions and the snapshots and sources of the prices."""
        from planner.report_html import html_report

        return html_report(self, top=top)

    def cost_lines(self, rank: int) -> list[CostLine]:
        """The named cost lines of the option ranked ``rank`` (1-based); they sum to its ``cost_usd``."""
        matches = (self.table["rank"] == rank).fillna(False).to_numpy(dtype=bool).nonzero()[0]
        if len(matches) == 0:
            raise InputError(f"no option ranked {rank}; ranks run from 1 to {len(self.table)}")
        row = self.details.iloc[int(matches[0])]
        return lines_for(row)

    def breakdown(self) -> pd.DataFrame:
        """Every option's cost lines in long form: rank, name, unit, quantity, unit_price_usd, cost_usd."""
        import pandas as pd

        records = [
            {
                "rank": int(rank),
                "name": line.name,
                "unit": line.unit,
                "quantity": line.quantity,
                "unit_price_usd": line.unit_price_usd,
                "cost_usd": line.cost_usd,
            }
            for rank, (_, row) in zip(self.table["rank"], self.details.iterrows(), strict=True)
            # A comparison's choice without an option has a row of blanks and no cost lines.
            if not pd.isna(rank)
            for line in lines_for(row)
        ]
        return pd.DataFrame.from_records(
            records, columns=["rank", "name", "unit", "quantity", "unit_price_usd", "cost_usd"]
        )


def caveats(row: pd.Series) -> tuple[list[str], list[str]]:
    """What stops a buyer acting on ``row``: short words for the headline's first words, and each in a sentence.

    The short words are those that make an option not ``actionable`` (a spot price at the floor, a RISKY spot run);
    an uncalibrated GPU only adds its sentence: its number is less sure, not less available.
    """
    notes = str(row.get("notes") or "")
    words, sentences = [], []
    if row["pricing"] == "spot" and bool(row["spot_risky"]):
        words.append("risky")
        sentences.append(RISKY_NOTE)
    if SPOT_FLOOR_NOTE in notes:
        words.append("at the spot floor")
        sentences.append(SPOT_FLOOR_NOTE)
    if row["pricing"] == "spot" and SPOT_FAR_BELOW_NOTE in notes:
        words.append("far below its other regions")
        sentences.append(SPOT_FAR_BELOW_NOTE)
    if UNCALIBRATED_NOTE in notes:
        sentences.append(f"{row['gpu']}: {UNCALIBRATED_NOTE}")
    return words, sentences


def price_age_text(row: pd.Series) -> str | None:
    """'price from 2026-07-09, 142 days old' when the option's price is older than HEADLINE_PRICE_AGE_DAYS."""
    age = row.get("price_age_days")
    if age is None or age != age or age <= HEADLINE_PRICE_AGE_DAYS:
        return None
    return f"price from {str(row['price_as_of'])[:10]}, {age:,.0f} days old"


def caveat_marks(options: pd.DataFrame) -> pd.Series:
    """' RISKY', ' FLOOR', ' RISKY FLOOR' or '' per option: the words to put after its pricing in a table."""
    spot = options["pricing"] == "spot"
    risky = spot & options["spot_risky"].astype(bool)
    floor = spot & _notes_say(options, SPOT_FLOOR_NOTE)
    low = spot & _notes_say(options, SPOT_FAR_BELOW_NOTE)
    return (
        risky.map({True: " RISKY", False: ""})
        + floor.map({True: " FLOOR", False: ""})
        + low.map({True: " LOW", False: ""})
    )


def actionable(options: pd.DataFrame) -> pd.Series:
    """Which options a buyer can act on as priced: not a RISKY spot run, not a spot price at the 90%-off floor."""
    spot = options["pricing"] == "spot"
    floor = _notes_say(options, SPOT_FLOOR_NOTE, SPOT_FAR_BELOW_NOTE)
    return ~(spot & (options["spot_risky"].astype(bool) | floor))


def _notes_say(options: pd.DataFrame, *texts: str) -> pd.Series:
    """Which options' notes contain any of ``texts``: asked once per distinct note (thousands of options share a
    few dozen notes; a search per row cost more than the ranking)."""
    import numpy as np
    import pandas as pd

    codes, notes = pd.factorize(options["notes"])
    # A missing note (code -1, the appended entry) says nothing.
    says = np.array([any(text in str(note) for text in texts) for note in notes] + [False], dtype=bool)
    return pd.Series(says[codes], index=options.index)


def lines_for(row: pd.Series) -> list[CostLine]:
    nodes = float(row["nodes"])
    price = float(row["price_usd_per_hour"])
    pricing = str(row["pricing"])
    # An owned server's hours cost its capital and operations; its electricity is a line of its own (cost/owned.py).
    owned = row.get("price_basis") == "owned"
    compute = "owned (capital and operations)" if owned else pricing
    lines = [
        CostLine(f"{compute} compute: training", "instance-hour", nodes * float(row["training_hours"]), price),
        CostLine(f"{compute} compute: start-up", "instance-hour", nodes * float(row["startup_hours"]), price),
    ]
    if pricing == "spot":
        if float(row["checkpoint_hours"]) > 0:
            lines.append(
                CostLine(
                    "spot compute: writing checkpoints", "instance-hour", nodes * float(row["checkpoint_hours"]), price
                )
            )
        lines.append(
            CostLine(
                "spot compute: expected rework and restarts after interruptions",
                "instance-hour",
                nodes * float(row["rework_hours"]),
                price,
            )
        )
        if float(row["wait_hours"]) > 0:
            # Shown for the time it takes; nothing is billed while the instances are released.
            lines.append(
                CostLine("spot: waiting for capacity (unbilled)", "instance-hour", nodes * float(row["wait_hours"]), 0)
            )
    rounding = nodes * (float(row["billed_hours"]) - float(row["held_hours"]))
    lines.append(CostLine(f"billing rounding ({row['billing']})", "instance-hour", rounding, price))
    if owned:
        kwh_price = float(row.get("electricity_usd_per_kwh", 0.0))
        lines.append(
            CostLine("owned: electricity (the run's facility energy)", "kWh", float(row["electricity_kwh"]), kwh_price)
        )
    return lines


def empty_result(
    assumptions: list[str], catalog_as_of: str | None, message: str, notes: list[str], excluded: pd.DataFrame
) -> RankResult:
    import pandas as pd

    return RankResult(
        table=empty_table(),
        excluded=excluded,
        assumptions=assumptions,
        catalog_as_of=catalog_as_of,
        details=pd.DataFrame(),
        message=message,
        notes=notes,
    )
