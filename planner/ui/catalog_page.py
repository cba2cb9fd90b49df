"""The catalog page: each provider's price age, the offerings, and one offering's price across snapshots."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from planner import api, report
from planner.catalog.query import spot_note_legend
from planner.catalog.schema import PROVIDERS
from planner.catalog.tpu import ACCELERATOR_KINDS
from planner.ui.cache import cached_catalog, cached_history, cached_status

# The compact offers view (planner.report), plus what a buyer checks next.
OFFER_COLUMNS = [*report.OFFER_TABLE_COLUMNS, "spot_interruption", "availability", "as_of"]


def _freshness(status: pd.DataFrame) -> None:
    """One metric per provider: how old its prices are, and whether they are bundled or refreshed."""
    st.subheader("Price age per provider")
    rows = report.records(status)
    for col, row in zip(st.columns(max(1, len(rows))), rows, strict=False):
        stale = " (stale)" if row.get("stale") else ""
        col.metric(
            f"{row['provider']} ({row['kind']}){stale}",
            f"{float(row['age_hours']) / 24:,.0f} days",
            help=f"{report.age_text(float(row['age_hours']))} old: prices as of {row['as_of']}; "
            f"{row['rows']} offerings; source: {row['source']}",
        )
    with st.expander("Catalog snapshots"):
        st.dataframe(status, hide_index=True)


def _history_chart(history: pd.DataFrame) -> alt.Chart:
    """On-demand and spot price of one offering at every snapshot, one line per zone and pricing, at the date each
    price was read (``as_of``): a bundled snapshot's prices are months older than the day it was loaded."""
    long = history.melt(
        id_vars=["as_of", "created_at", "zone"],
        value_vars=["price_usd_per_hour", "spot_price_usd_per_hour"],
        var_name="pricing",
        value_name="usd_per_hour",
    ).dropna(subset=["usd_per_hour"])
    long["pricing"] = long["pricing"].map({"price_usd_per_hour": "on-demand", "spot_price_usd_per_hour": "spot"})
    chart: alt.Chart = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("as_of:T", title="price as of", axis=alt.Axis(format="%Y-%m-%d", tickCount=6)),
            y=alt.Y("usd_per_hour:Q", title="USD per instance-hour", scale=alt.Scale(zero=False)),
            color=alt.Color("pricing:N", scale=alt.Scale(domain=["on-demand", "spot"])),
            strokeDash=alt.StrokeDash("zone:N", title="zone"),
            tooltip=["as_of", "created_at", "zone", "pricing", alt.Tooltip("usd_per_hour:Q", format=".4f")],
        )
        .properties(height=300)
    )
    return chart


def _price_history(frame: pd.DataFrame) -> None:
    st.subheader("Price history")
    if frame.empty:
        st.info("No offering matches the filters.")
        return
    offerings = frame[["provider", "instance_type", "region"]].drop_duplicates()
    labels = [f"{p} {i} {r}" for p, i, r in offerings.itertuples(index=False, name=None)]
    chosen = st.selectbox("Offering", range(len(labels)), format_func=lambda i: labels[i], key="catalog.history")
    provider, instance_type, region = offerings.iloc[int(chosen or 0)]
    history = cached_history(str(instance_type), str(region), str(provider))
    snapshots = history["snapshot_id"].nunique()
    held = "1 snapshot holds" if snapshots == 1 else f"{snapshots} snapshots hold"
    st.caption(f"{held} this offering; each refresh adds one.")
    st.altair_chart(_history_chart(history), width="stretch")


def render_catalog_page() -> None:
    """Catalog freshness per provider, a filterable table of offerings, and a price-history chart."""
    st.title("GPU offerings")
    catalog, status = cached_catalog(), cached_status()
    _freshness(status)
    left, middle, right, last = st.columns(4)
    gpus = left.multiselect("GPU", sorted(catalog["gpu"].unique()), default=[])
    providers = middle.multiselect("Provider", list(PROVIDERS), default=[])
    accelerator = right.radio("Accelerators", ACCELERATOR_KINDS, horizontal=True, key="catalog.accelerator")
    spot = last.toggle("Spot only")
    frame = api.offers(
        gpu=gpus or None, provider=providers or None, spot=spot, accelerator=str(accelerator), catalog=catalog
    )
    st.subheader(f"{len(frame)} offerings")
    st.dataframe(frame[[c for c in OFFER_COLUMNS if c in frame.columns]], hide_index=True)
    for label, meaning in spot_note_legend(frame["spot_note"]) if "spot_note" in frame.columns else []:
        st.caption(f"spot note **{label}**: {meaning}")
    st.download_button("Download CSV", report.to_csv(frame), file_name="gpu-offerings.csv", mime="text/csv")
    _price_history(frame)
