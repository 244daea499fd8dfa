"""Exact checks for the contract's four error body shapes, shared by every HTTP test."""

from __future__ import annotations

from typing import Any

import httpx


def assert_shape_a(response: httpx.Response, status: int, phrase: str) -> dict[str, Any]:
    """Shape A, exactly: ``{"message", "error": reason phrase, "details": str, "statusCode"}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"message", "error", "details", "statusCode"}, body
    assert body["error"] == phrase
    assert body["statusCode"] == status
    assert type(body["statusCode"]) is int
    assert isinstance(body["message"], str)
    assert body["message"]
    assert isinstance(body["details"], str)
    assert body["details"]
    return dict(body)


def assert_shape_b(response: httpx.Response, status: int, phrase: str) -> dict[str, Any]:
    """Shape B, exactly: ``{"error": reason phrase, "message": str, "statusCode": int}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "message", "statusCode"}, body
    assert body["error"] == phrase
    assert type(body["statusCode"]) is int
    assert body["statusCode"] == status
    assert isinstance(body["message"], str)
    assert body["message"]
    return dict(body)


def assert_shape_c(
    response: httpx.Response, status: int, details: dict[str, str] | None = None
) -> dict[str, Any]:
    """Shape C, exactly: ``{"error": status int, "message": str, "details": object}``.

    ``details`` defaults to ``{}``; pass the expected field map for validation errors."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "message", "details"}, body
    assert type(body["error"]) is int
    assert body["error"] == status
    assert isinstance(body["message"], str)
    assert body["message"]
    assert isinstance(body["details"], dict)
    if details is not None:
        assert body["details"] == details, body
    return dict(body)


def assert_shape_d(response: httpx.Response, status: int) -> str:
    """Shape D, exactly: ``{"message": str}``; answers the message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"message"}, body
    assert isinstance(body["message"], str)
    assert body["message"]
    return str(body["message"])
