"""Every st.cache_* wrapper of the app lives here, and nowhere below planner/ui."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner import api
from planner.cost.rank import RankResult
from planner.ui.plan_state import PlanForm, offer_filters, rank_request
from planner.ui.workload_inputs import form_workload


@st.cache_data(ttl=300, show_spinner=False)
def cached_catalog() -> pd.DataFrame:
    """The current catalog (re-read every five minutes, so a refresh shows up)."""
    return api.load_catalog()


@st.cache_data(ttl=300, show_spinner=False)
def cached_status() -> pd.DataFrame:
    """Per provider: rows, bundled or live, as_of, age."""
    return api.catalog_status()


def catalog_key(catalog: pd.DataFrame) -> tuple[object, ...]:
    """What identifies a catalog for the ranking cache: its size and each provider's newest price date.

    A refresh writes a new snapshot with a new ``as_of``, so a ranking cached on the old catalog is not reused.
    """
    newest = catalog.groupby("provider")["as_of"].max() if len(catalog) else pd.Series(dtype=object)
    return (len(catalog), *((str(p), str(t)) for p, t in newest.items()))


@st.cache_resource(ttl=300, max_entries=64, show_spinner="Ranking every offering ...")
def cached_rank(form: PlanForm, key: tuple[object, ...], _catalog: pd.DataFrame) -> RankResult:
    """``api.rank`` of a form on a catalog; the same form on the same catalog (a shared link, back and forward)
    answers from memory. ``key`` (``catalog_key``) names the catalog; ``_catalog`` itself is not hashed.

    A resource cache: the result is shared read-only between sessions instead of copied on every rerun.
    """
    return api.rank(form_workload(form), request=rank_request(form), catalog=_catalog, **offer_filters(form))


@st.cache_data(ttl=300, show_spinner=False)
def cached_history(instance_type: str, region: str, provider: str) -> pd.DataFrame:
    """The price of one offering across every stored snapshot."""
    return api.catalog_history(instance_type, region, provider=provider)


@st.cache_data(ttl=300, show_spinner="Planning a month of runs ...")
def cached_plan(form: PlanForm, key: tuple[object, ...], _catalog: pd.DataFrame) -> pd.DataFrame:
    """``api.plan`` of a form's job at its runs a month (term: the form's committed pricing, else 1 year)."""
    from planner.cost.commitment import COMMITTED_PRICINGS

    term = form.pricing if form.pricing in COMMITTED_PRICINGS else "1y"
    filters = {name: value for name, value in offer_filters(form).items() if name in ("provider", "region", "gpu")}
    return api.plan(
        form_workload(form),
        runs_per_month=form.runs_per_month,
        term=term,
        utilisation=form.utilisation,
        catalog=_catalog,
        max_nodes=form.max_nodes,
        precision=form.precision,
        **filters,
    )
