"""Kubernetes' IP and CIDR libraries (library.IP, library.CIDR)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from kubelite.api.cel.values import _CIDR, _IP, _Fail, _marked, _no_overload
from kubelite.api.errors import go_quote


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if "%" in text:
        raise ValueError(f"IP address {go_quote(text)} with zone value is not allowed")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(
            f"IP Address {go_quote(text)} parse error during conversion from string: "
            f"ParseAddr({go_quote(text)}): unable to parse IP"
        ) from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return address


def _ip_of(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    text = _marked(value, _IP)
    if text is None:
        raise _no_overload()
    return ipaddress.ip_address(text)


def _ip(value: Any) -> dict[str, str]:
    cidr = _marked(value, _CIDR)
    if cidr is not None:  # <cidr>.ip()
        return {_IP: cidr.split("/")[0]}
    if not isinstance(value, str):
        raise _no_overload()
    try:
        return {_IP: str(_parse_ip(value))}
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _is_ip(value: Any) -> bool:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        _parse_ip(value)
    except ValueError:
        return False
    return True


def _ip_is_canonical(value: Any) -> bool:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        return str(_parse_ip(value)) == value
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _family(value: Any) -> int:
    return _ip_of(value).version


def _parse_cidr(text: str) -> str:
    try:
        address, _, bits = text.partition("/")
        if not bits.isdigit() or (len(bits) > 1 and bits[0] == "0") or "%" in address:
            raise ValueError
        parsed = ipaddress.ip_address(address)
        if int(bits) > parsed.max_prefixlen:
            raise ValueError
        if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
            raise _Fail(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    except ValueError:
        raise _Fail(
            f"network address parse error during conversion from string: "
            f"netip.ParsePrefix({go_quote(text)}): bad prefix"
        ) from None
    return f"{parsed}/{int(bits)}"


def _cidr(value: Any) -> dict[str, str]:
    if not isinstance(value, str):
        raise _no_overload()
    return {_CIDR: _parse_cidr(value)}


def _is_cidr(value: Any) -> bool:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        _parse_cidr(value)
    except _Fail:
        return False
    return True


def _network(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    text = _marked(value, _CIDR)
    if text is None:
        raise _no_overload()
    return ipaddress.ip_network(text, strict=False)


def _contains_ip(cidr: Any, ip: Any) -> bool:
    address = _ip_of(_ip(ip)) if isinstance(ip, str) else _ip_of(ip)
    network = _network(cidr)
    return address.version == network.version and address in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    inner = _network(_cidr(other) if isinstance(other, str) else other)
    outer = _network(cidr)
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def _masked(cidr: Any) -> dict[str, str]:
    return {_CIDR: str(_network(cidr))}


def _prefix_length(cidr: Any) -> int:
    return _network(cidr).prefixlen


def _ip_predicate(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: bool(test(_ip_of(value)))


def _is_global_unicast(address: Any) -> bool:
    if address.is_multicast or address.is_loopback or address.is_link_local:
        return False
    if address.is_unspecified:
        return False
    return not (address.version == 4 and address == ipaddress.IPv4Address("255.255.255.255"))


def _is_link_local_multicast(address: Any) -> bool:
    if address.version == 4:
        return address in ipaddress.IPv4Network("224.0.0.0/24")
    return bool(address.is_multicast and (address.packed[1] & 0x0F) == 0x02)
