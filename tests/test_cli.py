"""The real `payrelay` console command, run as a subprocess on a fresh embedded SQLite store.

No PAYRELAY_KEY_HASH_SECRET is set here, so these tests exercise the generated secret that is
kept beside the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.factories import transfer_body
from tests.harness import free_port

COMMAND = [sys.executable, "-m", "payrelay"]
PG_URL_NOT_CONTACTED = "postgresql+asyncpg://nobody@127.0.0.1:9/none"


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """The one JSON object on stdout, and nothing else."""
        lines = self.stdout.splitlines()
        assert len(lines) == 1, self.stdout
        value = json.loads(lines[0])
        assert isinstance(value, dict), value
        return value

    def ok(self) -> dict[str, Any]:
        assert self.returncode == 0, (self.stdout, self.stderr)
        return self.json()


def cli_env(database: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYRELAY_")}
    env.update(
        PAYRELAY_DATABASE_URL=f"sqlite+aiosqlite:///{database}",
        PAYRELAY_LOG_LEVEL="warning",
        PAYRELAY_RATE_LIMIT_PER_SECOND="0",
        **extra,
    )
    return env


async def run(env: dict[str, str], *args: str) -> Result:
    process = await asyncio.create_subprocess_exec(
        *COMMAND,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return Result(process.returncode, stdout.decode(), stderr.decode())


@dataclass
class Serving:
    base_url: str
    printed: str
    process: asyncio.subprocess.Process


@asynccontextmanager
async def serve(env: dict[str, str], logs: Path, *args: str) -> AsyncIterator[Serving]:
    """Run `payrelay serve --json [args]` on a free port; yield once it answers /healthz."""
    port = free_port()
    env = {**env, "PAYRELAY_HOST": "127.0.0.1", "PAYRELAY_PORT": str(port)}
    with logs.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            *COMMAND,
            "serve",
            "--json",
            *args,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        assert process.stdout is not None
        first = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        async with httpx.AsyncClient(base_url=base_url, timeout=2) as client:
            for _ in range(300):
                if process.returncode is not None:
                    raise AssertionError(f"serve exited: {logs.read_text()}")
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError(f"serve did not answer: {logs.read_text()}")
        yield Serving(base_url, first.decode(), process)
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), timeout=10)
            except TimeoutError:
                process.kill()
                await process.wait()


def parse_instant(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-store")


@pytest.fixture(scope="module")
async def env(store_dir: Path) -> dict[str, str]:
    """A fresh, migrated SQLite store with no key-hashing secret configured."""
    values = cli_env(store_dir / "payrelay.db")
    body = (await run(values, "migrate", "--json")).ok()
    assert body == {"migrated": True, "database": f"sqlite+aiosqlite:///{store_dir}/payrelay.db"}
    return values


@pytest.fixture(scope="module")
async def merchant(env: dict[str, str]) -> dict[str, Any]:
    return (await run(env, "merchant", "create", "Acme Traders", "--json")).ok()


class TestCommands:
    async def test_migrate_again_is_a_no_op(self, env: dict[str, str], store_dir: Path) -> None:
        again = (await run(env, "migrate", "--json")).ok()
        assert again == {
            "migrated": True,
            "database": f"sqlite+aiosqlite:///{store_dir}/payrelay.db",
        }

    async def test_merchant_create(self, merchant: dict[str, Any]) -> None:
        assert set(merchant) == {"id", "name", "webhook_secret"}
        assert merchant["webhook_secret"].startswith("whsec_")
        assert merchant["name"] == "Acme Traders"
        assert merchant["id"].startswith("mer_")

    async def test_keys_create_list_and_revoke(
        self, env: dict[str, str], merchant: dict[str, Any]
    ) -> None:
        owner = merchant["id"]
        test, live = await asyncio.gather(
            run(env, "key", "create", owner, "--mode", "test", "--json"),
            run(env, "key", "create", owner, "--mode", "live", "--expires-in", "30d", "--json"),
        )
        test_key, live_key = test.ok(), live.ok()
        for issued, mode in ((test_key, "test"), (live_key, "live")):
            assert set(issued) == {"id", "key", "mode", "expires_at"}
            assert issued["mode"] == mode
            assert issued["key"].startswith(f"pr_{mode}_")
            assert len(issued["key"]) >= len(f"pr_{mode}_") + 32
            assert issued["id"].startswith("key_")
        assert test_key["expires_at"] is None
        expires = parse_instant(live_key["expires_at"])
        assert abs(expires - (datetime.now(UTC) + timedelta(days=30))) < timedelta(minutes=5)

        revoked = (await run(env, "key", "revoke", test_key["id"], "--json")).ok()
        assert set(revoked) == {"id", "revoked_at"}
        assert revoked["id"] == test_key["id"]
        assert abs(parse_instant(revoked["revoked_at"]) - datetime.now(UTC)) < timedelta(minutes=5)

        listing = await run(env, "key", "list", owner, "--json")
        listed = listing.ok()
        assert test_key["key"] not in listing.stdout
        assert live_key["key"] not in listing.stdout
        assert listed["merchant_id"] == owner
        by_id = {row["id"]: row for row in listed["keys"]}
        assert {test_key["id"], live_key["id"]} <= set(by_id)
        for issued in (test_key, live_key):
            row = by_id[issued["id"]]
            assert set(row) == {"id", "mode", "prefix", "created_at", "expires_at", "revoked_at"}
            assert row["mode"] == issued["mode"]
            assert issued["key"].startswith(row["prefix"])
            assert len(row["prefix"]) < len(issued["key"]) - 24
        assert by_id[test_key["id"]]["revoked_at"] == revoked["revoked_at"]
        assert by_id[live_key["id"]]["revoked_at"] is None
        assert by_id[live_key["id"]]["expires_at"] == live_key["expires_at"]

    async def test_failures_exit_non_zero(
        self, env: dict[str, str], merchant: dict[str, Any], tmp_path: Path
    ) -> None:
        owner = merchant["id"]
        postgres = {**env, "PAYRELAY_DATABASE_URL": PG_URL_NOT_CONTACTED}
        short = cli_env(tmp_path / "short.db", PAYRELAY_KEY_HASH_SECRET="too-short")
        # (command, environment, substring of the JSON error, or None for a usage error)
        cases: list[tuple[list[str], dict[str, str], str | None]] = [
            (["key", "create", "mer_doesnotexist", "--mode", "test"], env, "mer_doesnotexist"),
            (["key", "revoke", "key_doesnotexist"], env, "key_doesnotexist"),
            (["key", "create", owner, "--mode", "test"], postgres, "PAYRELAY_KEY_HASH_SECRET"),
            (["serve"], short, "PAYRELAY_KEY_HASH_SECRET"),
            (["key", "create", owner, "--mode", "prod"], env, None),
            (["key", "create", owner, "--mode", "test", "--expires-in", "0d"], env, None),
        ]
        results = await asyncio.gather(
            *(run(values, *command, "--json") for command, values, _ in cases)
        )
        for (command, _, expected), result in zip(cases, results, strict=True):
            assert result.returncode != 0, (command, result.stdout)
            assert "pr_test_" not in result.stdout, command
            if expected is not None:
                body = result.json()
                assert set(body) == {"error"}, command
                assert expected in body["error"], (command, body)
        assert not (tmp_path / "short.db.secret").exists()


class TestGeneratedSecret:
    async def test_secret_file_is_private_keys_survive_a_restart_and_revocation_is_immediate(
        self, env: dict[str, str], merchant: dict[str, Any], store_dir: Path, tmp_path: Path
    ) -> None:
        secret_file = store_dir / "payrelay.db.secret"
        issued = (await run(env, "key", "create", merchant["id"], "--mode", "test", "--json")).ok()
        assert secret_file.exists()
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
        secret = secret_file.read_text()
        assert len(secret.strip()) >= 32

        auth = {"Authorization": f"Bearer {issued['key']}"}
        forged = {"Authorization": "Bearer pr_test_" + "A" * 43}
        for restart in (False, True):
            async with (
                serve(env, tmp_path / "serve.log") as server,
                httpx.AsyncClient(base_url=server.base_url, timeout=10) as client,
            ):
                known = await client.get("/momo/abcde", headers=auth)
                assert known.status_code == 404, known.text
                assert known.json()["error"] == "Not Found"
                assert (await client.get("/momo/abcde", headers=forged)).status_code == 401
                if restart:
                    (await run(env, "key", "revoke", issued["id"], "--json")).ok()
                    refused = await client.get("/momo/abcde", headers=auth)
                    assert refused.status_code == 401, refused.text
                    assert refused.json()["error"] == 401
            assert secret_file.read_text() == secret
        assert [p.name for p in store_dir.iterdir() if p.name.endswith(".secret")] == [
            "payrelay.db.secret"
        ]


class TestDemo:
    async def test_serve_demo_prints_a_working_test_key(self, tmp_path: Path) -> None:
        values = cli_env(tmp_path / "demo.db")
        async with serve(values, tmp_path / "serve.log", "--demo") as server:
            printed = json.loads(server.printed)
            assert set(printed) == {
                "base_url",
                "merchant_id",
                "merchant_name",
                "test_key",
                "webhook_secret",
            }
            assert printed["base_url"] == server.base_url
            assert printed["merchant_id"].startswith("mer_")
            assert printed["merchant_name"]
            assert printed["test_key"].startswith("pr_test_")
            assert (tmp_path / "demo.db.secret").exists()

            auth = {"Authorization": f"Bearer {printed['test_key']}"}
            body = transfer_body()
            async with httpx.AsyncClient(base_url=printed["base_url"], timeout=10) as client:
                created = await client.post("/tx/createTransferRequest", json=body, headers=auth)
                assert created.status_code == 200, created.text
                link = created.json()["link"]
                assert link.startswith(f"{server.base_url}/sandbox/checkout/")
                page = await client.get(link)
                assert page.status_code == 200
                assert printed["merchant_name"] in page.text
                status = await client.get(f"/tx/payment-status/{body['reference']}", headers=auth)
                assert status.json()["status"] == "pending"
                paid = await client.post(f"{link}/pay")
                assert paid.status_code == 303
                assert paid.headers["location"] == body["successUrl"]
                status = await client.get(f"/tx/payment-status/{body['reference']}", headers=auth)
                assert status.json()["status"] == "processed"
            server.process.terminate()
            rest = await asyncio.wait_for(server.process.stdout.read(), timeout=10)  # type: ignore[union-attr]
            assert rest.strip() == b"", "serve --json printed more than one object"
