"""VALR Pay: a payer link to the merchant's PayID, and polling of VALR Pay history.

VALR has no merchant order API and no notifications; see ``transformers`` for the matching
rules, ``connector`` for polling, ``rates`` for the ZAR market prices used in pricing.
"""

from payrelay.issuers.valr.connector import ValrConnector, ValrCredentials
from payrelay.issuers.valr.rates import ValrRateProvider, price_in

__all__ = ["ValrConnector", "ValrCredentials", "ValrRateProvider", "price_in"]
