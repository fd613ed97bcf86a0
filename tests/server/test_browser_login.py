"""A browser signs in with a form and then carries a cookie; the cookie cannot be used from another site.

Real uvicorn on loopback; each request is built by hand so the test decides exactly which cookie,
Origin and Authorization headers go out (as a browser, a forging page, or an API client would send them).
"""

from __future__ import annotations

import re

import httpx2 as httpx
import pytest

from .helpers import Server

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _origin(server: Server) -> str:
    return server.base  # http://127.0.0.1:<port>, what a browser sends from the page


def _sign_in(server: Server, next_path: str = "/") -> str:
    """The `name=value` the server sets, from the form a person submits."""
    with httpx.Client(base_url=server.base, timeout=10) as client:
        response = client.post("/login", content=f"token={server.token}&next={next_path}",
                               headers={**FORM, "origin": _origin(server)})
    assert response.status_code == 303, response.text
    return response.headers["set-cookie"].split(";", 1)[0]


def _request(server: Server, method: str, path: str, *, cookie: str | None = None, origin: str | None = None,
             bearer: str | None = None, json: object = None) -> httpx.Response:
    headers = {}
    if cookie is not None:
        headers["cookie"] = cookie
    if origin is not None:
        headers["origin"] = origin
    if bearer is not None:
        headers["authorization"] = f"Bearer {bearer}"
    with httpx.Client(base_url=server.base, timeout=10) as client:
        return client.request(method, path, headers=headers, json=json)


@pytest.mark.parametrize("path", ["/", "/docs", "/redoc"])
def test_a_page_opened_without_the_token_asks_for_it_with_a_form_not_json(server: Server, path: str) -> None:
    response = _request(server, "GET", path)
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    assert re.search(r'<form[^>]*method="post"[^>]*action="/login"', page)
    assert 'name="token"' in page and 'type="password"' in page
    assert f'name="next" value="{path}"' in page  # back to the page asked for, once signed in
    csp = response.headers["content-security-policy"]
    assert "form-action 'self'" in csp and "script-src" not in csp  # the form needs no script
    # The API itself still answers JSON.
    api = _request(server, "GET", "/api/sessions")
    assert api.status_code == 401 and api.json()["detail"].startswith("missing or wrong bearer token")


def test_the_form_signs_the_browser_in_with_a_guarded_cookie(server: Server) -> None:
    with httpx.Client(base_url=server.base, timeout=10) as client:
        response = client.post("/login", content=f"token={server.token}&next=/docs",
                               headers={**FORM, "origin": _origin(server)})
    assert response.status_code == 303 and response.headers["location"] == "/docs"
    cookie = response.headers["set-cookie"]
    attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes
    assert not any(a.startswith(("max-age", "expires", "domain")) for a in attributes)  # this session only
    name, value = cookie.split(";", 1)[0].split("=", 1)
    port = server.base.rsplit(":", 1)[1]
    assert name == f"nova_{port}"  # cookies ignore ports: each server keeps its own
    assert server.token not in value  # the cookie is not the token
    pair = f"{name}={value}"
    docs = _request(server, "GET", "/docs", cookie=pair)
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert _request(server, "GET", "/openapi.json", cookie=pair).status_code == 200
    assert _request(server, "GET", "/api/sessions", cookie=pair).json() == []
    page = _request(server, "GET", "/", cookie=pair)
    assert page.status_code == 200 and 'id="composer"' in page.text


def test_a_wrong_token_shows_the_form_again_and_sets_nothing(server: Server) -> None:
    with httpx.Client(base_url=server.base, timeout=10) as client:
        response = client.post("/login", content="token=not-the-token&next=/docs", headers=FORM)
    assert response.status_code == 401
    assert "set-cookie" not in response.headers
    assert "not this server's token" in response.text and 'value="/docs"' in response.text


@pytest.mark.parametrize("next_path", ["//evil.example/", "https://evil.example/", "/api/sessions", "/%2F%2Fevil"])
def test_sign_in_sends_the_browser_only_to_a_page_of_this_server(server: Server, next_path: str) -> None:
    with httpx.Client(base_url=server.base, timeout=10) as client:
        response = client.post("/login", params=None, content=f"token={server.token}&next={next_path}",
                               headers=FORM)
    assert response.status_code == 303 and response.headers["location"] == "/"


def test_a_sign_in_posted_from_another_site_is_refused(server: Server) -> None:
    with httpx.Client(base_url=server.base, timeout=10) as client:
        response = client.post("/login", content=f"token={server.token}",
                               headers={**FORM, "origin": "http://evil.example"})
    assert response.status_code == 403 and "set-cookie" not in response.headers


def test_a_cookie_request_that_changes_something_needs_this_servers_origin(server: Server) -> None:
    cookie = _sign_in(server)
    port = int(server.base.rsplit(":", 1)[1])
    # Forged: no Origin, another site, another server on this same machine (same site for SameSite).
    for origin in (None, "null", "http://evil.example", f"http://127.0.0.1:{port + 1}", f"http://localhost:{port}"):
        response = _request(server, "POST", "/api/sessions", cookie=cookie, origin=origin, json={"title": "forged"})
        assert response.status_code == 403, (origin, response.status_code)
        assert _request(server, "DELETE", "/api/memory/anything", cookie=cookie, origin=origin).status_code == 403
    assert _request(server, "GET", "/api/sessions", cookie=cookie).json() == []  # nothing was made
    # From the page itself.
    made = _request(server, "POST", "/api/sessions", cookie=cookie, origin=_origin(server), json={"title": "mine"})
    assert made.status_code == 201, made.text


def test_the_cookie_is_no_bearer_token_and_the_token_is_no_cookie(server: Server) -> None:
    name, value = _sign_in(server).split("=", 1)
    assert _request(server, "GET", "/api/sessions", bearer=value).status_code == 401
    assert _request(server, "GET", "/api/sessions", cookie=f"{name}={server.token}").status_code == 401
    assert _request(server, "GET", "/api/sessions", cookie=f"nova_1={value}").status_code == 401  # another port's


def test_api_clients_with_the_header_need_no_origin(server: Server) -> None:
    response = _request(server, "POST", "/api/sessions", bearer=server.token, json={"title": "script"})
    assert response.status_code == 201
    # A header no page elsewhere can make a browser send: a foreign Origin does not matter.
    response = _request(server, "POST", "/api/sessions", bearer=server.token, origin="http://evil.example",
                        json={"title": "script 2"})
    assert response.status_code == 201


def test_sign_out_ends_the_cookie(server: Server) -> None:
    cookie = _sign_in(server)
    assert _request(server, "POST", "/logout", cookie=cookie).status_code == 403  # no Origin: not from the page
    response = _request(server, "POST", "/logout", cookie=cookie, origin=_origin(server))
    assert response.status_code == 204
    cleared = response.headers["set-cookie"]
    assert cleared.split("=", 1)[0] == cookie.split("=", 1)[0] and "max-age=0" in cleared.lower()
