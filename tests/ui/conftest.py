"""Fixtures of the app's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def clear_app_caches() -> Iterator[None]:
    """The app caches the catalog and its answers per process for five minutes: a test with its own store starts
    from it, and leaves no cached answer to the next test."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()
