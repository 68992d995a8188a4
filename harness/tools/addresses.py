"""Which addresses ``browse`` may connect to: public ones only, checked after DNS resolution.

A model under evaluation chooses browse's URLs, on a machine that may sit next to internal services and a
cloud metadata endpoint. ``resolve`` looks a host up once and refuses it if ANY of its addresses is loopback,
private (RFC 1918), carrier-grade NAT shared space, link-local, unique-local IPv6, a cloud metadata endpoint
(169.254.169.254, fd00:ec2::254, 100.100.100.200), multicast, unspecified, reserved or otherwise not
globally routable -- IPv4-mapped and 6to4 IPv6 addresses are judged by the IPv4 address they carry. The caller
connects to the returned address itself (``mara_bench.harness.tools.web`` pins the connection to it), so a DNS answer that
changes between the check and the connection (DNS rebinding) cannot slip through. ``allow_private`` (the
``browse_allow_private`` setting, for local testing) skips the check but keeps the pinning.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
CLOUD_METADATA = frozenset(map(ipaddress.ip_address, ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")))
"""Metadata endpoints of AWS/GCP/Azure/OpenStack (IPv4), AWS (IPv6) and Alibaba Cloud."""
UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
SHARED_SPACE = ipaddress.IPv4Network("100.64.0.0/10")


class AddressRefused(Exception):
    """A host resolves to an address browse may not reach."""

    def __init__(self, host: str, address: str, kind: str):
        where = f"{address} is" if host.strip("[]") == address else f"{host} resolves to {address},"
        super().__init__(f"{where} a {kind} address")
        self.host, self.address, self.kind = host, address, kind


class UnresolvableHost(Exception):
    """DNS gave no address for a host."""


def address_kind(address: IPAddress) -> str | None:
    """The kind of a non-public address ("loopback", "private", ...), or ``None`` for a public one."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = address.ipv4_mapped or address.sixtofour
        if carried is not None:
            return address_kind(carried)
    checks = (
        ("cloud metadata", address in CLOUD_METADATA),
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("unique-local", isinstance(address, ipaddress.IPv6Address) and address in UNIQUE_LOCAL),
        ("private", address.is_private),
        ("shared (carrier-grade NAT)", address in SHARED_SPACE),
        ("reserved", address.is_reserved),
    )
    for kind, matches in checks:
        if matches:
            return kind
    return None if address.is_global else "non-public"


@dataclass(frozen=True)
class AddressPolicy:
    allow_private: bool = False
    """Allow every address (``browse_allow_private``, for local testing)."""

    async def resolve(self, host: str, port: int) -> str:
        """One address to connect to for ``host``, after checking every address it resolves to."""
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            addresses = await _lookup(host, port)
        if not self.allow_private:
            for address in addresses:
                kind = address_kind(address)
                if kind is not None:
                    raise AddressRefused(host, str(address), kind)
        return str(addresses[0])


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


async def _lookup(host: str, port: int) -> list[IPAddress]:
    try:
        answers = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:
        raise UnresolvableHost(f"cannot resolve {host} ({err})") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in answers))
    if not addresses:
        raise UnresolvableHost(f"cannot resolve {host} (no address)")
    return addresses
