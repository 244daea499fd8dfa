"""payrelay: a self-hosted payment gateway for ZAR transfer requests."""

__version__ = "0.1.0"
