"""Streamlit page script: the catalog page (see planner/ui/catalog_page.py)."""

from planner.ui.catalog_page import render_catalog_page

render_catalog_page()
