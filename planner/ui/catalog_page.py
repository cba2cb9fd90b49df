"""The catalog page: every offering of the bundled or refreshed catalog, with its freshness."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner import api


@st.cache_data(ttl=300, show_spinner=False)
def _catalog() -> tuple[pd.DataFrame, pd.DataFrame]:
    return api.load_catalog(), api.catalog_status()


def render_catalog_page() -> None:
    """Catalog freshness per provider, then a filterable table of offerings."""
    st.set_page_config(page_title="gpu-planner", layout="wide")
    st.title("gpu-planner: cloud GPU offerings")
    catalog, status = _catalog()
    st.subheader("Catalog freshness")
    st.dataframe(status, hide_index=True)
    gpus = sorted(catalog["gpu"].unique())
    chosen = st.multiselect("GPU", gpus, default=[])
    frame = api.offers(gpu=chosen or None, catalog=catalog)
    st.subheader(f"{len(frame)} offerings")
    st.dataframe(frame, hide_index=True)
