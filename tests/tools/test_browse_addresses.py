"""browse reaches public addresses only: loopback, private, link-local, unique-local, multicast and cloud metadata
addresses are refused as URLs, after DNS resolution and on every redirect, before anything is sent; the
connection goes to the address that was checked (a second DNS answer is never used); ``browse_allow_private``
lifts the check for local testing; and a plain page's 401 says nothing about API keys.

DNS is replaced by a table (``dns``) through ``socket.getaddrinfo``, which asyncio's resolver calls. The fake
web server listens on 127.0.0.1; tests that need it to pass as public let ``address_kind`` call that one
address public, so every other address keeps its real verdict."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import ToolConfigError, ToolSettings, addresses, build_toolbox
from mara_bench.harness.tools.addresses import address_kind

PUBLIC_ONLY = "; only public addresses can be fetched"


def toolbox(**settings):
    return build_toolbox(["browse"], **{"http_backoff": 0, "http_attempts": 1, "http_timeout": 5, **settings})


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("2002:7f00:1::", "loopback"),  # 6to4 carrying 127.0.0.1
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("::ffff:192.168.1.1", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("fd12:3456::1", "unique-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_kinds(address, kind):
    assert address_kind(ipaddress.ip_address(address)) == kind


@pytest.fixture
def dns(monkeypatch):
    """``dns.answers[name] = [[first answer's addresses], [next answer's], ...]`` (the last one repeats);
    ``dns.asked`` lists the names looked up. Other names (and IP literals) go to the real resolver."""

    class Table:
        answers: dict[str, list[list[str]]] = {}
        asked: list[str] = []

    real = socket.getaddrinfo

    def lookup(host, port, *args, **kwargs):
        if host not in Table.answers:
            return real(host, port, *args, **kwargs)
        Table.asked.append(host)
        replies = Table.answers[host]
        found = replies.pop(0) if len(replies) > 1 else replies[0]
        return [
            (socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
            for ip in found
        ]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return Table


@pytest.fixture
def server_counts_as_public(monkeypatch):
    real = addresses.address_kind
    monkeypatch.setattr(
        addresses, "address_kind", lambda address: None if str(address) == "127.0.0.1" else real(address)
    )


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:{port}/page", "127.0.0.1 is a loopback address"),
        ("http://[::1]:{port}/page", "::1 is a loopback address"),
        ("http://localhost:{port}/page", "localhost resolves to 127.0.0.1, a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
        ("http://[fd00:ec2::254]/latest/meta-data/", "fd00:ec2::254 is a cloud metadata address"),
        (
            "http://metadata.test/computeMetadata/v1/",
            "metadata.test resolves to 169.254.169.254, a cloud metadata address",
        ),
        ("http://intranet.test/", "intranet.test resolves to 10.0.0.5, a private address"),
        ("http://mixed.test/", "mixed.test resolves to 10.0.0.5, a private address"),
        ("https://router.test/", "router.test resolves to fd12::1, a unique-local address"),
        ("http://[ff02::1]/", "ff02::1 is a multicast address"),
        ("http://0.0.0.0:{port}/page", "0.0.0.0 is a unspecified address"),
    ],
)
async def test_non_public_addresses_are_refused_before_anything_is_sent(web, dns, url, reason):
    dns.answers.update(
        {
            "metadata.test": [["169.254.169.254"]],
            "intranet.test": [["10.0.0.5"]],
            "mixed.test": [["8.8.8.8", "10.0.0.5"]],  # one private answer is enough to refuse
            "router.test": [["fd12::1"]],
        }
    )
    web.route("/page", web.reply(body="internal secrets", content_type="text/plain"))
    url = url.format(port=web.server.server_address[1])
    with pytest.raises(ToolError) as caught:
        await toolbox().call("browse", url=url)
    assert str(caught.value) == f"browse: will not fetch {url}: {reason}{PUBLIC_ONLY}"
    assert web.requests == []


@pytest.mark.parametrize(
    ("location", "refusal"),
    [
        (
            "http://127.0.0.2:{port}/admin",
            "http://127.0.0.2:{port}/admin: 127.0.0.2 is a loopback address" + PUBLIC_ONLY,
        ),
        (
            "http://169.254.169.254/latest/meta-data/iam/",
            "http://169.254.169.254/latest/meta-data/iam/: 169.254.169.254 is a cloud metadata address"
            + PUBLIC_ONLY,
        ),
        (
            "http://metadata.test/",
            "http://metadata.test/: metadata.test resolves to 169.254.169.254, a cloud metadata address"
            + PUBLIC_ONLY,
        ),
        ("file:///etc/passwd", "file:/etc/passwd: only http(s) URLs can be fetched"),
    ],
)
async def test_every_redirect_hop_is_checked(web, dns, server_counts_as_public, location, refusal):
    dns.answers["metadata.test"] = [["169.254.169.254"]]
    location, refusal = (text.format(port=web.server.server_address[1]) for text in (location, refusal))
    web.route("/jump", web.reply(302, "", "text/plain", headers={"Location": location}))
    with pytest.raises(ToolError) as caught:
        await toolbox().call("browse", url=f"{web.url}/jump")
    assert str(caught.value) == f"browse: will not fetch {refusal}"
    assert [seen.path for seen in web.requests] == ["/jump"]


async def test_the_connection_goes_to_the_checked_address_whatever_dns_answers_next(
    web, dns, server_counts_as_public
):
    # DNS rebinding: the first answer passes the check, every later one points inside. The request must go to
    # the first answer (the fake server), with the name kept in the Host header, and DNS must be asked once.
    port = web.server.server_address[1]
    dns.answers["rebind.test"] = [["127.0.0.1"], ["10.0.0.5"]]
    web.route("/page", web.reply(body="public page", content_type="text/plain"))
    output = await toolbox().call("browse", url=f"http://rebind.test:{port}/page")
    assert output == f"URL: http://rebind.test:{port}/page\n\npublic page"
    assert dns.asked == ["rebind.test"]
    [seen] = web.requests
    assert seen.headers["Host"] == f"rebind.test:{port}"


async def test_redirects_within_public_addresses_are_followed_and_reported_by_name(
    web, dns, server_counts_as_public
):
    port = web.server.server_address[1]
    dns.answers.update({"a.test": [["127.0.0.1"]], "b.test": [["127.0.0.1"]]})
    web.route("/start", web.reply(301, "", "text/plain", headers={"Location": f"http://b.test:{port}/next"}))
    web.route("/next", web.reply(302, "", "text/plain", headers={"Location": "/end"}))
    web.route("/end", web.reply(body="arrived", content_type="text/plain"))
    output = await toolbox().call("browse", url=f"http://a.test:{port}/start")
    assert output == f"URL: http://b.test:{port}/end\n\narrived"
    assert [(seen.path, seen.headers["Host"]) for seen in web.requests] == [
        ("/start", f"a.test:{port}"),
        ("/next", f"b.test:{port}"),
        ("/end", f"b.test:{port}"),
    ]


async def test_a_redirect_loop_is_a_tool_error(web, server_counts_as_public):
    web.route("/loop", web.reply(302, "", "text/plain", headers={"Location": "/loop"}))
    with pytest.raises(
        ToolError, match=r"^browse: cannot reach .*/loop \(TooManyRedirects: more than 10 redirects\)$"
    ):
        await toolbox().call("browse", url=f"{web.url}/loop")
    assert len(web.requests) == 11


async def test_browse_allow_private_lifts_the_check_for_local_testing(web):
    web.route("/page", web.reply(body="local page", content_type="text/plain"))
    output = await toolbox(browse_allow_private="true").call("browse", url=f"{web.url}/page")
    assert output == f"URL: {web.url}/page\n\nlocal page"


def test_browse_allow_private_takes_true_or_false():
    assert ToolSettings.from_options({"browse_allow_private": "True"}).browse_allow_private is True
    assert ToolSettings.from_options({"browse_allow_private": "false"}).browse_allow_private is False
    assert ToolSettings().browse_allow_private is False
    with pytest.raises(
        ToolConfigError, match=r"tool settings: browse_allow_private: must be true or false, got 'maybe'"
    ):
        ToolSettings.from_options({"browse_allow_private": "maybe"})


@pytest.mark.parametrize("status", [401, 403])
async def test_a_plain_page_that_needs_a_login_says_nothing_about_api_keys(web, status):
    web.route("/members", web.reply(status, "log in first", "text/plain"))
    with pytest.raises(ToolError) as caught:
        await toolbox(browse_allow_private=True).call("browse", url=f"{web.url}/members")
    reason = {401: "Unauthorized", 403: "Forbidden"}[status]
    assert str(caught.value) == f"browse: HTTP {status} {reason} from {web.url}/members"


async def test_https_to_a_pinned_address_verifies_the_certificate_for_the_name(
    tls_web, dns, server_counts_as_public
):
    # The certificate names pinned.test only: the TLS server name and the check must use the name, not the IP
    # address the connection is pinned to.
    port = tls_web.server.server_address[1]
    dns.answers.update({"pinned.test": [["127.0.0.1"]], "impostor.test": [["127.0.0.1"]]})
    tls_web.route("/page", tls_web.reply(body="secure page", content_type="text/plain"))
    output = await toolbox().call("browse", url=f"https://pinned.test:{port}/page")
    assert output == f"URL: https://pinned.test:{port}/page\n\nsecure page"
    assert tls_web.requests[0].headers["Host"] == f"pinned.test:{port}"
    with pytest.raises(
        ToolError,
        match=r"^browse: cannot reach https://impostor\.test:\d+/page \(ConnectError: .*certificate verify failed",
    ):
        await toolbox().call("browse", url=f"https://impostor.test:{port}/page")
    assert len(tls_web.requests) == 1
