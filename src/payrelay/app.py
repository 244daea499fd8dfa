"""Application factory and lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from payrelay import __version__, health
from payrelay.auth.keys import Mode
from payrelay.config import Settings
from payrelay.context import AppContext
from payrelay.db.engine import Database
from payrelay.error_handlers import install_error_handlers
from payrelay.issuers.endpoints import router as issuer_router
from payrelay.issuers.wiring import build_wiring
from payrelay.middleware import RequestContextMiddleware
from payrelay.momo.endpoints import router as momo_router
from payrelay.openapi import install_openapi
from payrelay.sandbox.endpoints import router as sandbox_router
from payrelay.transfers.endpoints import router as transfers_router
from payrelay.webhooks.dispatcher import Dispatcher
from payrelay.webhooks.endpoints import metrics_router
from payrelay.webhooks.endpoints import router as webhooks_router
from payrelay.workers.expiry import run_expiry_loop
from payrelay.workers.reconciler import run_reconciler_loop

DESCRIPTION = """
payrelay creates ZAR transfer requests paid from a customer's exchange wallet (Binance, Bybit,
VALR) and reports payment and mobile money status. Authenticate with
`Authorization: Bearer pr_test_...` (sandbox) or `pr_live_...`.
Every error body is one of four shapes, A to D; see each operation's responses.
"""


def create_app(
    settings: Settings | None = None, *, run_workers: bool = True, serving: bool = True
) -> FastAPI:
    """Build the ASGI app. Migrations are not run here: ``payrelay serve`` applies them first."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        database = Database(settings.database_url)
        context = AppContext(
            settings,
            database,
            settings.resolved_key_hash_secret(),
            connectors=wiring.registry,
            simulators=wiring.simulators,
        )
        app.state.context = context
        tasks: list[asyncio.Task[None]] = []
        dispatcher: Dispatcher | None = None
        if run_workers:
            interval = settings.expiry_sweep_interval.total_seconds()
            tasks.append(asyncio.create_task(run_expiry_loop(database, interval)))
            modes = tuple(Mode) if serving else (Mode.LIVE,)
            tasks.append(asyncio.create_task(run_reconciler_loop(context, modes)))
            if settings.webhook_dispatch:
                dispatcher = Dispatcher(context)
                tasks.append(asyncio.create_task(dispatcher.run()))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if dispatcher is not None:
                await dispatcher.aclose()
            await wiring.aclose()
            await database.dispose()

    app = FastAPI(
        title="payrelay",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        # An unknown path is a 404 in its shape, never a redirect built from the Host header.
        redirect_slashes=False,
    )
    install_error_handlers(app)
    install_openapi(app)
    app.add_middleware(RequestContextMiddleware)
    app.include_router(transfers_router)
    app.include_router(momo_router)
    app.include_router(sandbox_router)
    app.include_router(issuer_router)
    app.include_router(webhooks_router)
    app.include_router(metrics_router)
    app.include_router(health.router)
    wiring = build_wiring(settings, app)
    for issuer, handle in wiring.simulators.items():
        app.mount(f"/simulators/{issuer.slug}", handle.simulator.app)
    return app
