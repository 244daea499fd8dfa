"""Shared helpers for the mobile money, sandbox, browser and CLI tests: exact error shapes and
transfer set-up over HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.factories import transfer_body
from tests.harness import MerchantKeys
from tests.shapes import assert_shape_a as assert_shape_a  # re-exported
from tests.shapes import assert_shape_b as assert_shape_b
from tests.shapes import assert_shape_c as assert_shape_c


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
