"""Shared helpers for the mobile money, sandbox, browser and CLI tests: exact error shapes and
transfer set-up over HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.factories import transfer_body
from tests.harness import MerchantKeys


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
    """Shape B, exactly: ``{"error": reason phrase, "message", "statusCode"}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "message", "statusCode"}, body
    assert body["error"] == phrase
    assert body["statusCode"] == status
    assert type(body["statusCode"]) is int
    assert isinstance(body["message"], str)
    assert body["message"]
    return dict(body)


def assert_shape_c(response: httpx.Response, status: int) -> dict[str, Any]:
    """Shape C, exactly: ``{"error": status int, "message", "details": {}}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "message", "details"}, body
    assert body["error"] == status
    assert type(body["error"]) is int
    assert isinstance(body["message"], str)
    assert body["message"]
    assert isinstance(body["details"], dict)
    return dict(body)


@dataclass(frozen=True)
class CreatedTransfer:
    body: dict[str, Any]
    link: str

    @property
    def reference(self) -> str:
        return str(self.body["reference"])

    @property
    def checkout_id(self) -> str:
        """The last path part of the link: the id of the sandbox checkout page."""
        return urlsplit(self.link).path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def checkout_path(self) -> str:
        return f"/sandbox/checkout/{self.checkout_id}"


async def create_transfer(
    client: httpx.AsyncClient, keys: MerchantKeys, **overrides: Any
) -> CreatedTransfer:
    """Create a test-mode transfer request over HTTP and return its body and link."""
    body = transfer_body(**overrides)
    response = await client.post("/tx/createTransferRequest", json=body, headers=keys.test)
    assert response.status_code == 200, response.text
    return CreatedTransfer(body, response.json()["link"])
