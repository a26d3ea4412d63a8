"""The selector a party keeps across its waits for any peer (comm.tls.link.LinkSelector): it follows the links it is
given, one wait to the next, even when a link's socket is replaced by one with the same descriptor number."""

import socket
from types import SimpleNamespace

from privbandits.comm.tls.link import LinkSelector


def link(name):
    mine, theirs = socket.socketpair()
    return SimpleNamespace(peer=name, sock=mine, other=theirs)


def test_it_reports_the_links_with_data_and_follows_the_links_it_is_given():
    selector = LinkSelector()
    a, b = link("a"), link("b")
    try:
        assert selector.ready([a, b], 0.0) == []
        b.other.send(b"x")
        assert selector.ready([a, b], 1.0) == [b]
        assert selector.ready([a], 0.0) == []  # b is no longer waited on: its data does not wake the wait
        a.other.send(b"y")
        assert selector.ready([a], 1.0) == [a]
        assert selector.ready([a, b], 1.0) in ([a, b], [b, a])  # b registered again
        # a replaced (a rejoin) by a socket with the closed one's descriptor number (the lowest free one)
        number = a.sock.fileno()
        a.sock.close()
        a.other.close()
        a2 = link("a")
        assert a2.sock.fileno() == number  # the case under test
        assert selector.ready([a2, b], 1.0) == [b]
        a2.other.send(b"z")
        assert set(map(id, selector.ready([a2, b], 1.0))) == {id(a2), id(b)}
        a = a2
    finally:
        selector.close()
        for end in (a, b):
            end.sock.close()
            end.other.close()
