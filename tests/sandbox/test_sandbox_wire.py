"""The plain-data codec: what crosses from the program's process to the trusted judge."""

from __future__ import annotations

import collections
import math

import pytest

from sandbox.wire import (
    FrameReader,
    ProtocolError,
    UnsupportedValue,
    decode_value,
    encode_value,
    pack_frame,
)

VALUES = [
    None, True, False, 0, -7, 2**200, -(2**70), 1.5, -0.0, math.inf, -math.inf, "héllo",
    b"\x00\xff", bytearray(b"ab"), [1, [2, 3]], (1, (2,)), {"a": [1], (1, 2): {3}},
    {1, 2}, frozenset({"x"}), 1 + 2j, range(1, 10, 3), [],
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_round_trip_keeps_value_and_exact_type(value: object) -> None:
    back = decode_value(encode_value(value))
    assert back == value
    assert type(back) is type(value)


def test_nan_round_trips() -> None:
    assert math.isnan(decode_value(encode_value(float("nan"))))


def test_subclasses_travel_as_their_builtin_base() -> None:
    Point = collections.namedtuple("Point", "x y")
    back = decode_value(encode_value([collections.Counter("aab"), Point(1, 2)]))
    assert back == [{"a": 2, "b": 1}, (1, 2)]
    assert type(back[0]) is dict and type(back[1]) is tuple


def test_iterators_are_materialised() -> None:
    back = decode_value(encode_value(x * 2 for x in range(3)))
    assert list(back) == [0, 2, 4]


def test_objects_are_refused() -> None:
    class AlwaysEqual:
        def __eq__(self, other: object) -> bool:
            return True

    with pytest.raises(UnsupportedValue, match="non-data object of type AlwaysEqual"):
        encode_value(AlwaysEqual())


def test_cycles_and_depth_are_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(UnsupportedValue):
        encode_value(loop)


@pytest.mark.parametrize("forged", [{"x": 1}, {"d": [[[1], 2]]}, {"b": "%%%"}, {"t": 5},
                                    {"i": 12}, {"c": ["a", 1]}, {"s": [[1]]}])
def test_malformed_values_are_protocol_errors(forged: object) -> None:
    with pytest.raises(ProtocolError):
        decode_value(forged)


def test_frames_are_bounded() -> None:
    reader = FrameReader(max_frame=10)
    reader.feed(b"\xff\xff\xff\xff")
    with pytest.raises(ProtocolError):
        list(reader.frames())
    ok = FrameReader()
    data = pack_frame({"a": 1}) + pack_frame([2])
    ok.feed(data[:5])
    assert list(ok.frames()) == []
    ok.feed(data[5:])
    assert list(ok.frames()) == [{"a": 1}, [2]]
