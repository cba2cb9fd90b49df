"""gpu-planner web app: page setup and navigation only; the pages live in planner/ui."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from planner import __version__
from planner.ui.access import allowed

PAGES = Path(__file__).resolve().parent / "planner" / "ui" / "pages"

st.set_page_config(page_title="gpu-planner", layout="wide")
if not allowed():  # beyond this machine: signed-in users only, unless served open on purpose
    st.stop()
navigation = st.navigation(
    [
        st.Page(PAGES / "plan.py", title="Plan a training run", default=True),  # served at /
        st.Page(PAGES / "estimate.py", title="Estimate", url_path="estimate"),
        st.Page(PAGES / "catalog.py", title="Catalog", url_path="catalog"),
        st.Page(PAGES / "runs.py", title="Your runs", url_path="runs"),
    ]
)
navigation.run()
# Under the page's own sidebar (the plan form): which release gave these answers.
st.sidebar.caption(f"gpu-planner {__version__}")
