"""Streamlit page script: the estimate page (see planner/ui/estimate_page.py)."""

from planner.ui.estimate_page import render_estimate_page

render_estimate_page()
