"""The message layer: payload sizes, codec round trips and errors, traffic and rounds."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from privbandits.comm import (
    InMemoryNetwork,
    Message,
    MessageDecodeError,
    Party,
    ProtocolError,
    decode,
    encode,
    message,
)
from privbandits.comm.codec import Envelope, _scalars_json, decode_counted


@message("test.sample")
class Sample(Message):
    round: int
    label: str
    values: np.ndarray


@message("test.flag")
class Flag(Message):
    on: bool


def test_payload_bytes_counts_arrays_numbers_and_text():
    sample = Sample(3, "abc", np.zeros((4, 5)))
    assert sample.payload_bytes() == 4 * 5 * 8 + 8 + 3
    assert Flag(True).payload_bytes() == 1


def test_registering_a_kind_twice_is_refused():
    with pytest.raises(ValueError, match=r"^message kind 'test.flag' is already registered by Flag$"):

        @message("test.flag")
        class Other(Message):
            on: bool


def test_codec_round_trip_keeps_every_field():
    values = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    back = decode(encode(Envelope("a", "b", "round", Sample(7, "héllo", values))))
    assert (back.sender, back.receiver, back.phase) == ("a", "b", "round")
    assert isinstance(back.message, Sample)
    assert back.message.round == 7 and back.message.label == "héllo"
    np.testing.assert_array_equal(back.message.values, values)
    ints = decode(encode(Envelope("a", "b", "setup", Sample(0, "", np.arange(3, dtype=np.uint64))))).message.values
    assert ints.dtype == np.uint64 and ints.tolist() == [0, 1, 2]


def test_codec_arrays_start_aligned_and_a_bytearray_is_used_in_place():
    """The header is padded so the arrays start 8-aligned; from a transport's own bytearray they are views
    of it (no copy), writable; from bytes they are writable copies. Any byte order or layout goes out."""
    values = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    data = encode(Envelope("a", "b", "round", Sample(7, "héllo", values)))
    assert (4 + int.from_bytes(data[:4], "big")) % 8 == 0
    buffer = bytearray(data)
    viewed = decode(buffer).message.values
    assert viewed.base is not None and viewed.flags.writeable and viewed.flags.aligned
    buffer[-8:] = np.float64(-1.5).tobytes()  # the view sees its buffer
    assert viewed[-1, -1] == -1.5
    copied = decode(data).message.values
    assert copied.flags.writeable and copied.flags.owndata
    np.testing.assert_array_equal(copied, values)
    for odd in (values.astype(">f8"), values[:, ::2], np.asfortranarray(values)):
        back = decode(encode(Envelope("a", "b", "round", Sample(0, "", odd)))).message.values
        assert back.dtype == np.float64 and back.flags.c_contiguous
        np.testing.assert_array_equal(back, odd)


@pytest.mark.parametrize(
    "label", ["", "plain", 'a,"scalars":{"x":1},"arrays":[', 'quote " and \\ backslash', "héllo ☃", "\x00 nul", "}}"]
)
def test_a_header_with_scalars_is_the_whole_dump_and_decodes_through_its_cached_structure(label):
    """Messages of one kind on one route differ in their numbers, arrays and scalars only: the header is the
    cached rest, then the scalars' JSON (it ends the header); the decoder checks the rest once. The bytes are
    those of one JSON dump of the whole header, and strings that spell the markers round-trip (their quotes
    are escaped)."""
    values = np.arange(6, dtype=np.float64).reshape(2, 3)
    data = encode(Envelope("a", "b", "round", Sample(3, label, values)))
    length = int.from_bytes(data[:4], "big")
    header = {
        "sender": "a",
        "receiver": "b",
        "phase": "round",
        "kind": "test.sample",
        "numbers": [["round", "<i8"]],
        "arrays": [{"name": "values", "dtype": "<f8", "shape": [2, 3]}],
        "scalars": {"label": label},
    }
    assert data[4 : 4 + length].rstrip(b" ") == json.dumps(header, separators=(",", ":")).encode()
    assert data[4 + length : 4 + length + 8] == (3).to_bytes(8, "little")  # the number, as a word
    for round_ in (3, 4):
        back = decode(bytearray(encode(Envelope("a", "b", "round", Sample(round_, label, values))))).message
        assert (back.round, back.label) == (round_, label)
        np.testing.assert_array_equal(back.values, values)


@message("test.numbers")
class Numbers(Message):
    small: int
    large: int
    ratio: float
    flag: bool
    nothing: object


@pytest.mark.parametrize(
    ("small", "large", "ratio"),
    [
        (0, 0, 0.0),
        (-(2**63), 2**63 - 1, -0.0),
        (2**63 - 1, 2**63, float("nan")),
        (-1, -(2**63) - 1, float("-inf")),
        (np.int64(-7), np.uint64(2**64 - 1), np.float32(1.5)),
        (12, 10**30, 1e-310),
    ],
)
def test_numbers_round_trip_exactly_as_words_and_the_rest_as_json(small, large, ratio):
    """Ints in the int64 range and floats travel as 8-byte words, bit for bit (NaN, -0.0 and subnormals
    included); larger ints, booleans and None as JSON; numpy scalars as the Python numbers they hold."""
    sent = Numbers(small, large, ratio, True, None)
    data = encode(Envelope("a", "b", "round", sent))
    back = decode(data).message
    for name in ("small", "large", "ratio"):
        want = getattr(sent, name)
        want = want.item() if isinstance(want, np.generic) else want
        got = getattr(back, name)
        assert type(got) is type(want)
        if type(want) is float:
            assert struct.pack("<d", got) == struct.pack("<d", want)  # bit for bit
        else:
            assert got == want
    assert back.flag is True and back.nothing is None
    head = json.loads(data[4 : 4 + int.from_bytes(data[:4], "big")])
    words = [name for name, _ in head["numbers"]]
    assert "small" in words and "ratio" in words and ("large" in words) == (-(2**63) <= int(large) < 2**63)
    assert set(head["scalars"]) == {"flag", "nothing"} | ({"large"} - set(words))


@pytest.mark.parametrize(
    "sent",
    [
        Sample(3, "héllo", np.zeros((4, 5))),
        Sample(-1, "", np.zeros(0, dtype=np.uint8)),
        Flag(False),
        Numbers(1, 10**30, 0.5, True, None),
        Numbers(np.int64(2), np.uint64(2**64 - 1), np.float32(1.0), np.bool_(False), "text"),
    ],
)
def test_decoding_counts_the_payload_bytes_the_message_counts(sent):
    envelope, size = decode_counted(encode(Envelope("a", "b", "round", sent)))
    assert size == sent.payload_bytes() == envelope.message.payload_bytes()


def test_a_header_without_scalars_is_the_same_bytes_for_every_message_of_a_kind():
    """Numbers and arrays change, the header does not: a receiver parses and checks it once."""
    heads = set()
    for t in range(5):
        data = encode(Envelope("a", "b", "round", Numbers(t, 2 * t, t / 3, False, None)))
        heads.add(data[: 4 + int.from_bytes(data[:4], "big")])
    assert len(heads) == 1
    data = encode(Envelope("a", "b", "round", Sample(5, "x", np.ones(3))))
    assert encode(Envelope("a", "b", "round", Sample(6, "x", np.ones(3))))[: len(data) - 32] == data[: len(data) - 32]


def test_scalars_are_written_as_the_json_encoder_writes_them():
    scalars = {"a": -3, "b": 2.5, "c": 1e300, "d": 1e-7, "e": float("inf"), "f": float("nan"), "g": True,
               "h": None, "i": 'x"y', "é": 1, "j": 10**30, "k": -0.0}  # fmt: skip
    assert _scalars_json(scalars) == json.dumps(scalars, separators=(",", ":"))


def _reheader(data: bytes, old: bytes, new: bytes) -> bytes:
    """The message with ``old`` replaced by ``new`` in its JSON header, the header length kept right."""
    length = int.from_bytes(data[:4], "big")
    head = data[4 : 4 + length].replace(old, new)
    return len(head).to_bytes(4, "big") + head + data[4 + length :]


@pytest.mark.parametrize(
    ("mangle", "error"),
    [
        (lambda data: data[:2], "message too short: 2 bytes, need at least 4"),
        (lambda data: data[:10], r"truncated header: need \d+ bytes, got 10"),
        (lambda data: data[:-8], r"truncated array 'values': need 96 bytes at offset \d+"),
        (lambda data: data[:-100], r"truncated numbers: need 8 bytes at offset \d+"),
        (lambda data: _reheader(data, b'"<i8"]', b'"<i4"]'), r"bad number field \['round', '<i4'\]"),
        (lambda data: _reheader(data, b'["round"', b'[["round"]'), r"bad number field \[\['round'\], '<i8'\]"),
        (lambda data: data + b"xy", "2 unexpected trailing bytes after the arrays"),
        (lambda data: _reheader(data, b"[3,4]", b"[-3,4]"), r"array 'values' has an invalid shape \[-3, 4\]"),
        (lambda data: _reheader(data, b"[3,4]", b"[3,4.0]"), r"array 'values' has an invalid shape \[3, 4.0\]"),
        (lambda data: data.replace(b'"test.sample"', b'"test.nope!!"'), "bad message header: .*unknown message kind"),
        (
            lambda data: data.replace(b'"label"', b'"lobel"'),
            r"'test.sample' message fields do not match: missing \['label'\], unexpected \['lobel'\]",
        ),
    ],
)
def test_decoding_bad_bytes_says_what_is_wrong(mangle, error):
    data = encode(Envelope("a", "b", "round", Sample(1, "x", np.ones((3, 4)))))
    with pytest.raises(MessageDecodeError, match=error):
        decode(mangle(data))


def test_network_errors_name_the_parties_and_kinds():
    net = InMemoryNetwork()
    a, b = Party("a", net), Party("b", net)
    with pytest.raises(ValueError, match="^a party named 'a' is already on this network$"):
        Party("a", net)
    with pytest.raises(ProtocolError, match="^'a' sent a 'test.flag' message outside any phase$"):
        a.send("b", Flag(True))
    with net.phase("round"):
        with pytest.raises(ProtocolError, match="^'a' sent a 'test.flag' message to unknown party 'c'$"):
            a.send("c", Flag(True))
        with pytest.raises(ProtocolError, match="^'b' expected a 'test.flag' message from 'a', but none is waiting$"):
            b.receive("test.flag", "a")
        with pytest.raises(ProtocolError, match="^phase 'inner' opened inside phase 'round'$"):
            with net.phase("inner"):
                pass


def test_rounds_are_lamport_depths_and_parallel_messages_share_a_round():
    net = InMemoryNetwork()
    hub, left, right = Party("hub", net), Party("left", net), Party("right", net)
    for _ in range(3):
        with net.phase("round"):
            hub.send("left", Flag(True))  # depth 1
            hub.send("right", Flag(True))  # depth 1: parallel with the first
            for spoke in (left, right):
                spoke.receive("test.flag", "hub")
                spoke.send("hub", Sample(0, "", np.zeros(5)))  # depth 2
            hub.receive("test.sample", "left")
            hub.receive("test.sample", "right")
    traffic = net.traffic
    assert traffic.segments["round"] == 3 and traffic.rounds["round"] == 6
    down, up = traffic.total("round", sender="hub"), traffic.total("round", receiver="hub")
    assert (down.messages, down.bytes, down.rounds) == (6, 6, 6)
    assert (up.messages, up.bytes, up.rounds) == (6, 6 * (40 + 8), 6)
    assert traffic.per_segment("round", receiver="hub") == 48 * 2
    assert traffic.rows()[0] == ("round", "hub", "left", 3, 3, 3)


def test_messages_wait_in_order_and_can_be_picked_by_kind_and_sender():
    net = InMemoryNetwork(record=True, serialize=True)
    a, b, c = Party("a", net), Party("b", net), Party("c", net)
    with net.phase("setup"):
        a.send("c", Sample(1, "first", np.zeros(1)))
        b.send("c", Flag(False))
        a.send("c", Sample(2, "second", np.zeros(1)))
        assert c.receive("test.flag").on is False
        assert c.receive("test.sample", "a").label == "first"
        assert c.receive("test.sample").label == "second"
    assert [e.message.kind for e in net.transcript] == ["test.sample", "test.flag", "test.sample"]
    assert net.traffic.rounds["setup"] == 1


def test_receiving_by_message_class_is_receiving_by_its_kind():
    """``receive(Sample)`` waits for kind ``Sample.kind`` (typed as ``Sample`` for a checker), by party or network."""
    net = InMemoryNetwork(serialize=True)
    a, c = Party("a", net), Party("c", net)
    with net.phase("setup"):
        a.send("c", Flag(True))
        a.send("c", Sample(1, "first", np.zeros(1)))
        a.send("c", Sample(2, "second", np.zeros(1)))
        first = c.receive(Sample, "a")
        assert isinstance(first, Sample) and first.label == "first"
        assert net.receive("c", Sample).label == "second"
        assert c.receive(Flag).on is True
        with pytest.raises(ProtocolError, match=r"^'c' expected a 'test.flag' message, but none is waiting$"):
            c.receive(Flag)
