"""Who may use the app: anyone on this machine; beyond it, only signed-in users (Streamlit's OIDC login) unless the
team says the server is open on purpose. The app has no control that refreshes prices or writes to the store, so a
visitor can only read."""

from __future__ import annotations

import ipaddress
import os

import streamlit as st

OPEN_ENV = "GPUPLAN_APP_OPEN"  # "1": serve beyond this machine without sign-in, knowingly


def loopback(address: str) -> bool:
    """Whether Streamlit's ``server.address`` serves this machine only (its default, unset, serves every interface)."""
    if address in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def refusal(address: str, auth_configured: bool, open_ok: bool) -> str | None:
    """Why the app must not serve pages (None: it may): listening beyond this machine with no sign-in configured."""
    if loopback(address) or auth_configured or open_ok:
        return None
    where = address or "every interface"
    return (
        f"gpu-planner listens on {where} with no sign-in: add an [auth] section (Streamlit's OIDC login) to "
        f".streamlit/secrets.toml, or set {OPEN_ENV}=1 to serve it open on purpose"
    )


def _auth_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all: Streamlit raises its own not-found error
        return False


def allowed() -> bool:
    """Gate the page: True to render it; else the page shows why (or a sign-in button) and the caller stops."""
    address = str(st.get_option("server.address") or "")
    configured = _auth_configured()
    reason = refusal(address, configured, os.environ.get(OPEN_ENV) == "1")
    if reason is not None:
        st.error(reason)
        return False
    if configured and not st.user.get("is_logged_in", False):
        st.title("gpu-planner")
        st.button("Sign in", on_click=st.login)
        return False
    return True
