"""Merchant webhooks: an outbox written with each state change, signed, retried, inspectable."""
