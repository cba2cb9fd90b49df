"""Every st.cache_* wrapper of the app lives here, and nowhere below planner/ui."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner import api


@st.cache_data(ttl=300, show_spinner=False)
def cached_catalog() -> pd.DataFrame:
    """The current catalog (re-read every five minutes, so a refresh shows up)."""
    return api.load_catalog()


@st.cache_data(ttl=300, show_spinner=False)
def cached_status() -> pd.DataFrame:
    """Per provider: rows, bundled or live, as_of, age."""
    return api.catalog_status()
