"""The app beyond this machine: signed-in users only (Streamlit's OIDC login), or open only when told so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.ui.access import OPEN_ENV, loopback, refusal

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


@pytest.mark.parametrize(
    ("address", "local"), [("127.0.0.1", True), ("localhost", True), ("::1", True), ("0.0.0.0", False), ("", False)]
)
def test_loopback_addresses(address: str, local: bool) -> None:
    assert loopback(address) is local


def test_beyond_this_machine_needs_sign_in_or_an_explicit_open() -> None:
    assert refusal("127.0.0.1", auth_configured=False, open_ok=False) is None
    reason = refusal("0.0.0.0", auth_configured=False, open_ok=False)
    assert reason is not None and "[auth]" in reason and f"{OPEN_ENV}=1" in reason
    assert "every interface" in (refusal("", auth_configured=False, open_ok=False) or "")  # unset: every interface
    assert refusal("0.0.0.0", auth_configured=True, open_ok=False) is None
    assert refusal("0.0.0.0", auth_configured=False, open_ok=True) is None


@pytest.fixture
def served_everywhere() -> Iterator[None]:
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    try:
        yield
    finally:
        config.set_option("server.address", before)


def test_the_app_on_every_interface_without_sign_in_shows_only_why(
    served_everywhere: None, isolated_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv(OPEN_ENV, raising=False)
    app = AppTest.from_file(APP, default_timeout=60).run()
    assert not app.exception, app.exception
    assert app.error[0].value.startswith("gpu-planner listens on 0.0.0.0 with no sign-in")
    assert not app.metric and not app.dataframe  # no answer, no catalog shown
    # Configured sign-in: a sign-in button and nothing else until the user has signed in.
    signed = AppTest.from_file(APP, default_timeout=60)
    signed.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32}
    signed.run()
    assert not signed.exception, signed.exception
    assert [b.label for b in signed.button] == ["Sign in"] and not signed.metric
    # Open on purpose: the answer as on this machine.
    monkeypatch.setenv(OPEN_ENV, "1")
    opened = AppTest.from_file(APP, default_timeout=60).run()
    assert not opened.exception, opened.exception
    assert not opened.error and opened.metric
