"""gpu-planner web app: page setup only; the pieces live in planner/ui."""

from __future__ import annotations

from planner.ui.catalog_page import render_catalog_page

render_catalog_page()
