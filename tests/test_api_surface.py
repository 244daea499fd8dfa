"""The API's surface: getNewReference, probes, request ids and caching headers, unknown paths and
methods, the OpenAPI document and docs page, and the 429 and 500 rows of the error table."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from payrelay.app import create_app
from payrelay.db.engine import Database
from payrelay.db.pointread import AsyncpgPointReader, PointReader, SqlitePointReader
from tests.conftest import INPROC_BASE_URL, make_settings
from tests.factories import new_reference, transfer_body
from tests.harness import Harness
from tests.http_checks import (
    assert_shape_b,
    assert_shape_c,
    create_transfer,
)

URL_SAFE = re.compile(r"[A-Za-z0-9_-]{11,}")
GENERATED_ID = re.compile(r"[0-9a-f]{32}")
BIG_BODY = b'{"description": "' + b"x" * (70 * 1024) + b'"}'


class TestGetNewReference:
    async def test_answers_one_url_safe_reference(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/tx/getNewReference", headers=keys.test)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        body = response.json()
        assert set(body) == {"reference"}
        assert URL_SAFE.fullmatch(body["reference"]), body

    async def test_different_each_time(self, api: Harness) -> None:
        keys = await api.merchant()
        responses = await asyncio.gather(
            *(api.client.get("/tx/getNewReference", headers=keys.test) for _ in range(25))
        )
        references = {r.json()["reference"] for r in responses}
        assert len(references) == 25

    async def test_the_reference_is_unused_and_usable(self, api: Harness) -> None:
        keys = await api.merchant()
        reference = (await api.client.get("/tx/getNewReference", headers=keys.test)).json()[
            "reference"
        ]
        unknown = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
        assert_shape_c(unknown, 404, details={})
        created = await api.client.post(
            "/tx/createTransferRequest", json=transfer_body(reference=reference), headers=keys.test
        )
        assert created.status_code == 200, created.text
        assert "idempotent-replayed" not in created.headers
        status = await api.client.get(f"/tx/payment-status/{reference}", headers=keys.test)
        assert status.json()["status"] == "pending"

    async def test_never_answers_a_used_reference(self, api: Harness) -> None:
        keys = await api.merchant()
        used = set()
        for _ in range(5):
            used.add((await create_transfer(api, keys))["reference"])
        for _ in range(20):
            response = await api.client.get("/tx/getNewReference", headers=keys.test)
            assert response.json()["reference"] not in used

    async def test_works_with_a_live_key(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/tx/getNewReference", headers=keys.live)
        assert response.status_code == 200, response.text
        assert URL_SAFE.fullmatch(response.json()["reference"])

    async def test_query_parameters_are_400_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        for query, names in (
            ("?length=20", {"length"}),
            ("?prefix=a&count=2", {"prefix", "count"}),
            ("?flag", {"flag"}),
            ("?reference=abc", {"reference"}),
        ):
            response = await api.client.get(f"/tx/getNewReference{query}", headers=keys.test)
            body = assert_shape_c(response, 400)
            assert set(body["details"]) == names, query

    async def test_body_over_64_kib_is_413_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.request(
            "GET",
            "/tx/getNewReference",
            content=BIG_BODY,
            headers={**keys.test, "Content-Type": "application/json"},
        )
        assert_shape_c(response, 413, details={})


WRONG_METHODS = {
    "/tx/createTransferRequest": ["GET", "PUT", "DELETE", "PATCH"],
    "/tx/getNewReference": ["POST", "PUT", "DELETE", "PATCH"],
    "/tx/payment-status/ref-0000000001": ["POST", "PUT", "DELETE", "PATCH"],
    "/healthz": ["POST", "DELETE"],
    "/readyz": ["POST", "PUT"],
}


class TestMethodsAndPaths:
    @pytest.mark.parametrize(("path", "methods"), list(WRONG_METHODS.items()))
    async def test_wrong_method_is_405_shape_c(
        self, api: Harness, path: str, methods: list[str]
    ) -> None:
        keys = await api.merchant()
        for method in methods:
            response = await api.client.request(method, path, headers=keys.test)
            assert_shape_c(response, 405, details={})
            assert method in response.json()["message"]
            allowed = response.headers["allow"].split(", ")
            assert allowed
            assert method not in allowed

    async def test_wrong_method_on_momo_is_405_shape_b(self, api: Harness) -> None:
        keys = await api.merchant()
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            response = await api.client.request(method, "/momo/Abc12345", headers=keys.test)
            assert_shape_b(response, 405, "Method Not Allowed")
            assert response.headers["allow"] == "GET"

    async def test_unknown_path_is_404_shape_c(self, api: Harness) -> None:
        keys = await api.merchant()
        for path in (
            "/",
            "/nope",
            "/tx",
            "/tx/",
            "/tx/unknown",
            "/tx/getnewreference",
            "/TX/getNewReference",
            "/tx/getNewReference/",
            "/tx/createTransferRequest/extra",
            "/momox",
            "/momo-status/Abc12345",
            "/healthz/extra",
            "/api/v1/tx/getNewReference",
        ):
            response = await api.client.get(path, headers=keys.test)
            assert_shape_c(response, 404, details={})
            assert response.json()["message"] == "No such endpoint.", path

    async def test_unknown_path_without_a_key_is_404_not_401(self, api: Harness) -> None:
        for path in ("/nope", "/tx/unknown", "/momox"):
            response = await api.client.get(path)
            assert_shape_c(response, 404, details={})

    async def test_momo_without_an_identifier_segment_is_404_shape_b(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/momo", headers=keys.test)
        assert_shape_b(response, 404, "Not Found")

    async def test_invalid_momo_identifier_is_400_shape_b(self, api: Harness) -> None:
        keys = await api.merchant()
        for path in (
            "/momo/",
            "/momo/abc",
            "/momo/abc/defgh",
            "/momo/abc%2Fdefgh",
            "/momo/" + "a" * 16,
        ):
            response = await api.client.get(path, headers=keys.test)
            assert_shape_b(response, 400, "Bad Request")

    async def test_unknown_momo_identifier_is_404_shape_b(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.get("/momo/NoSuchTx123", headers=keys.test)
        assert_shape_b(response, 404, "Not Found")


class TestProbes:
    async def test_healthz_needs_no_key(self, api: Harness) -> None:
        response = await api.client.get("/healthz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}

    async def test_readyz_needs_no_key(self, api: Harness) -> None:
        response = await api.client.get("/readyz")
        assert response.status_code == 200
        assert response.json() == {"status": "ready"}

    async def test_probes_ignore_a_bad_key(self, api: Harness) -> None:
        for path in ("/healthz", "/readyz"):
            response = await api.client.get(path, headers={"Authorization": "Bearer nonsense"})
            assert response.status_code == 200


async def sample_requests(api: Harness) -> list[tuple[int, str, str, dict[str, str], bytes]]:
    """(expected status, method, path, headers, body) of one request per kind of answer."""
    keys = await api.merchant()
    body = await create_transfer(api, keys)
    json_headers = {**keys.test, "Content-Type": "application/json"}
    reused = json.dumps({**body, "amount": 1}).encode()
    return [
        (200, "GET", f"/tx/payment-status/{body['reference']}", keys.test, b""),
        (200, "GET", "/healthz", {}, b""),
        (400, "GET", "/tx/getNewReference?x=1", keys.test, b""),
        (401, "GET", "/tx/getNewReference", {}, b""),
        (404, "GET", f"/tx/payment-status/{new_reference()}", keys.test, b""),
        (404, "GET", "/nope", {}, b""),
        (405, "DELETE", "/tx/getNewReference", keys.test, b""),
        (409, "POST", "/tx/createTransferRequest", json_headers, reused),
        (413, "POST", "/tx/createTransferRequest", json_headers, BIG_BODY),
    ]


class TestRequestId:
    async def test_every_response_carries_a_generated_one(self, api: Harness) -> None:
        seen = set()
        for status, method, path, headers, content in await sample_requests(api):
            response = await api.client.request(method, path, headers=headers, content=content)
            assert response.status_code == status, (path, response.text)
            assert GENERATED_ID.fullmatch(response.headers["x-request-id"]), path
            assert len(response.headers.get_list("x-request-id")) == 1
            seen.add(response.headers["x-request-id"])
        assert len(seen) == 9

    async def test_a_sane_client_value_is_echoed_on_every_kind_of_answer(
        self, api: Harness
    ) -> None:
        sent = "abc-123"
        for status, method, path, headers, content in await sample_requests(api):
            response = await api.client.request(
                method, path, headers={**headers, "X-Request-Id": sent}, content=content
            )
            assert response.status_code == status, (path, response.text)
            assert response.headers.get_list("x-request-id") == [sent], path

    async def test_other_sane_values_are_echoed(self, api: Harness) -> None:
        for sent in ("req.2024:01_x", "0" * 128, "c2f1a0b8-9e7d-4c61-8a3b-5f2e1d0c9b8a"):
            response = await api.client.get("/nope", headers={"X-Request-Id": sent})
            assert response.headers.get_list("x-request-id") == [sent]

    async def test_an_insane_client_value_is_replaced(self, api: Harness) -> None:
        keys = await api.merchant()
        auth = keys.test["Authorization"].encode()
        for sent in (
            "x" * 129,
            "has space",
            "tab\there",
            "ü-nicode",
            "semi;colon",
            "<b>",
            "a/b",
            "",
        ):
            # Sent as bytes, so that non-ASCII reaches the server as it is.
            headers = {b"Authorization": auth, b"X-Request-Id": sent.encode()}
            for path in ("/tx/getNewReference", "/nope"):
                response = await api.client.get(path, headers=headers)
                assert GENERATED_ID.fullmatch(response.headers["x-request-id"]), (sent, path)


class TestCacheControl:
    async def test_payment_responses_are_no_store(self, api: Harness) -> None:
        keys = await api.merchant()
        body = transfer_body()
        momo = await api.client.post("/sandbox/momo", headers=keys.test)
        answers = [
            await api.client.post("/tx/createTransferRequest", json=body, headers=keys.test),
            await api.client.get(f"/tx/payment-status/{body['reference']}", headers=keys.test),
            await api.client.get("/tx/getNewReference", headers=keys.test),
            await api.client.get(f"/momo/{momo.json()['transactionId']}", headers=keys.test),
        ]
        for response in answers:
            assert response.status_code == 200, response.text
            assert response.headers.get_list("cache-control") == ["no-store"], response.url

    async def test_payment_errors_are_no_store_too(self, api: Harness) -> None:
        keys = await api.merchant()
        for path, headers, status in (
            ("/tx/getNewReference", {}, 401),
            ("/tx/payment-status/ref-0000000001", keys.test, 404),
            ("/tx/payment-status/", keys.test, 400),
            ("/momo/NoSuchTx123", keys.test, 404),
            ("/momo/ab", keys.test, 400),
        ):
            response = await api.client.get(path, headers=headers)
            assert response.status_code == status, path
            assert response.headers.get_list("cache-control") == ["no-store"], path

    async def test_body_too_large_is_no_store(self, api: Harness) -> None:
        keys = await api.merchant()
        response = await api.client.post(
            "/tx/createTransferRequest",
            content=BIG_BODY,
            headers={**keys.test, "Content-Type": "application/json"},
        )
        assert_shape_c(response, 413, details={})
        assert response.headers.get_list("cache-control") == ["no-store"]


# Per contract operation: HTTP status -> error shape, from the error table of the issue.
DOCUMENTED_ERRORS = {
    ("/tx/createTransferRequest", "post"): {
        "400": "C",
        "401": "C",
        "409": "D",
        "413": "C",
        "429": "C",
        "500": "C",
    },
    ("/tx/payment-status/{reference}", "get"): {
        "400": "C",
        "401": "C",
        "404": "C",
        "409": "D",
        "500": "C",
    },
    ("/tx/getNewReference", "get"): {"400": "C", "401": "C", "413": "C", "429": "C", "500": "C"},
    ("/momo/{transactionId}", "get"): {
        "400": "B",
        "401": "C",
        "404": "B",
        "502": "A",
        "503": "A",
    },
}


class TestOpenAPI:
    async def openapi(self, api: Harness) -> dict[str, Any]:
        response = await api.client.get("/openapi.json")
        assert response.status_code == 200
        return dict(response.json())

    @pytest.mark.parametrize(
        ("operation", "errors"), list(DOCUMENTED_ERRORS.items()), ids=lambda v: str(v)
    )
    async def test_contract_operations_document_their_error_bodies(
        self, api: Harness, operation: tuple[str, str], errors: dict[str, str]
    ) -> None:
        path, method = operation
        responses = (await self.openapi(api))["paths"][path][method]["responses"]
        assert "200" in responses or "201" in responses
        for status, shape in errors.items():
            assert status in responses, (path, status)
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": f"#/components/schemas/ErrorShape{shape}"}, (path, status)

    async def test_error_shapes_are_defined_exactly(self, api: Harness) -> None:
        schemas = (await self.openapi(api))["components"]["schemas"]
        expected = {
            "ErrorShapeA": {
                "message": "string",
                "error": "string",
                "details": "string",
                "statusCode": "integer",
            },
            "ErrorShapeB": {"error": "string", "message": "string", "statusCode": "integer"},
            "ErrorShapeC": {"error": "integer", "message": "string", "details": "object"},
            "ErrorShapeD": {"message": "string"},
        }
        for name, fields in expected.items():
            schema = schemas[name]
            assert set(schema["required"]) == set(fields), name
            types = {field: prop["type"] for field, prop in schema["properties"].items()}
            assert types == fields, name

    async def test_no_framework_default_error_is_documented(self, api: Harness) -> None:
        document = await self.openapi(api)
        for path, item in document["paths"].items():
            for method, operation in item.items():
                assert "422" not in operation["responses"], (path, method)
        assert "HTTPValidationError" not in document["components"]["schemas"]
        assert "HTTPValidationError" not in str(document)

    async def test_create_request_body_is_the_exact_contract(self, api: Harness) -> None:
        operation = (await self.openapi(api))["paths"]["/tx/createTransferRequest"]["post"]
        assert operation["requestBody"]["required"] is True
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == {
            "recipient",
            "amount",
            "issuer",
            "acquirerMerchantName",
            "reference",
            "merchantID",
            "description",
            "terminalType",
            "successUrl",
            "failedUrl",
            "webhookUrl",
        }
        assert set(schema["properties"]) - set(schema["required"]) == {
            "currency",
            "customReference",
            "merchantCategoryCode",
            "goodsType",
        }
        properties = schema["properties"]
        assert properties["amount"]["type"] == "number"
        assert properties["amount"]["minimum"] == 0.01
        assert properties["amount"]["multipleOf"] == 0.01
        assert properties["issuer"]["enum"] == ["Binance", "Bybit", "Valr"]
        assert properties["terminalType"]["enum"] == ["APP", "WEB"]
        assert properties["reference"]["minLength"] == 11
        assert properties["description"]["maxLength"] == 100
        assert properties["currency"]["default"] == "USDC"

    async def test_success_bodies_are_documented(self, api: Harness) -> None:
        document = await self.openapi(api)
        schemas = document["components"]["schemas"]

        def success(path: str, method: str) -> dict[str, Any]:
            ref = document["paths"][path][method]["responses"]["200"]["content"][
                "application/json"
            ]["schema"]["$ref"]
            return dict(schemas[ref.rsplit("/", 1)[1]])

        assert set(success("/tx/createTransferRequest", "post")["properties"]) == {"link"}
        status = success("/tx/payment-status/{reference}", "get")
        assert set(status["properties"]) == {"status", "timestamp", "amount"}
        assert status["properties"]["amount"]["type"] == "number"
        assert set(success("/tx/getNewReference", "get")["properties"]) == {"reference"}
        momo = success("/momo/{transactionId}", "get")
        assert set(momo["properties"]) == {"status", "confirmationID"}

    async def test_docs_page_is_html(self, api: Harness) -> None:
        response = await api.client.get("/docs")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        assert "/openapi.json" in response.text


@asynccontextmanager
async def own_app(api: Harness, **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A second in-process payrelay on the same store, with its own settings."""
    app = create_app(make_settings(api.database_url, **overrides), run_workers=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=INPROC_BASE_URL) as client:
            yield client


def in_process_only(api: Harness) -> None:
    if api.transport != "inproc":
        pytest.skip("provoked in-process only")


class TestRateLimit:
    @pytest.mark.parametrize("path", ["/tx/getNewReference", "/tx/payment-status/ref-00000001"])
    async def test_over_the_limit_is_429_shape_c_with_retry_after(
        self, api: Harness, path: str
    ) -> None:
        in_process_only(api)
        keys = await api.merchant()
        async with own_app(api, rate_limit_per_second=0.01, rate_limit_burst=2) as client:
            for _ in range(2):
                assert (await client.get(path, headers=keys.test)).status_code in (200, 404)
            limited = await client.get(path, headers=keys.test)
            assert_shape_c(limited, 429, details={})
            assert int(limited.headers["retry-after"]) >= 1
            assert limited.headers["x-request-id"]
            # Another key of the same merchant has its own bucket.
            other = await client.get(path, headers=keys.live)
            assert other.status_code in (200, 404)


class RecordingLog:
    """Stands in for the middleware's logger: records instead of rendering a traceback."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def exception(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))


class TestServerFault:
    @pytest.mark.parametrize("operation", ["createTransferRequest", "payment-status", "new"])
    async def test_a_broken_store_is_500_shape_c_without_internals(
        self, api: Harness, monkeypatch: pytest.MonkeyPatch, operation: str
    ) -> None:
        in_process_only(api)
        keys = await api.merchant()

        @asynccontextmanager
        async def broken(self: Database) -> AsyncIterator[Any]:
            raise ConnectionResetError("connection to the database was lost: secret-dsn")
            yield  # pragma: no cover

        async def broken_point_read(self: PointReader, *_args: Any) -> Any:
            raise ConnectionResetError("connection to the database was lost: secret-dsn")

        log = RecordingLog()
        async with own_app(api) as client:
            monkeypatch.setattr("payrelay.middleware.log", log)
            monkeypatch.setattr(Database, "read", broken)
            monkeypatch.setattr(Database, "write", broken)
            for reader in (SqlitePointReader, AsyncpgPointReader):
                monkeypatch.setattr(reader, "fetch_one", broken_point_read)
            if operation == "createTransferRequest":
                response = await client.post(
                    "/tx/createTransferRequest", json=transfer_body(), headers=keys.test
                )
            elif operation == "payment-status":
                response = await client.get(
                    f"/tx/payment-status/{new_reference()}", headers=keys.test
                )
            else:
                response = await client.get("/tx/getNewReference", headers=keys.test)
            monkeypatch.undo()

        assert_shape_c(response, 500, details={})
        assert "secret-dsn" not in response.text
        assert "Traceback" not in response.text
        assert GENERATED_ID.fullmatch(response.headers["x-request-id"])
        assert response.headers.get_list("cache-control") == ["no-store"]
        # The fault is logged with the id the client was given, so the two can be matched.
        assert [(event, fields["request_id"]) for event, fields in log.events] == [
            ("request.unhandled", response.headers["x-request-id"])
        ]

    async def test_readyz_is_503_shape_c_when_the_store_does_not_answer(
        self, api: Harness, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        in_process_only(api)

        async def broken_ping(self: Database) -> None:
            raise ConnectionRefusedError("no database")

        async with own_app(api) as client:
            monkeypatch.setattr(Database, "ping", broken_ping)
            response = await client.get("/readyz")
            monkeypatch.undo()
            assert (await client.get("/healthz")).status_code == 200
        assert_shape_c(response, 503, details={})
