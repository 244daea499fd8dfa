"""Pure functions at the money boundary: exact JSON in and out, and the amount rule."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from payrelay.kit.jsonio import dumps_exact, loads_exact
from payrelay.transfers.schemas import TransferRequestIn
from tests.factories import transfer_body

cents = st.integers(min_value=1, max_value=100_000_000)


def validate_amount(raw: bytes) -> Decimal:
    body = transfer_body(amount=loads_exact(raw))
    return TransferRequestIn.model_validate(body).amount


class TestExactJson:
    def test_floats_are_parsed_as_decimals(self) -> None:
        assert loads_exact(b'{"a": 0.1}') == {"a": Decimal("0.1")}

    @pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
    def test_non_finite_literals_are_refused(self, literal: bytes) -> None:
        with pytest.raises(ValueError, match="not valid JSON"):
            loads_exact(b'{"a": ' + literal + b"}")

    def test_decimals_are_written_as_exact_numbers(self) -> None:
        assert (
            dumps_exact({"amount": Decimal("10.50"), "s": "é"})
            == '{"amount":10.50,"s":"é"}'.encode()
        )

    @given(cents)
    def test_cents_round_trip_exactly(self, value: int) -> None:
        amount = Decimal(value).scaleb(-2)
        encoded = dumps_exact({"amount": amount})
        assert loads_exact(encoded)["amount"] == amount


class TestAmountRule:
    @given(cents)
    def test_every_whole_cent_amount_up_to_the_maximum_passes(self, value: int) -> None:
        amount = Decimal(value).scaleb(-2)
        assert validate_amount(str(amount).encode()) == amount

    @given(st.integers(min_value=1, max_value=10**9).filter(lambda n: n % 10 != 0))
    def test_a_fraction_of_a_cent_never_passes(self, value: int) -> None:
        with pytest.raises(ValidationError):
            validate_amount(str(Decimal(value).scaleb(-3)).encode())

    def test_maximum_comes_from_context(self) -> None:
        body = transfer_body(amount=Decimal("50.00"))
        with pytest.raises(ValidationError, match=r"at most 20\.00"):
            TransferRequestIn.model_validate(body, context={"max_amount": Decimal("20.00")})

    def test_fingerprint_ignores_spelling_of_equal_amounts(self) -> None:
        body = transfer_body()
        a = TransferRequestIn.model_validate({**body, "amount": Decimal("10")})
        b = TransferRequestIn.model_validate({**body, "amount": Decimal("10.00")})
        c = TransferRequestIn.model_validate({**body, "amount": Decimal("10.01")})
        assert a.fingerprint() == b.fingerprint() != c.fingerprint()
