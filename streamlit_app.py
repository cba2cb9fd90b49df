"""gpu-planner web app: page setup and navigation only; the pages live in planner/ui."""

from __future__ import annotations

import streamlit as st

from planner.ui.catalog_page import render_catalog_page
from planner.ui.estimate_page import render_estimate_page
from planner.ui.plan_page import render_plan_page

st.set_page_config(page_title="gpu-planner", layout="wide")
pages = [
    st.Page(render_plan_page, title="Plan a training run", url_path="plan", default=True),
    st.Page(render_estimate_page, title="Estimate", url_path="estimate"),
    st.Page(render_catalog_page, title="Catalog", url_path="catalog"),
]
st.navigation(pages).run()
