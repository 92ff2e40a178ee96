"""api/encoding/quantity: resource.Quantity's parsing, canonical text, rounding and comparison, with
the cases of apimachinery's quantity_test.go (TestQuantityParse, TestQuantityString,
TestQuantityParseEmit, TestQuantityRoundUp, the error table)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kubelite.api.encoding import quantity
from kubelite.api.encoding.quantity import FORMAT_ERROR, NUMERIC_ERROR, SUFFIX_ERROR


@pytest.mark.parametrize(
    ("text", "canonical", "fmt"),
    [
        # canonical texts parse to themselves (TestQuantityString's "expect" column)
        ("1Gi", "1Gi", "BinarySI"), ("300Mi", "300Mi", "BinarySI"), ("6Ki", "6Ki", "BinarySI"),
        ("1001Gi", "1001Gi", "BinarySI"), ("1Ti", "1Ti", "BinarySI"), ("5", "5", "DecimalSI"),
        ("500m", "500m", "DecimalSI"), ("1G", "1G", "DecimalSI"), ("1m", "1m", "DecimalSI"),
        ("80m", "80m", "DecimalSI"), ("1080m", "1080m", "DecimalSI"), ("3k", "3k", "DecimalSI"),
        ("1234567M", "1234567M", "DecimalSI"), ("1025", "1025", "DecimalSI"),
        ("1e9", "1e9", "DecimalExponent"), ("1e-3", "1e-3", "DecimalExponent"),
        ("80e-3", "80e-3", "DecimalExponent"), ("300e6", "300e6", "DecimalExponent"),
        ("1n", "1n", "DecimalSI"), ("1080u", "1080u", "DecimalSI"), ("0", "0", "DecimalSI"),
        # their alternates print canonically
        ("1024Mi", "1Gi", "BinarySI"), ("307200Ki", "300Mi", "BinarySI"),
        ("1025024Mi", "1001Gi", "BinarySI"), ("1024Gi", "1Ti", "BinarySI"),
        ("5000m", "5", "DecimalSI"), ("0.5", "500m", "DecimalSI"), ("1000M", "1G", "DecimalSI"),
        ("0.001T", "1G", "DecimalSI"), ("1000u", "1m", "DecimalSI"), ("1.08", "1080m", "DecimalSI"),
        ("1080000000n", "1080m", "DecimalSI"), (".001e12", "1e9", "DecimalExponent"),
        ("0.001e0", "1e-3", "DecimalExponent"), ("1000e-12", "1e-9", "DecimalExponent"),
        ("00", "0", "DecimalSI"), ("1000m", "1", "DecimalSI"),
        # TestQuantityParseEmit, binary values below 1024 or fractional print as decimal
        (".001Ki", "1024m", "BinarySI"), (".000001Ki", "1024u", "DecimalSI"),
        (".000000001Ki", "1024n", "DecimalSI"), (".000000000001Ki", "2n", "DecimalSI"),
        ("1.5Gi", "1536Mi", "BinarySI"), ("0.5Mi", "512Ki", "BinarySI"),
        ("100.035Ki", "102435840m", "BinarySI"), ("-1.5Gi", "-1536Mi", "BinarySI"),
        # rounding up to nano, and binary values capped at 2^63-1
        ("3.001n", "4n", "DecimalSI"), ("0.00000012345", "124n", "DecimalSI"),
        ("0.5e-9", "1e-9", "DecimalExponent"), ("1.1E-9", "2e-9", "DecimalExponent"),
        ("9Ei", "9223372036854775807", "BinarySI"), ("0.1m", "100u", "DecimalSI"),
        # texts already canonical are kept verbatim (ParseQuantity reuses the string)
        ("+1", "+1", "DecimalSI"), ("01", "01", "DecimalSI"), ("1.G", "1.G", "DecimalSI"),
        ("10e0", "10e0", "DecimalExponent"), ("100M", "100M", "DecimalSI"),
        ("1e3", "1e3", "DecimalExponent"), ("1e100", "10e99", "DecimalExponent"),
        # exponents past the SI table print without a suffix, as kube prints them
        ("1000E", "1", "DecimalSI"), ("12E", "12E", "DecimalSI"),
        # a lone sign or point is zero; huge exponents stay cheap
        ("+", "0", "DecimalSI"), (".", "0", "DecimalSI"), ("-0", "0", "DecimalSI"),
        ("1e-2147483648", "1e-9", "DecimalExponent"),
        ("1e2147483647", "10e2147483646", "DecimalExponent"),
    ],
)  # fmt: skip
def test_parse_and_canonical_text(text: str, canonical: str, fmt: str) -> None:
    parsed = quantity.parse(text)
    assert str(parsed) == canonical
    assert parsed.format == fmt
    assert quantity.parse(canonical) == parsed or canonical == "1"  # 1000E prints lossily


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", FORMAT_ERROR), ("1.1.M", FORMAT_ERROR), ("1+1.0M", FORMAT_ERROR),
        ("aoeu", FORMAT_ERROR), (" 1", FORMAT_ERROR), ("1 ", FORMAT_ERROR),
        ("0.1mi", SUFFIX_ERROR), ("0.1am", FORMAT_ERROR), (".5i", SUFFIX_ERROR),
        ("1i", SUFFIX_ERROR), ("-3.01i", SUFFIX_ERROR), ("-3.01e-", SUFFIX_ERROR),
        ("1e", SUFFIX_ERROR), ("1ee3", SUFFIX_ERROR), ("1e99999999999999999999", SUFFIX_ERROR),
        (".Ei", NUMERIC_ERROR), ("+.e-10", NUMERIC_ERROR),
    ],
)  # fmt: skip
def test_parse_errors(text: str, error: str) -> None:
    with pytest.raises(quantity.QuantityError) as caught:
        quantity.parse(text)
    assert str(caught.value) == error


@pytest.mark.parametrize(
    ("text", "scale", "expect", "exact"),
    [
        ("9.01", -3, "9010m", True), ("9.01", -2, "9010m", True), ("9.01", -1, "9100m", False),
        ("9.01", 0, "10", False), ("9.01", 1, "10", False), ("9.01", 2, "100", False),
        ("-9.01", -1, "-9100m", False), ("-9.01", 0, "-10", False),
        ("0.1m", -3, "1m", False), ("1.0001", -3, "1001m", False), ("1Gi", -3, "1Gi", True),
    ],
)  # fmt: skip
def test_round_up(text: str, scale: int, expect: str, exact: bool) -> None:
    rounded, was_exact = quantity.parse(text).round_up(scale)
    assert (str(rounded), was_exact) == (expect, exact)


def test_round_up_keeps_the_text_when_nothing_changes() -> None:
    parsed = quantity.parse("+100m")
    assert parsed.round_up(-3)[0] is parsed
    assert str(parsed.round_up(-3)[0]) == "+100m"


def test_values_compare_exactly() -> None:
    assert quantity.parse("1Gi") == quantity.parse("1024Mi")
    assert quantity.parse("1") == quantity.parse("1000m")
    assert quantity.parse("999m") < quantity.parse("1")
    assert quantity.parse("1k") < quantity.parse("1Ki")
    assert quantity.parse("1.5Gi").value == Decimal(1610612736)
    assert quantity.parse("-2").cmp(quantity.parse("1")) == -1


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [("1", 1, 1000), ("1.5", 2, 1500), ("100m", 1, 100), ("-1.5", -2, -1500), ("1n", 1, 1)],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    parsed = quantity.parse(text)
    assert (parsed.int_value(), parsed.milli_value()) == (value, milli)


@pytest.mark.parametrize(
    ("value", "text"),
    [(1, "1"), (1.5, "1500m"), (1000.0, "1k"), (" 2Gi ", "2Gi"), (0, "0"), (1e-05, "10e-6")],
)
def test_json_values_read_as_unmarshal_json_reads_them(value: object, text: str) -> None:
    assert quantity.canonical(value) == text


@pytest.mark.parametrize("value", [True, {"a": 1}, [1], "", "lots"])
def test_json_values_that_are_not_quantities(value: object) -> None:
    assert quantity.canonical(value) is None
