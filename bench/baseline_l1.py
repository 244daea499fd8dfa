"""Baseline L1: a trivial FastAPI route (a path parameter, a dict answered as JSON), served like
payrelay. It is the framework's own ceiling for a route shaped like payment-status.

``python -m bench.baseline_l1 --port 8101``
"""

from __future__ import annotations

from fastapi import FastAPI

from bench.serving import serve

app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


# response_model=None: what an unannotated route does (jsonable_encoder, then JSONResponse).
@app.get("/bench/{reference}", response_model=None)
async def lookup(reference: str) -> dict[str, object]:
    return {"status": "processed", "timestamp": "2026-11-22T11:24:09.504Z", "amount": 149.90}


if __name__ == "__main__":
    serve(app, "Baseline L1: a trivial FastAPI route.")
