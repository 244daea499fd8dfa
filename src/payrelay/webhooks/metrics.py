"""Prometheus metrics for webhook delivery, served at ``/metrics``."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

DELIVERIES = Counter(
    "payrelay_webhook_deliveries_total",
    "Webhook delivery attempts by outcome.",
    ["outcome"],
)
ATTEMPT_SECONDS = Histogram(
    "payrelay_webhook_attempt_seconds",
    "Time from sending a webhook to its answer (or failure).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
QUEUE_DEPTH = Gauge(
    "payrelay_webhook_queue_depth",
    "Webhook events waiting to be delivered (pending), as of the last scrape.",
)


def record_attempt(succeeded: bool, gone: bool, latency_ms: int) -> None:
    outcome = "succeeded" if succeeded else "gone" if gone else "failed"
    DELIVERIES.labels(outcome=outcome).inc()
    ATTEMPT_SECONDS.observe(latency_ms / 1000)
