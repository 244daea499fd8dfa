"""Issuer connectors: one package per exchange behind the small interface in ``base``."""
