"""Every st.cache_* wrapper of the app lives here, and nowhere below planner/ui."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner import api
from planner.cost.rank import RankResult
from planner.ui.plan_state import PlanForm, build_workload, rank_arguments


@st.cache_data(ttl=300, show_spinner=False)
def cached_catalog() -> pd.DataFrame:
    """The current catalog (re-read every five minutes, so a refresh shows up)."""
    return api.load_catalog()


@st.cache_data(ttl=300, show_spinner=False)
def cached_status() -> pd.DataFrame:
    """Per provider: rows, bundled or live, as_of, age."""
    return api.catalog_status()


@st.cache_resource(ttl=300, max_entries=64, show_spinner="Ranking every offering ...")
def cached_rank(form: PlanForm) -> RankResult:
    """``api.rank`` of a form; the same form (a shared link, back and forward) answers from memory.

    A resource cache: the result is shared read-only between sessions instead of copied on every rerun.
    """
    return api.rank(build_workload(form), catalog=cached_catalog(), **rank_arguments(form))


@st.cache_data(ttl=300, show_spinner=False)
def cached_history(instance_type: str, region: str, provider: str) -> pd.DataFrame:
    """The price of one offering across every stored snapshot."""
    return api.catalog_history(instance_type, region, provider=provider)
