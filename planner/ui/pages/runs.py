"""Streamlit page script: the runs page (see planner/ui/runlogs_page.py)."""

from planner.ui.runlogs_page import render_runlogs_page

render_runlogs_page()
