"""Streamlit page script: the plan page (see planner/ui/plan_page.py)."""

from planner.ui.plan_page import render_plan_page

render_plan_page()
