"""The catalog page: every offering of the bundled or refreshed catalog, with its freshness."""

from __future__ import annotations

import streamlit as st

from planner import api, report
from planner.ui.cache import cached_catalog, cached_status


def render_catalog_page() -> None:
    """Catalog freshness per provider, then a filterable table of offerings."""
    st.title("GPU offerings")
    catalog, status = cached_catalog(), cached_status()
    st.subheader("Catalog freshness")
    st.dataframe(status, hide_index=True)
    left, middle, right = st.columns(3)
    gpus = left.multiselect("GPU", sorted(catalog["gpu"].unique()), default=[])
    providers = middle.multiselect("Provider", ["aws", "gcp", "azure"], default=[])
    spot = right.toggle("Spot only")
    frame = api.offers(gpu=gpus or None, provider=providers or None, spot=spot, catalog=catalog)
    st.subheader(f"{len(frame)} offerings")
    st.dataframe(frame, hide_index=True)
    st.download_button("Download CSV", report.to_csv(frame), file_name="gpu-offerings.csv", mime="text/csv")
