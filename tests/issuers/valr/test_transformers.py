"""Pure transformers: the payer link, history parsing, matching, the status map, errors."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from payrelay.issuers.base import OrderOpened, OrderRejected, OrderState, Payment
from payrelay.issuers.valr import transformers as t
from payrelay.issuers.valr.wire import PayStatus, ValrApiError
from payrelay.kit.jsonio import loads_exact
from tests.issuers.valr.support import PAY_ID, make_order

ORDER = make_order()
TRADE_NO = ORDER.trade_no


def item_json(**overrides: Any) -> str:
    """One history item as VALR writes it; ``amount`` is raw JSON text (a number)."""
    fields: dict[str, Any] = {
        "identifier": "42e4c2ce-df12-4f77-81f6-661b4d226374",
        "otherPartyIdentifier": "Oz",
        "amount": "10.00",
        "currency": "USDC",
        "status": "COMPLETE",
        "timestamp": "2026-04-29T09:46:51.132056Z",
        "note": TRADE_NO,
        "transactionId": "969534114340323328",
        "anonymous": False,
        "reversed": False,
        "type": "CREDIT",
    }
    fields.update(overrides)
    parts = []
    for name, value in fields.items():
        if value is _ABSENT:
            continue
        text = value if name == "amount" else json.dumps(value)
        parts.append(f'"{name}": {text}')
    return "{" + ", ".join(parts) + "}"


_ABSENT = object()


def history(*items: str) -> list[t.HistoryEntry]:
    return t.parse_history(loads_exact(("[" + ",".join(items) + "]").encode()))


def report(*items: str, **order_overrides: Any) -> Any:
    return t.report_for(replace(ORDER, **order_overrides), history(*items))


class TestStatusMap:
    def test_every_documented_status_is_mapped(self) -> None:
        assert set(t.STATUS_STATES) == set(PayStatus)

    @pytest.mark.parametrize(
        ("status", "state"),
        [
            ("INITIATED", OrderState.PENDING),
            ("AUTHORISED", OrderState.PENDING),
            ("COMPLETE", OrderState.PAID),
            ("FAILED", OrderState.FAILED),
            ("RETURNED", OrderState.FAILED),
            ("EXPIRED", OrderState.EXPIRED),
        ],
    )
    def test_documented_status(self, status: str, state: OrderState) -> None:
        assert t.state_for(status) is state

    @pytest.mark.parametrize("status", [None, "", "complete", "SETTLED", "REVERSED"])
    def test_missing_or_unknown_is_pending(self, status: str | None) -> None:
        assert t.state_for(status) is OrderState.PENDING


class TestPayerLink:
    def test_link_carries_pay_id_amount_currency_and_note(self) -> None:
        link = t.payer_link(ORDER, "https://www.valr.com/payments/send")
        parts = urlsplit(link)
        assert f"{parts.scheme}://{parts.netloc}{parts.path}" == (
            "https://www.valr.com/payments/send"
        )
        assert parse_qs(parts.query) == {
            "payId": [PAY_ID],
            "amount": ["10.00"],
            "currency": ["USDC"],
            "note": [TRADE_NO],
        }

    def test_return_urls_only_when_asked(self) -> None:
        link = t.payer_link(ORDER, "http://sim/payments/send", append_return_urls=True)
        query = parse_qs(urlsplit(link).query)
        assert query["successUrl"] == [ORDER.success_url]
        assert query["failedUrl"] == [ORDER.failed_url]
        assert "%3F" in link  # the return URLs' own "?" is encoded

    def test_amount_is_written_exactly(self) -> None:
        order = replace(ORDER, pay_amount=Decimal("0.00015000"))
        query = parse_qs(urlsplit(t.payer_link(order, "https://x/send")).query)
        assert query["amount"] == ["0.00015000"]

    def test_pay_url_with_query_gets_ampersand(self) -> None:
        assert t.payer_link(ORDER, "https://x/send?lang=en").startswith(
            "https://x/send?lang=en&payId="
        )

    def test_opened_uses_trade_no_as_order_id(self) -> None:
        result = t.opened(ORDER, "https://x/send")
        assert isinstance(result, OrderOpened)
        assert result.issuer_order_id == TRADE_NO
        assert result.details == {
            "payId": PAY_ID,
            "amount": "10.00",
            "currency": "USDC",
            "note": TRADE_NO,
        }

    def test_same_order_same_link(self) -> None:
        assert t.opened(ORDER, "https://x/send") == t.opened(ORDER, "https://x/send")

    def test_blank_pay_id_is_rejected(self) -> None:
        result = t.opened(replace(ORDER, issuer_merchant_id=" "), "https://x/send")
        assert isinstance(result, OrderRejected)
        assert result.code == "INVALID_PAY_ID"
        assert not result.duplicate_trade_no

    def test_zero_amount_is_rejected(self) -> None:
        result = t.opened(replace(ORDER, pay_amount=Decimal("0")), "https://x/send")
        assert isinstance(result, OrderRejected)
        assert result.code == "INVALID_AMOUNT"


class TestParsing:
    def test_json_number_amount_is_exact_decimal(self) -> None:
        (entry,) = history(item_json(amount="10.10"))
        assert entry.amount == Decimal("10.10")
        assert isinstance(entry.amount, Decimal)
        assert str(entry.amount) == "10.10"

    def test_integer_amount(self) -> None:
        (entry,) = history(item_json(amount="200"))
        assert entry.amount == Decimal(200)
        assert isinstance(entry.amount, Decimal)

    def test_many_digits_survive(self) -> None:
        (entry,) = history(item_json(amount="0.1000000000000000055511151231257827"))
        assert entry.amount == Decimal("0.1000000000000000055511151231257827")

    def test_string_amount_from_lookup_shape(self) -> None:
        assert t.parse_amount("200") == Decimal("200")

    @pytest.mark.parametrize("value", [10.1, True, None, "ten", "NaN", "Infinity", [1]])
    def test_unusable_amounts(self, value: object) -> None:
        assert t.parse_amount(value) is None

    def test_numeric_transaction_id_becomes_text(self) -> None:
        (entry,) = history(item_json(transactionId=969534114340323328))
        assert entry.transaction_id == "969534114340323328"

    def test_missing_status_is_none(self) -> None:
        (entry,) = history(item_json(status=_ABSENT))
        assert entry.status is None

    def test_missing_note_is_empty(self) -> None:
        (entry,) = history(item_json(note=_ABSENT))
        assert entry.note == ""

    @pytest.mark.parametrize(
        "broken",
        [
            item_json(amount='"lots"'),
            item_json(amount=_ABSENT),
            item_json(currency=_ABSENT),
            item_json(type=_ABSENT),
            item_json(transactionId=_ABSENT),
            item_json(status=7),
            '"not an object"',
        ],
    )
    def test_unusable_items_are_skipped(self, broken: str) -> None:
        assert history(broken, item_json(transactionId="2")) == history(
            item_json(transactionId="2")
        )

    def test_history_must_be_a_list(self) -> None:
        with pytest.raises(ValueError, match="array"):
            t.parse_history({"code": -1})

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2022-04-29T09:46:51.132056Z", datetime(2022, 4, 29, 9, 46, 51, 132056, UTC)),
            ("2022-04-29T09:46:51Z", datetime(2022, 4, 29, 9, 46, 51, tzinfo=UTC)),
            ("2022-04-29T09:46:51.132056789Z", datetime(2022, 4, 29, 9, 46, 51, 132056, UTC)),
            ("2022-04-29T09:46:51.1Z", datetime(2022, 4, 29, 9, 46, 51, 100000, UTC)),
            ("2022-04-29T11:46:51+02:00", datetime(2022, 4, 29, 9, 46, 51, tzinfo=UTC)),
            ("2022-04-29T09:46:51", datetime(2022, 4, 29, 9, 46, 51, tzinfo=UTC)),
        ],
    )
    def test_timestamps(self, text: str, expected: datetime) -> None:
        assert t.parse_timestamp(text) == expected

    @pytest.mark.parametrize("value", ["yesterday", "2022-13-40T00:00:00Z", 1651225611, None])
    def test_bad_timestamps(self, value: object) -> None:
        assert t.parse_timestamp(value) is None

    def test_lookup_status(self) -> None:
        raw = {"amount": "200", "status": "COMPLETE", "direction": "RECEIVE"}
        assert t.parse_lookup_status(raw) == "COMPLETE"
        assert t.parse_lookup_status({"amount": "1"}) is None
        assert t.parse_lookup_status([]) is None


class TestMatching:
    def test_no_history_is_pending(self) -> None:
        result = report()
        assert result.state is OrderState.PENDING
        assert result.raw_status == t.NO_CREDIT
        assert result.issuer_order_id == TRADE_NO
        assert result.payments == ()

    def test_exact_amount_matches(self) -> None:
        result = report(item_json(amount="10.00"))
        assert result.state is OrderState.PAID
        assert result.raw_status == "COMPLETE"
        assert result.payments == (
            Payment(
                payment_id="969534114340323328",
                amount=Decimal("10.00"),
                currency="USDC",
                paid_at=datetime(2026, 4, 29, 9, 46, 51, 132056, UTC),
            ),
        )

    def test_equal_value_with_other_scale_matches(self) -> None:
        assert report(item_json(amount="10")).state is OrderState.PAID

    def test_overpayment_is_kept_as_paid(self) -> None:
        result = report(item_json(amount="12.50"))
        assert result.state is OrderState.PAID
        assert result.payments[0].amount == Decimal("12.50")

    def test_underpayment_is_not_a_payment(self) -> None:
        result = report(item_json(amount="9.99"))
        assert result.state is OrderState.PENDING
        assert result.payments == ()
        assert result.raw_status == "UNDERPAID:9.99"

    def test_underpayment_plus_top_up_never_adds_up(self) -> None:
        result = report(
            item_json(amount="6.00", transactionId="1"), item_json(amount="4.00", transactionId="2")
        )
        assert result.state is OrderState.PENDING
        assert result.raw_status == "UNDERPAID:6.00;UNDERPAID:4.00"

    def test_failed_underpayment_is_not_surfaced(self) -> None:
        result = report(item_json(amount="9.99", status="FAILED"))
        assert result.state is OrderState.PENDING
        assert result.raw_status == t.NO_CREDIT

    def test_underpayment_beside_a_full_payment(self) -> None:
        result = report(
            item_json(amount="10.00", transactionId="1"), item_json(amount="1", transactionId="2")
        )
        assert result.state is OrderState.PAID
        assert [p.payment_id for p in result.payments] == ["1"]
        assert result.raw_status == "COMPLETE;UNDERPAID:1"

    def test_wrong_currency_does_not_match(self) -> None:
        result = report(item_json(currency="USDT"))
        assert result.state is OrderState.PENDING
        assert result.raw_status == t.NO_CREDIT

    def test_debit_does_not_match(self) -> None:
        assert report(item_json(type="DEBIT")).state is OrderState.PENDING

    def test_note_in_other_case_does_not_match(self) -> None:
        assert report(item_json(note=TRADE_NO.upper())).state is OrderState.PENDING

    def test_note_with_surrounding_whitespace_matches(self) -> None:
        assert report(item_json(note=f"  {TRADE_NO}\n")).state is OrderState.PAID

    @pytest.mark.parametrize(
        "note", [f"Order {TRADE_NO}", TRADE_NO[:-1], TRADE_NO + "0", "", "coffee"]
    )
    def test_other_notes_do_not_match(self, note: str) -> None:
        assert report(item_json(note=note)).state is OrderState.PENDING

    def test_two_completed_credits_are_two_payments(self) -> None:
        result = report(item_json(transactionId="1"), item_json(transactionId="2", amount="10.01"))
        assert result.state is OrderState.PAID
        assert [(p.payment_id, p.amount) for p in result.payments] == [
            ("1", Decimal("10.00")),
            ("2", Decimal("10.01")),
        ]
        assert result.raw_status == "COMPLETE;COMPLETE"

    def test_an_entry_seen_twice_while_paging_counts_once(self) -> None:
        result = report(item_json(transactionId="1"), item_json(transactionId="1"))
        assert len(result.payments) == 1

    @pytest.mark.parametrize(
        ("status", "state"),
        [
            ("FAILED", OrderState.FAILED),
            ("RETURNED", OrderState.FAILED),
            ("EXPIRED", OrderState.EXPIRED),
            ("INITIATED", OrderState.PENDING),
            ("AUTHORISED", OrderState.PENDING),
            ("SOMETHING_NEW", OrderState.PENDING),
        ],
    )
    def test_single_credit_status(self, status: str, state: OrderState) -> None:
        result = report(item_json(status=status))
        assert result.state is state
        assert result.raw_status == status
        assert result.payments == ()

    def test_missing_status_is_pending(self) -> None:
        result = report(item_json(status=_ABSENT))
        assert result.state is OrderState.PENDING
        assert result.raw_status == t.NO_STATUS

    def test_complete_wins_over_failed(self) -> None:
        result = report(
            item_json(status="FAILED", transactionId="1"),
            item_json(status="COMPLETE", transactionId="2"),
        )
        assert result.state is OrderState.PAID
        assert [p.payment_id for p in result.payments] == ["2"]

    def test_in_flight_credit_holds_off_failure(self) -> None:
        result = report(
            item_json(status="FAILED", transactionId="1"),
            item_json(status="INITIATED", transactionId="2"),
        )
        assert result.state is OrderState.PENDING

    def test_failed_wins_over_expired(self) -> None:
        result = report(
            item_json(status="EXPIRED", transactionId="1"),
            item_json(status="FAILED", transactionId="2"),
        )
        assert result.state is OrderState.FAILED

    def test_expiry_of_ours_is_never_reported(self) -> None:
        past = datetime(2000, 1, 1, tzinfo=UTC)
        assert report(expires_at=past).state is OrderState.PENDING

    def test_late_credit_still_pays(self) -> None:
        late = item_json(timestamp="2030-01-01T00:00:00Z")
        assert report(late, expires_at=datetime(2029, 1, 1, tzinfo=UTC)).state is OrderState.PAID

    def test_reversed_credit_still_moved_money(self) -> None:
        assert report(item_json(reversed=True)).state is OrderState.PAID

    def test_other_orders_do_not_interfere(self) -> None:
        other = make_order("order-2")
        result = report(item_json(note=other.trade_no), item_json(transactionId="7"))
        assert [p.payment_id for p in result.payments] == ["7"]

    def test_truncated_history_is_said(self) -> None:
        result = t.report_for(ORDER, [], truncated=True)
        assert result.state is OrderState.PENDING
        assert result.raw_status == t.HISTORY_TRUNCATED

    def test_status_lookups_for_candidates_only(self) -> None:
        entries = history(
            item_json(status=_ABSENT, transactionId="1"),
            item_json(status=_ABSENT, transactionId="2", note="other"),
            item_json(status="COMPLETE", transactionId="3"),
        )
        assert t.needs_lookup(entries, ORDER) == ["1"]
        filled = t.with_statuses(entries, {"1": "COMPLETE"})
        assert [e.status for e in filled] == ["COMPLETE", None, "COMPLETE"]
        assert len(t.report_for(ORDER, filled).payments) == 2

    def test_oldest(self) -> None:
        entries = history(
            item_json(timestamp="2026-01-02T00:00:00Z", transactionId="1"),
            item_json(timestamp="2026-01-01T00:00:00Z", transactionId="2"),
            item_json(timestamp=_ABSENT, transactionId="3"),
        )
        assert t.oldest(entries) == datetime(2026, 1, 1, tzinfo=UTC)
        assert t.oldest([]) is None

    def test_paths(self) -> None:
        assert t.history_path(100, 100) == "/v1/pay/history?skip=100&limit=100"
        assert t.transaction_path("969") == "/v1/pay/transactionid/969"


class TestErrors:
    def test_valr_error_body(self) -> None:
        error = t.error_from(400, b'{"code": -15407, "message": "Cannot find payment"}')
        assert isinstance(error, ValrApiError)
        assert (error.status_code, error.code, error.message) == (
            400,
            -15407,
            "Cannot find payment",
        )

    def test_credentials_refused(self) -> None:
        error = t.error_from(401, b'{"code":-11252,"message":"Request has an invalid signature"}')
        assert error.code == -11252
        assert "credentials" in str(error)

    @pytest.mark.parametrize(
        ("body", "message"),
        [(b"", "no body"), (b"<html>Bad gateway</html>", "<html>Bad gateway</html>")],
    )
    def test_non_valr_bodies(self, body: bytes, message: str) -> None:
        error = t.error_from(502, body)
        assert error.code is None
        assert error.message == message

    def test_missing_content_type_403_has_no_code(self) -> None:
        error = t.error_from(403, b'{"message": "Forbidden"}')
        assert (error.code, error.message) == (None, "Forbidden")
