"""A page's widgets and its URL kept in step: each widget holds one field of the page's form dataclass in
``st.session_state`` under ``<prefix><field>``, and the URL holds the whole form (``planner.ui.url_form``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import streamlit as st

Form = TypeVar("Form")


def load_url_into_widgets(prefix: str, read: Callable[[Mapping[str, str]], tuple[Any, list[str]]]) -> list[str]:
    """On first load, a shared link or back/forward, put the URL's form (``read``) into the widgets. Returns the
    lines ``read`` gave for values it ignored; nothing when the URL is the one the widgets already hold."""
    url = st.query_params.to_dict()
    if st.session_state.get(prefix + "url") == url:
        return []
    form, problems = read(url)
    for field in dataclasses.fields(form):
        value = getattr(form, field.name)
        st.session_state[prefix + field.name] = list(value) if isinstance(value, tuple) else value
    st.session_state[prefix + "url"] = url
    return problems


def form_from_widgets(prefix: str, default: Form) -> Form:
    """The form the widgets hold, each value in its field's type (``default`` where a widget is not drawn)."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(default):  # type: ignore[arg-type]
        fallback = getattr(default, field.name)
        value = st.session_state.get(prefix + field.name, fallback)
        if isinstance(fallback, bool):
            value = bool(value)
        elif isinstance(fallback, tuple):
            value = tuple(value or ())
        elif isinstance(fallback, int):
            value = int(value or 0)
        elif isinstance(fallback, float):
            value = float(value or 0.0)
        values[field.name] = value
    return dataclasses.replace(default, **values)  # type: ignore[type-var]


def write_url(prefix: str, query: dict[str, str]) -> None:
    """Put the form's parameters in the URL; Streamlit pushes a browser-history entry, so back returns to the last
    answer."""
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)
    st.session_state[prefix + "url"] = query
